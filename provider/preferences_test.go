package provider_test

import (
	"gatehouse/internal/errtest"
	"gatehouse/provider"
	"testing"

	"gatehouse"
)

func TestProviderPreferencesCheck(t *testing.T) {
	c, err := provider.NewCatalog([]*provider.Provider{{ID: "acme", Models: []*provider.Model{
		{ID: "chat", PromptPrice: gatehouse.USD(2), CompletionPrice: gatehouse.USD(8)}}}})
	if err != nil {
		t.Fatal(err)
	}
	m, p, _ := c.Model("acme/chat")
	usd := func(d int64) *provider.PriceLimit { return new(provider.PriceLimit(gatehouse.USD(d))) }
	for _, tc := range []struct {
		name  string
		prefs provider.ProviderPreferences
		field string
	}{
		{"nothing", provider.ProviderPreferences{}, ""},
		{"only the provider, in any case", provider.ProviderPreferences{Only: []string{"other", "ACME"}}, ""},
		{"only others", provider.ProviderPreferences{Only: []string{"other"}}, "provider.only"},
		{"ignored", provider.ProviderPreferences{Ignore: []string{"acme"}}, "provider.ignore"},
		{"order without it, fallbacks allowed", provider.ProviderPreferences{Order: []string{"other"}}, ""},
		{"order without it, no fallbacks", provider.ProviderPreferences{Order: []string{"other"}, AllowFallbacks: new(false)}, "provider.order"},
		{"order with it, no fallbacks", provider.ProviderPreferences{Order: []string{"acme"}, AllowFallbacks: new(false)}, ""},
		{"prices within", provider.ProviderPreferences{MaxPrice: &provider.MaxPrice{Prompt: usd(2), Completion: usd(8), Request: usd(0)}}, ""},
		{"prompt price above", provider.ProviderPreferences{MaxPrice: &provider.MaxPrice{Prompt: usd(1)}}, "provider.max_price.prompt"},
		{"completion price above", provider.ProviderPreferences{MaxPrice: &provider.MaxPrice{Completion: usd(7)}}, "provider.max_price.completion"},
	} {
		errtest.WantField(t, tc.name, tc.prefs.Check("provider", m, p), tc.field)
	}
	var none *provider.ProviderPreferences
	errtest.WantField(t, "no preferences", none.Check("provider", m, p), "")
	errtest.WantField(t, "no preferences", none.Validate("provider"), "")
}
