package observe

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"gatehouse"
	"gatehouse/sqlite"
	"gatehouse/sqlite/sqlitetest"
)

// TestWithSQLiteStore runs the Publisher over the real store: destinations
// listed from the database, their secrets decrypted, deleted and disabled
// ones left out.
func TestWithSQLiteStore(t *testing.T) {
	ctx := context.Background()
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(ctx, sqlitetest.Path(t, "gatehouse.db"), box)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	org, err := db.CreateOrganization(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := db.FindWorkspace(ctx, org.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	rc := newReceiver(t, nil)
	create := func(typ, name string, values map[string]string, headers map[string]string, enabled bool) *gatehouse.Destination {
		t.Helper()
		patch := &gatehouse.ConfigPatch{Values: map[string]*string{}, Headers: headers, HeadersSet: headers != nil}
		for k, v := range values {
			patch.Values[k] = &v
		}
		d, err := db.CreateDestination(ctx, org.ID, gatehouse.DestinationCreate{Type: typ,
			DestinationUpdate: gatehouse.DestinationUpdate{Name: gatehouse.Val(name), Config: patch, Enabled: gatehouse.Val(enabled)}})
		if err != nil {
			t.Fatalf("CreateDestination(%s): %v", name, err)
		}
		return d
	}
	create("webhook", "hook", map[string]string{"url": rc.URL + "/hook", "method": "PUT"},
		map[string]string{"Authorization": "Bearer hdr-SECRET-0c4e8a2f6b1d"}, true)
	create("langfuse", "langfuse", map[string]string{"baseUrl": rc.URL + "/lf", "publicKey": "pk-lf-PUBLIC-5e9b",
		"secretKey": "sk-lf-SECRET-7f3a9c1e5b2d4f6a"}, nil, true)
	create("webhook", "disabled", map[string]string{"url": rc.URL + "/disabled"}, nil, false)
	deleted := create("webhook", "deleted", map[string]string{"url": rc.URL + "/deleted"}, nil, true)
	if err := db.DeleteDestination(ctx, org.ID, deleted.ID); err != nil {
		t.Fatal(err)
	}

	p, reg := start(t, db, fastOptions())
	p.Publish(testEvent(func(ev *gatehouse.TraceEvent) {
		ev.Generation.OrganizationID, ev.Generation.WorkspaceID = org.ID, ws.ID
	}))
	closeNow(t, p)

	if got, want := rc.paths(), []string{"/hook", "/lf/api/public/otel/v1/traces"}; !slices.Equal(got, want) {
		t.Fatalf("received at %v, want %v", got, want)
	}
	for _, h := range rc.got() {
		switch h.Path {
		case "/hook":
			if h.Method != http.MethodPut || h.Header.Get("Authorization") != "Bearer hdr-SECRET-0c4e8a2f6b1d" {
				t.Errorf("webhook: %s with Authorization %q", h.Method, h.Header.Get("Authorization"))
			}
		default:
			r := &http.Request{Header: h.Header}
			if u, pw, _ := r.BasicAuth(); u != "pk-lf-PUBLIC-5e9b" || pw != "sk-lf-SECRET-7f3a9c1e5b2d4f6a" {
				t.Errorf("langfuse basic auth = %q:%q", u, pw)
			}
		}
	}
	if got := metric(t, reg, "gatehouse_observability_deliveries_total", "result", "delivered"); got != 2 {
		t.Errorf("delivered = %v, want 2 (the webhook and langfuse)", got)
	}
}
