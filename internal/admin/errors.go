package admin

import (
	"fmt"
	"net/http"
)

// Kind is what kind of refusal an Error is. The control surface (the app, implementing Control)
// says which; httpStatus, here, is the one place that turns it into an HTTP status. A Kind is
// itself an error, so a caller tests an answer with errors.Is(err, admin.NotFound).
type Kind uint8

const (
	Internal     Kind = iota // a failure the request could not help ("internal")
	BadRequest               // the request itself is malformed: no setting named, not a number ("bad_request")
	Invalid                  // a value the configuration's validation refuses ("invalid")
	NotFound                 // no such endpoint, node, session or resource ("not_found")
	Conflict                 // the state refuses the change: a name taken, a node in service, the file changed on disk ("conflict")
	Unreadable               // the configuration file cannot be read ("unreadable")
	Unauthorized             // the admin token is missing or wrong ("unauthorized")
	Forbidden                // the request may not be made at all: cross-origin, not to loopback ("forbidden")
	TooLarge                 // the body is past maxBody ("bad_request")
	NotJSON                  // the body is not declared JSON ("bad_request")
	Unavailable              // the store the change must go through is not reachable ("unavailable")
)

// Error returns the kind's code word, as the API's error object carries it.
func (k Kind) Error() string {
	switch k {
	case BadRequest, TooLarge, NotJSON:
		return "bad_request"
	case Invalid:
		return "invalid"
	case NotFound:
		return "not_found"
	case Conflict:
		return "conflict"
	case Unreadable:
		return "unreadable"
	case Unauthorized:
		return "unauthorized"
	case Forbidden:
		return "forbidden"
	case Unavailable:
		return "unavailable"
	}
	return "internal"
}

// httpStatus is the HTTP status an error of kind k is answered with.
func httpStatus(k Kind) int {
	switch k {
	case BadRequest, Invalid:
		return http.StatusBadRequest
	case NotFound:
		return http.StatusNotFound
	case Conflict:
		return http.StatusConflict
	case Unauthorized:
		return http.StatusUnauthorized
	case Forbidden:
		return http.StatusForbidden
	case TooLarge:
		return http.StatusRequestEntityTooLarge
	case NotJSON:
		return http.StatusUnsupportedMediaType
	case Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError // Internal, Unreadable
}

// Error is an API error: Kind says what went wrong (and so the HTTP status); Code is the kind's
// word (bad_request, not_found, unauthorized, invalid, conflict, ...); Field the setting at
// fault, when one is. errors.Is(err, k) reports whether err is an Error of kind k.
type Error struct {
	Kind    Kind   `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Message
	}
	return e.Message
}

// Is makes errors.Is(err, admin.NotFound) (any Kind) true for an Error of that kind.
func (e *Error) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && k == e.Kind
}

// Errorf makes an Error of kind k about field ("" for none).
func Errorf(k Kind, field, format string, args ...any) *Error {
	return &Error{Kind: k, Code: k.Error(), Field: field, Message: fmt.Sprintf(format, args...)}
}
