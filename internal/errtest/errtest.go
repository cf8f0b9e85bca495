// Package errtest holds the checks of gatehouse errors that the tests of
// several packages make.
package errtest

import (
	"errors"
	"strings"
	"testing"

	"gatehouse"
)

// WantField fails unless err is an EINVALID *gatehouse.Error naming field
// (or is nil when field is "").
func WantField(t *testing.T, what string, err error, field string) {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Errorf("%s: unexpected error %v", what, err)
		}
		return
	}
	var e *gatehouse.Error
	if !errors.As(err, &e) {
		t.Errorf("%s: error = %v, want an EINVALID error on %s", what, err, field)
		return
	}
	if e.Code != gatehouse.EINVALID || e.Metadata["field"] != field || !strings.HasPrefix(e.Message, field+": ") {
		t.Errorf("%s: error = code %q field %v message %q; want EINVALID on %s", what, e.Code, e.Metadata["field"], e.Message, field)
	}
}
