package gatehouse

import (
	"errors"
	"fmt"
)

// Error codes. httpapi alone maps them to HTTP statuses.
const (
	EINVALID      = "invalid"      // 400: the request is malformed or breaks a rule
	EUNAUTHORIZED = "unauthorized" // 401: no usable credential
	EFORBIDDEN    = "forbidden"    // 403: the credential may not do this
	ENOTFOUND     = "not_found"    // 404: no such resource in the caller's organization
	ECONFLICT     = "conflict"     // 409: the state of a resource forbids the change
	ETOOLARGE     = "too_large"    // 413: the request body is too large
	EUNSUPPORTED  = "unsupported"  // 415: the request body is not JSON
	ERATELIMIT    = "rate_limited" // 429: too many requests
	ETIMEOUT      = "timeout"      // 408: the work asked for took longer than it may
	EINTERNAL     = "internal"     // 500: a fault of ours; details go to the log only
	EUNAVAILABLE  = "unavailable"  // 503: a dependency is down
)

// Error is the one error type the domain returns to callers. Message is shown
// to the client verbatim, so it never holds internal detail; Metadata carries
// structured detail such as the offending field or ids. Err is the cause
// (what the database or another dependency said): it goes to the log with
// the request id and never to the client, so that a 503 in the log says why.
type Error struct {
	Code     string
	Message  string
	Metadata map[string]any
	Err      error
}

// Error implements the error interface. It includes the cause, so it is for
// logs; clients see Message (see ErrorMessage).
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("gatehouse error: code=%s message=%s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("gatehouse error: code=%s message=%s", e.Code, e.Message)
}

// Unwrap returns the cause, so that errors.Is and errors.As see through to
// the driver's error.
func (e *Error) Unwrap() error { return e.Err }

// WrapError returns an *Error with the given code and message whose cause
// is err: err is logged, the message is what the client reads.
func WrapError(err error, code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldError returns an EINVALID error naming the field, in the form
// "field: problem", with the field in its metadata.
func FieldError(field, format string, args ...any) *Error {
	return &Error{
		Code:     EINVALID,
		Message:  field + ": " + fmt.Sprintf(format, args...),
		Metadata: map[string]any{"field": field},
	}
}

// NotFound returns an ENOTFOUND error for the named kind of resource.
func NotFound(kind, id string) *Error {
	return &Error{Code: ENOTFOUND, Message: kind + " not found", Metadata: map[string]any{"id": id}}
}

// WithMetadata returns e with key set to value in its metadata.
func (e *Error) WithMetadata(key string, value any) *Error {
	if e.Metadata == nil {
		e.Metadata = map[string]any{}
	}
	e.Metadata[key] = value
	return e
}

// ErrorCode returns the code of err: "" for nil, the code of an *Error in
// its chain, and EINTERNAL for anything else.
func ErrorCode(err error) string {
	if err == nil {
		return "" // before any *Error variable: errors.As would put one on the heap
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of err: the message of an
// *Error in its chain, else "internal error".
func ErrorMessage(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Message
	default:
		return "internal error"
	}
}

// ListIDs lists ids for a message, shortened when there are many.
func ListIDs(ids []string) string {
	const show = 10
	s := ""
	for i, id := range ids {
		if i == show {
			return s + ", …"
		}
		if i > 0 {
			s += ", "
		}
		s += id
	}
	return s
}
