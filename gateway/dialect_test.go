package gateway

import (
	"testing"

	"gatehouse/provider"
)

// TestEveryProviderTypeHasADialect: a type the providers file accepts is
// one the gateway speaks (openai, the default, is Gatehouse's own form).
func TestEveryProviderTypeHasADialect(t *testing.T) {
	for _, typ := range provider.ProviderTypes {
		if _, ok := dialects[typ]; !ok && typ != "openai" {
			t.Errorf("provider type %q has no dialect", typ)
		}
	}
	for typ := range dialects {
		found := false
		for _, known := range provider.ProviderTypes {
			found = found || known == typ
		}
		if !found {
			t.Errorf("dialect %q is not a type the providers file accepts (provider.ProviderTypes)", typ)
		}
	}
}
