package gatehouse_test

import (
	"slices"
	"testing"

	"gatehouse"
)

func TestChangedFields(t *testing.T) {
	for _, tc := range []struct {
		update any
		want   []string
	}{
		{gatehouse.KeyUpdate{}, []string{}},
		{gatehouse.KeyUpdate{Name: gatehouse.Val("x"), Limit: gatehouse.Null[gatehouse.Money]()}, []string{"name", "limit"}},
		{&gatehouse.WorkspaceUpdate{Slug: gatehouse.Val("s")}, []string{"slug"}},
		{gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{Name: gatehouse.Val("g")}, WorkspaceID: "w"}, []string{"name"}},
		{gatehouse.DestinationUpdate{Config: &gatehouse.ConfigPatch{}, Enabled: gatehouse.Val(true)}, []string{"Config", "Enabled"}},
	} {
		if got := gatehouse.ChangedFields(tc.update); !slices.Equal(got, tc.want) {
			t.Errorf("ChangedFields(%T) = %v, want %v", tc.update, got, tc.want)
		}
	}
}
