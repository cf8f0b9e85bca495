package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"gatehouse"
)

// TestBrowserDestinations: an admin adds a webhook (a loopback address is
// refused by the egress policy, next to the field) with a method and
// secret headers, and a Langfuse destination with its keys; no secret
// ever reaches a page (masked hints, empty secret fields, headers shown
// masked); an edit that leaves a secret empty keeps it; a change of where
// the data goes is refused until the secret is typed again, the page
// saying why; then the webhook is deleted; at 1280 and 375 px.
func TestBrowserDestinations(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	b := e.newBrowser(t)
	b.acceptDialogs()
	b.signInWithKey()

	b.visit("/destinations")
	b.must(b.contains("No destination in this workspace yet."), "an empty list: %s", b.text("main"))
	hookID := webhookDestination(t, e, b)
	langfuseDestination(t, e, b)

	b.visit("/destinations")
	b.must(b.contains("Hooks") && b.contains("Webhook") && b.contains("Traces (US)") && b.contains("Langfuse") && b.contains("50%"), "the list: %s", b.text("main"))
	b.both("destinations")
	b.wide()

	// The webhook is deleted (softly, as the API deletes).
	b.visit("/destinations/" + hookID)
	b.tick("#f-confirm")
	b.submit(`form[action$="/delete"] button.danger`)
	b.must(strings.HasPrefix(b.path(), "/destinations?done=deleted") && !b.contains("Hooks"), "after deleting: %s", b.text("main"))
	if _, err := e.store.FindDestination(ctx, e.org.ID, hookID); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Errorf("the deleted webhook: %v", err)
	}
	b.visit("/destinations/" + hookID)
	b.must(b.status() == http.StatusNotFound, "a deleted destination's page: %d", b.status())
}

// webhookDestination adds a webhook from the list's choice of a type: a
// loopback address is refused next to its field, and the header's secret
// is not shown back; then with a method and headers. It returns its id.
func webhookDestination(t *testing.T, e *env, b *browser) string {
	ctx := context.Background()
	b.fill(map[string]string{"#type": "webhook"})
	b.submit(`#choose-type button`)
	b.must(strings.HasPrefix(b.path(), "/destinations/new?") && b.text("h1") == "New Webhook destination", "the webhook form: %s", b.path())
	b.must(b.value(`[name="config.method"]`) == "POST", "the method's default: %q", b.value(`[name="config.method"]`))
	const hookSecret = "Bearer hook-secret-0123456789"
	b.fill(map[string]string{"#f-name": "Hooks", `[name="config.url"]`: "http://127.0.0.1:9/hook",
		"#f-headers": "Authorization: " + hookSecret + "\nX-Team: search"})
	b.submit(`form[action="/destinations"] button[type="submit"]`)
	b.must(b.status() == http.StatusBadRequest && strings.Contains(b.text(`[id="e-config.url"]`), "is not a place Gatehouse may send traces to"),
		"a loopback webhook: %s", b.text("main"))
	b.must(!strings.Contains(b.html(), "hook-secret"), "the refused form shows the header's secret back")
	b.fill(map[string]string{`[name="config.url"]`: "https://hooks.example.com/gatehouse", `[name="config.method"]`: "PUT",
		"#f-headers": "Authorization: " + hookSecret + "\nX-Team: search"})
	b.submit(`form[action="/destinations"] button[type="submit"]`)
	b.must(b.contains("Created."), "after creating the webhook: %s", b.text("main"))
	hookID := strings.TrimSuffix(strings.TrimPrefix(b.path(), "/destinations/"), "?done=created")
	hook, err := e.store.FindDestination(ctx, e.org.ID, hookID)
	if err != nil {
		t.Fatal(err)
	}
	if hook.Config.Values["url"] != "https://hooks.example.com/gatehouse" || hook.Config.Values["method"] != "PUT" ||
		hook.Config.Headers["Authorization"] != hookSecret || hook.Config.Headers["X-Team"] != "search" || deref(hook.Name) != "Hooks" {
		t.Errorf("the webhook stored: %+v", hook.Config)
	}
	b.must(!strings.Contains(b.html(), "hook-secret"), "the webhook's page shows its header's secret")
	b.must(b.value("#f-headers") == "Authorization: ********\nX-Team: ********", "the headers shown: %q", b.value("#f-headers"))
	return hookID
}

