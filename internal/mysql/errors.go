package mysql

import "fmt"

// SQLError is a MySQL error as an ERR packet carries it: code, SQLSTATE and message. It is the one
// error type sluice uses for anything a client should see as a server error; find it with errors.As.
type SQLError struct {
	Code    uint16
	State   string // five characters
	Message string
}

func (e *SQLError) Error() string {
	return fmt.Sprintf("ERROR %d (%s): %s", e.Code, e.State, e.Message)
}

// Error codes sluice itself sends, or reads in the servers' errors (the servers' own errors are
// relayed as they are).
const (
	ErrConCount                 = 1040 // Too many connections
	ErrOutOfResources           = 1041 // Out of memory
	ErrHandshake                = 1043 // Bad handshake
	ErrHostIsBlocked            = 1129 // Host '...' is blocked (sluice: too many authentication failures)
	ErrHostNotPrivileged        = 1130 // Host '...' is not allowed to connect
	ErrAccountLocked            = 4151 // Access denied, this account is locked
	ErrAccessDenied             = 1045
	ErrUnknownCom               = 1047
	ErrServerShutdown           = 1053
	ErrNoSuchThread             = 1094 // Unknown thread id
	ErrUnknown                  = 1105
	ErrAbortingConnection       = 1152 // the server closes a connection it aborted
	ErrNetReadInterrupted       = 1159 // Got timeout reading communication packets
	ErrNetPacketTooLarge        = 1153
	ErrLockDeadlock             = 1213 // the transaction was rolled back; retry it (40001)
	ErrUnknownStmtHandler       = 1243
	ErrOptionPreventsStm        = 1290 // --read-only style refusals
	ErrStmtHasNoOpenCursor      = 1421
	ErrMaxPreparedStmtCount     = 1461
	ErrNeedReprepare            = 1615
	ErrMalformedPacket          = 1835
	ErrConnectionKilled         = 1927 // MariaDB: the connection was killed
	ErrSecureTransportRequired  = 3159
	ErrClientInteractionTimeout = 4031 // MySQL: disconnected for inactivity
)

// IsClientCode reports whether code is in a range the client libraries keep for errors they
// raise themselves (2000-2999: CR_*, such as 2003 "Can't connect" and 2013 "Lost connection";
// 5000-5999: libmariadb's CER_*). A server never sends one, and libmariadb (the mariadb CLI,
// and every stack built on it) takes an ERR packet carrying one for a forgery and reports
// 2027 "Received malformed packet" instead of its message. So sluice never writes one:
// AppendERR enforces it.
func IsClientCode(code uint16) bool {
	return code >= 2000 && code <= 2999 || code >= 5000 && code <= 5999
}

// NewError returns an SQLError; the message is formatted with fmt.Sprintf when args are given.
func NewError(code uint16, state, format string, args ...any) *SQLError {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	return &SQLError{Code: code, State: state, Message: msg}
}

// AccessDenied words error 1045 exactly as the server does.
func AccessDenied(user, host string, usedPassword bool) *SQLError {
	yes := "NO"
	if usedPassword {
		yes = "YES"
	}
	return NewError(ErrAccessDenied, "28000", "Access denied for user '%s'@'%s' (using password: %s)", user, host, yes)
}
