package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestDestinationSecretsUnreadable: a destination whose secrets the
// server's key cannot open (here: another row's sealed secrets, which are
// bound to that row) never turns a read into a 500. It is listed and read
// with secrets_unreadable, its required secret masked and its public values
// shown; an update that leaves its configuration alone keeps the sealed
// secrets; a configuration change must send the secret again in clear
// (400 and no change otherwise), and makes it readable again.
func TestDestinationSecretsUnreadable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lf := func(name, secret string) map[string]any {
		return map[string]any{"name": name, "type": "langfuse", "config": map[string]any{
			"publicKey": "pk-lf-" + name + "-0123456789", "secretKey": secret, "headers": map[string]any{"X-Team": "ml"}}}
	}
	broken := e.createDestination(e.mgmt, lf("broken", "sk-lf-broken-0123456789"))["id"].(string)
	healthy := e.createDestination(e.mgmt, lf("healthy", "sk-lf-healthy-0123456789"))["id"].(string)
	e.exec(`UPDATE destinations SET secrets = (SELECT secrets FROM destinations WHERE id = $1) WHERE id = $2`, healthy, broken)

	check := func(what string, d map[string]any, unreadable bool) {
		t.Helper()
		cfg, _ := d["config"].(map[string]any)
		if unreadable {
			if d["secrets_unreadable"] != true || cfg["secretKey"] != "********" || cfg["headers"] != nil ||
				cfg["publicKey"] != "pk-lf-broken-0123456789" {
				t.Errorf("%s = %v, want secrets_unreadable with the secret masked, no headers and the public key", what, d)
			}
			return
		}
		if _, present := d["secrets_unreadable"]; present {
			t.Errorf("%s has secrets_unreadable: %v", what, d)
		}
	}
	list, total := resList(t, e.do("GET", "/api/v1/observability/destinations", e.mgmt, nil).want(t, http.StatusOK))
	if total != 2 {
		t.Fatalf("total_count = %d, want 2", total)
	}
	for _, d := range list {
		check("listed "+fmt.Sprint(d["name"]), d, d["id"] == broken)
	}
	check("GET", resData(t, e.do("GET", "/api/v1/observability/destinations/"+broken, e.mgmt, nil).want(t, http.StatusOK)), true)

	d := resData(t, e.do("PATCH", "/api/v1/observability/destinations/"+broken, e.mgmt, map[string]any{"sampling_rate": 0.5}).want(t, http.StatusOK))
	check("PATCH sampling_rate", d, true)
	if d["sampling_rate"] != 0.5 {
		t.Errorf("PATCH sampling_rate = %v", d)
	}

	for _, cfg := range []map[string]any{
		{"publicKey": "pk-lf-new"},
		{"secretKey": "********"},
		{"secretKey": "sk-lf-new-secret-0123", "headers": map[string]any{"X-Team": "********"}},
	} {
		e.unchanged("PATCH "+strings.Join(keysOf(cfg), ","), func() {
			msg := e.do("PATCH", "/api/v1/observability/destinations/"+broken, e.mgmt, map[string]any{"config": cfg}).
				want(t, http.StatusBadRequest).errorMessage(t)
			if !strings.Contains(msg, broken) || !strings.Contains(msg, "cannot be opened") || !strings.Contains(msg, "config.") {
				t.Errorf("PATCH config %v: %q, want the destination and the secrets to send named", cfg, msg)
			}
		})
	}
	d = resData(t, e.do("PATCH", "/api/v1/observability/destinations/"+broken, e.mgmt,
		map[string]any{"config": map[string]any{"secretKey": "sk-lf-resent-0123456789"}}).want(t, http.StatusOK))
	check("PATCH with the secret", d, false)
	if got := e.storedConfig(broken); got.Values["secretKey"] != "sk-lf-resent-0123456789" || got.Headers != nil {
		t.Errorf("stored config after the fix = %+v, want the resent secret and no headers", got)
	}
	entries, _ := e.auditLog(e.mgmt, "?resource_id="+broken)
	updates := 0
	for _, a := range entries {
		if a["operation"] == "destination.update" {
			updates++
		}
	}
	if updates != 2 {
		t.Errorf("%d destination.update entries for %s, want 2 (the refused ones leave none)", updates, broken)
	}
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
