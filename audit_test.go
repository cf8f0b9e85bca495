package gatehouse_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
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

// TestAuditVocabularies: AuditOperations and AuditResourceTypes list every
// Op and Resource constant of audit.go once, so that a new operation
// cannot be missing from the console's filters.
func TestAuditVocabularies(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), "audit.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ops, resources []string
	for _, decl := range file.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			for _, name := range spec.(*ast.ValueSpec).Names {
				switch {
				case strings.HasPrefix(name.Name, "Op"):
					ops = append(ops, name.Name)
				case strings.HasPrefix(name.Name, "Resource"):
					resources = append(resources, name.Name)
				}
			}
		}
	}
	for _, c := range []struct {
		what   string
		consts []string
		listed []string
	}{{"operations", ops, gatehouse.AuditOperations()}, {"resource types", resources, gatehouse.AuditResourceTypes()}} {
		if len(c.consts) != len(c.listed) || len(c.consts) < 10 {
			t.Errorf("%s: %d constants, %d listed", c.what, len(c.consts), len(c.listed))
		}
		seen := map[string]bool{}
		for _, v := range c.listed {
			if seen[v] {
				t.Errorf("%s: %q listed twice", c.what, v)
			}
			seen[v] = true
		}
	}
}
