package gatehouse_test

import (
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
