package provider_test

import (
	"gatehouse/provider"
	"strings"
	"testing"

	"gatehouse"
)

func TestCheckBYOKProvider(t *testing.T) {
	c, err := provider.NewCatalog([]*provider.Provider{{ID: "openai"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckBYOKProvider("openai"); err != nil {
		t.Fatal(err)
	}
	for _, cat := range []*provider.Catalog{c, {}} {
		err := cat.CheckBYOKProvider("mistral")
		if gatehouse.ErrorCode(err) != gatehouse.EINVALID || !strings.HasPrefix(gatehouse.ErrorMessage(err), `provider: unknown provider "mistral"`) {
			t.Errorf("unknown provider: %v", err)
		}
	}
}
