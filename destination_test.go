package gatehouse_test

import (
	"strings"
	"testing"

	"gatehouse"
)

// TestMaskedURLCredentials: a URL stored with credentials, before URLs had
// to be free of them, is shown with its user information masked; one
// without is shown as stored.
func TestMaskedURLCredentials(t *testing.T) {
	c := gatehouse.DestinationConfig{Values: map[string]string{
		"url": "https://hookuser:USERINFOPASS@hooks.example.com:8443/x?sig=1", "method": "POST"}}
	got := c.Masked().Values["url"]
	if strings.Contains(got, "USERINFOPASS") || strings.Contains(got, "hookuser") || !strings.Contains(got, "hooks.example.com:8443/x?sig=1") {
		t.Errorf("masked url %q", got)
	}
	c.Values["url"] = "https://hooks.example.com/x"
	if got := c.Masked().Values["url"]; got != "https://hooks.example.com/x" {
		t.Errorf("url without credentials shown as %q", got)
	}
}
