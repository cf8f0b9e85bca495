package gatehouse_test

import (
	"strings"
	"testing"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
)

// TestCheckWorkspaceDeletion: the rule both engines apply to the counts
// they read before deleting a workspace.
func TestCheckWorkspaceDeletion(t *testing.T) {
	plain, def := &gatehouse.Workspace{ID: "w1"}, &gatehouse.Workspace{ID: "w0", IsDefault: true}
	for _, c := range []struct {
		name           string
		w              *gatehouse.Workspace
		confirmDefault bool
		activeKeys     int
		want           *gatehouse.Error // nil: may be deleted
	}{
		{"empty", plain, false, 0, nil},
		{"confirmation ignored for another workspace", plain, true, 0, nil},
		{"active keys", plain, false, 3, &gatehouse.Error{Code: gatehouse.EINVALID,
			Message:  "the workspace holds 3 active API keys; disable or delete them first",
			Metadata: map[string]any{"active_key_count": 3}}},
		{"default unconfirmed", def, false, 0, &gatehouse.Error{Code: gatehouse.EINVALID,
			Message: "this is the default workspace; pass confirm_default_workspace_deletion=true to delete it"}},
		{"default unconfirmed with keys: the confirmation is asked first", def, false, 2, &gatehouse.Error{Code: gatehouse.EINVALID,
			Message: "this is the default workspace; pass confirm_default_workspace_deletion=true to delete it"}},
		{"default confirmed", def, true, 0, nil},
		{"default confirmed with keys", def, true, 1, &gatehouse.Error{Code: gatehouse.EINVALID,
			Message:  "the workspace holds 1 active API keys; disable or delete them first",
			Metadata: map[string]any{"active_key_count": 1}}},
	} {
		err := gatehouse.CheckWorkspaceDeletion(c.w, c.confirmDefault, c.activeKeys)
		var got *gatehouse.Error
		if err != nil {
			got = err.(*gatehouse.Error)
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestValidateUserID checks the characters a user id may hold: any graphic
// character of any script, but no space, control or format character of
// any kind (a user id is shown in the console and the audit log, where a
// bidirectional control would make it read as another).
func TestValidateUserID(t *testing.T) {
	for _, id := range []string{"user_abc", "ada@example.com", "Zoë-42", "用户", "a.b:c/d"} {
		if err := gatehouse.ValidateUserID("id", id); err != nil {
			t.Errorf("%q refused: %v", id, err)
		}
	}
	for _, id := range []string{"a b", "a\tb", "a\u0007b", "a\u007fb", "u\u0085x", "u\u00a0x", "x\u2028", "admin\u202e",
		"a\u2066b", "a\u200bb", "a\u200db", "a\ufeffb", "a\u3000b", "a\ue000b"} {
		err := gatehouse.ValidateUserID("id", id)
		if err == nil || !strings.Contains(err.Error(), "must not contain spaces, control or format characters") {
			t.Errorf("%q: error %v, want a refusal naming the character", id, err)
		}
	}
	if err := gatehouse.ValidateUserID("id", " "); err == nil {
		t.Error("a blank id was accepted")
	}
}
