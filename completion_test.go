package gatehouse_test

import (
	"testing"

	"gatehouse"
)

// TestCheckModelListCase: a deny list denies a model or provider written in
// another case than the catalog's (the mistake fails closed); an allow list
// admits only the exact slug (a wrong case there denies, which is also
// closed).
func TestCheckModelListCase(t *testing.T) {
	guard := func(g gatehouse.Guardrail) []gatehouse.AppliedGuardrail {
		g.ID, g.Name = "g1", "guard"
		return []gatehouse.AppliedGuardrail{{Guardrail: &g}}
	}
	for _, c := range []struct {
		name    string
		g       gatehouse.Guardrail
		model   string
		allowed bool
	}{
		{"deny exact", gatehouse.Guardrail{IgnoredModels: []string{"fake/Echo2"}}, "fake/Echo2", false},
		{"deny other case", gatehouse.Guardrail{IgnoredModels: []string{"fake/echo2"}}, "fake/Echo2", false},
		{"deny provider other case", gatehouse.Guardrail{IgnoredProviders: []string{"FAKE"}}, "fake/Echo2", false},
		{"deny another model", gatehouse.Guardrail{IgnoredModels: []string{"fake/echo3"}}, "fake/Echo2", true},
		{"allow exact", gatehouse.Guardrail{AllowedModels: []string{"fake/Echo2"}}, "fake/Echo2", true},
		{"allow other case", gatehouse.Guardrail{AllowedModels: []string{"fake/echo2"}}, "fake/Echo2", false},
		{"allow provider other case", gatehouse.Guardrail{AllowedProviders: []string{"Fake"}}, "fake/Echo2", false},
	} {
		err := gatehouse.CheckModel(guard(c.g), c.model, "fake")
		if (err == nil) != c.allowed {
			t.Errorf("%s: error %v, want allowed %v", c.name, err, c.allowed)
		}
		if err != nil {
			if e, ok := err.(*gatehouse.Error); !ok || e.Code != gatehouse.EFORBIDDEN {
				t.Errorf("%s: error %v, want a 403", c.name, err)
			}
		}
	}
}
