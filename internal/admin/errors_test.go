package admin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestErrorKinds: each kind is answered with its HTTP status and code word (the API's answers
// before the kinds: 400 invalid, 404 not_found, 409 conflict, 500 unreadable, ...), also when
// the Error comes wrapped; an error that is not an Error is a 500 internal.
func TestErrorKinds(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		code   string
		field  string
	}{
		{Errorf(Internal, "", "boom"), http.StatusInternalServerError, "internal", ""},
		{Errorf(BadRequest, "id", "not a number"), http.StatusBadRequest, "bad_request", "id"},
		{Errorf(Invalid, "balance", "unknown policy"), http.StatusBadRequest, "invalid", "balance"},
		{Errorf(NotFound, "", "no endpoint"), http.StatusNotFound, "not_found", ""},
		{Errorf(Conflict, "name", "taken"), http.StatusConflict, "conflict", "name"},
		{Errorf(Unreadable, "", "reading the file"), http.StatusInternalServerError, "unreadable", ""},
		{Errorf(Unauthorized, "", "token"), http.StatusUnauthorized, "unauthorized", ""},
		{Errorf(Forbidden, "", "cross-origin"), http.StatusForbidden, "forbidden", ""},
		{Errorf(TooLarge, "", "too large"), http.StatusRequestEntityTooLarge, "bad_request", ""},
		{Errorf(NotJSON, "", "not JSON"), http.StatusUnsupportedMediaType, "bad_request", ""},
		{fmt.Errorf("applying: %w", Errorf(Conflict, "listen", "in use")), http.StatusConflict, "conflict", "listen"},
		{errors.New("plain"), http.StatusInternalServerError, "internal", ""},
	} {
		rec := httptest.NewRecorder()
		writeError(rec, c.err)
		var body struct {
			Error struct {
				Code, Message, Field string
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%v: %v", c.err, err)
		}
		if rec.Code != c.status || body.Error.Code != c.code || body.Error.Field != c.field {
			t.Errorf("%v: %d %q field %q, want %d %q field %q", c.err, rec.Code, body.Error.Code, body.Error.Field, c.status, c.code, c.field)
		}
	}
}

func TestErrorIsKind(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", Errorf(NotFound, "", "no node is named %q", "x"))
	if !errors.Is(err, NotFound) {
		t.Fatal("errors.Is(err, NotFound) = false for a wrapped not-found Error")
	}
	if errors.Is(err, Conflict) {
		t.Fatal("errors.Is(err, Conflict) = true for a not-found Error")
	}
	var e *Error
	if !errors.As(err, &e) || e.Kind != NotFound || e.Message != `no node is named "x"` {
		t.Fatalf("errors.As: %#v", e)
	}
}
