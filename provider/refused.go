package provider

import (
	"errors"
)

// BYOKKeyRefused reports whether a provider's failure refuses the key it
// was sent (401 unauthorized, 402 out of credit, 403 forbidden, 429 rate
// limited), so that the workspace's next BYOK key may be tried; any other
// failure would befall the next key alike.
func BYOKKeyRefused(err error) bool {
	ue, ok := errors.AsType[*UpstreamError](err)
	if !ok || ue.Kind != UpstreamRejected {
		return false
	}
	switch ue.ProviderStatus {
	case 401, 402, 403, 429:
		return true
	}
	return false
}
