package httpapi

import (
	"gatehouse/provider"
	"testing"
)

// TestModelParametersAreForwarded: a model of the catalog may list only
// parameters the chat path forwards (structured_outputs is response_format
// with a schema), so the catalog never promises what a request is refused.
func TestModelParametersAreForwarded(t *testing.T) {
	for _, p := range provider.ModelParameters {
		if p == "structured_outputs" {
			p = "response_format"
		}
		if !chatFields[p] {
			t.Errorf("%s may be listed by a model, but the chat path does not forward it", p)
		}
		if _, refused := refusedChatFields[p]; refused {
			t.Errorf("%s may be listed by a model, but the chat path refuses it", p)
		}
	}
	for _, p := range provider.AllModelParameters[len(provider.ModelParameters):] {
		if chatFields[p] {
			t.Errorf("%s is forwarded: let models list it (provider.ModelParameters)", p)
		}
	}
}
