package gatehouse_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"gatehouse"
)

// driverError stands for a database driver's typed error.
type driverError struct{ code string }

func (e *driverError) Error() string { return "driver says " + e.code }

// TestErrorKeepsItsCause: an *Error made from a driver's error keeps it for
// errors.Is and errors.As and for the log (Error), while what the client
// reads (ErrorMessage, ErrorCode) is unchanged.
func TestErrorKeepsItsCause(t *testing.T) {
	cause := &driverError{code: "57P01"}
	err := error(gatehouse.WrapError(cause, gatehouse.EUNAVAILABLE, "the database is unavailable; retry shortly"))
	wrapped := fmt.Errorf("find key: %w", err) // as a caller may wrap it again

	for name, e := range map[string]error{"the error": err, "the error wrapped": wrapped} {
		var de *driverError
		if !errors.As(e, &de) || de != cause {
			t.Errorf("%s: errors.As found %v, want the driver's error", name, de)
		}
		if !errors.Is(e, cause) {
			t.Errorf("%s: errors.Is(err, cause) is false", name)
		}
		var ge *gatehouse.Error
		if !errors.As(e, &ge) || ge.Code != gatehouse.EUNAVAILABLE {
			t.Errorf("%s: errors.As found %+v, want the *gatehouse.Error", name, ge)
		}
		if got := gatehouse.ErrorCode(e); got != gatehouse.EUNAVAILABLE {
			t.Errorf("%s: ErrorCode %q", name, got)
		}
		if got := gatehouse.ErrorMessage(e); got != "the database is unavailable; retry shortly" {
			t.Errorf("%s: ErrorMessage %q: the client must not read the cause", name, got)
		}
		if !strings.Contains(e.Error(), "driver says 57P01") {
			t.Errorf("%s: Error() = %q, want the cause for the log", name, e.Error())
		}
	}
	if got := errors.Unwrap(err); got != cause {
		t.Errorf("Unwrap = %v, want the cause", got)
	}
}

// TestErrorWithoutCause: errors made without a cause unwrap to nothing and
// read as before.
func TestErrorWithoutCause(t *testing.T) {
	err := gatehouse.Errorf(gatehouse.EINVALID, "name: is required")
	if errors.Unwrap(err) != nil {
		t.Errorf("Unwrap = %v, want nil", errors.Unwrap(err))
	}
	if want := "gatehouse error: code=invalid message=name: is required"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
	if errors.Is(err, context.Canceled) {
		t.Error("an error without a cause matches context.Canceled")
	}
}

// TestErrorCauseIsTheStandardSentinel: causes that are sentinel errors
// (a cancelled context, a missing file) are found by errors.Is through the
// *Error, so callers can tell a client that left from a database that did.
func TestErrorCauseIsTheStandardSentinel(t *testing.T) {
	for _, sentinel := range []error{context.Canceled, context.DeadlineExceeded, fs.ErrNotExist} {
		err := gatehouse.WrapError(fmt.Errorf("query: %w", sentinel), gatehouse.EUNAVAILABLE, "unavailable")
		if !errors.Is(err, sentinel) {
			t.Errorf("errors.Is(%v, %v) is false", err, sentinel)
		}
	}
}
