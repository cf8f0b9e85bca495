package provider_test

import (
	"errors"
	"fmt"
	"gatehouse/provider"
	"testing"
)

func TestBYOKKeyRefused(t *testing.T) {
	for status, want := range map[int]bool{401: true, 402: true, 403: true, 429: true, 400: false, 404: false, 500: false, 503: false} {
		err := fmt.Errorf("call: %w", &provider.UpstreamError{Kind: provider.UpstreamRejected, ProviderStatus: status})
		if got := provider.BYOKKeyRefused(err); got != want {
			t.Errorf("status %d: refused = %v, want %v", status, got, want)
		}
	}
	for _, err := range []error{nil, errors.New("x"), &provider.UpstreamError{Kind: provider.UpstreamTimeout},
		&provider.UpstreamError{Kind: provider.UpstreamBadAnswer, ProviderStatus: 401}} {
		if provider.BYOKKeyRefused(err) {
			t.Errorf("%v: refused", err)
		}
	}
}