// langfuseDestination adds a Langfuse destination (two keys, one of them
// secret, and a default base URL), edits it leaving the secret empty (it
// is kept), and moves it to another base URL, which needs the secret
// again.
func langfuseDestination(t *testing.T, e *env, b *browser) {
	ctx := context.Background()
	b.visit("/destinations")
	b.fill(map[string]string{"#type": "langfuse"})
	b.submit(`#choose-type button`)
	b.must(b.has(`[name="config.publicKey"][type="text"]`) && b.has(`[name="config.secretKey"][type="password"]`) && b.has(`[name="config.baseUrl"]`),
		"the Langfuse fields: %s", b.text("main"))
	const lfSecret = "sk-lf-0123456789-abcdefWXYZ"
	b.fill(map[string]string{"#f-name": "Traces", `[name="config.publicKey"]`: "pk-lf-1234", `[name="config.secretKey"]`: lfSecret})
	b.submit(`form[action="/destinations"] button[type="submit"]`)
	b.must(b.contains("Created."), "after creating the Langfuse destination: %s", b.text("main"))
	lfID := strings.TrimSuffix(strings.TrimPrefix(b.path(), "/destinations/"), "?done=created")
	b.must(!strings.Contains(b.html(), lfSecret[:20]) && b.value(`[name="config.secretKey"]`) == "", "the secret key is on the page")
	b.must(strings.Contains(b.text(`[id="h-config.secretKey"]`), "Stored: ********WXYZ"), "the masked secret: %s", b.text(`[id="h-config.secretKey"]`))
	b.must(b.value(`[name="config.baseUrl"]`) == "https://us.cloud.langfuse.com", "the default base URL: %q", b.value(`[name="config.baseUrl"]`))
	b.both("destination")
	b.wide()

	// An edit that leaves the secret empty keeps it.
	b.fill(map[string]string{"#f-name": "Traces (US)", "#f-sampling_rate": "0.5"})
	b.submit(`form[action="/destinations/` + lfID + `"] button[type="submit"]`)
	b.must(b.contains("Saved."), "after saving: %s", b.text("main"))
	lf, err := e.store.FindDestination(ctx, e.org.ID, lfID)
	if err != nil {
		t.Fatal(err)
	}
	if lf.Config.Values["secretKey"] != lfSecret || deref(lf.Name) != "Traces (US)" || lf.SamplingRate != 0.5 {
		t.Errorf("after an edit without the secret: %q %q %v", lf.Config.Values["secretKey"], deref(lf.Name), lf.SamplingRate)
	}
	// Moving the data elsewhere needs the secret again.
	b.fill(map[string]string{`[name="config.baseUrl"]`: "https://eu.cloud.langfuse.com"})
	b.submit(`form[action="/destinations/` + lfID + `"] button[type="submit"]`)
	b.must(b.status() == http.StatusBadRequest && b.contains("moves where the destination sends its data (baseUrl)") &&
		strings.Contains(b.text(`[id="e-config.secretKey"]`), "Type it again."), "moving without the secret: %s", b.text("main"))
	b.screenshot("destination-secret-again")
	const lfSecret2 = "sk-lf-eu-9876543210-qrstuvWXYZ"
	b.fill(map[string]string{`[name="config.secretKey"]`: lfSecret2})
	b.submit(`form[action="/destinations/` + lfID + `"] button[type="submit"]`)
	b.must(b.contains("Saved."), "moving with the secret: %s", b.text("main"))
	if lf, _ = e.store.FindDestination(ctx, e.org.ID, lfID); lf.Config.Values["secretKey"] != lfSecret2 || lf.Config.Values["baseUrl"] != "https://eu.cloud.langfuse.com" {
		t.Errorf("after moving: %+v", lf.Config.Values)
	}
}
