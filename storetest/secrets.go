package storetest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"gatehouse"
)

// KeyedOpener returns the opener of one new database for a test: each call
// of the function it returns opens that database (empty at first) with the
// given secret box. The stores are closed by the test's cleanup.
type KeyedOpener func(t *testing.T) func(box *gatehouse.SecretBox) gatehouse.Store

// RunSecrets checks what happens to destination secrets when the secret
// key changes: re-sealing them (the rotation), and destinations whose
// secrets the store's key does not open.
func RunSecrets(t *testing.T, open KeyedOpener) {
	t.Run("Reseal", func(t *testing.T) { testReseal(t, open) })
	t.Run("Unreadable", func(t *testing.T) { testUnreadableSecrets(t, open) })
	t.Run("ClientSecrets", func(t *testing.T) { testClientSecrets(t, open) })
}

// newBox returns a box sealing with key and opening with previous too.
func newBox(t *testing.T, key []byte, previous ...[]byte) *gatehouse.SecretBox {
	t.Helper()
	box, err := gatehouse.NewSecretBox(key, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// secretFixture is a database with two destinations with secrets (one of
// them soft-deleted) and one without, sealed with key.
type secretFixture struct {
	ctx                 context.Context
	open                func(box *gatehouse.SecretBox) gatehouse.Store
	org                 *gatehouse.Organization
	key                 []byte
	live, deleted, bare *gatehouse.Destination
}

func newSecretFixture(t *testing.T, open KeyedOpener) *secretFixture {
	t.Helper()
	f := &secretFixture{ctx: context.Background(), open: open(t), key: gatehouse.NewSecretKey()}
	store := f.open(newBox(t, f.key))
	var err error
	f.org, err = store.CreateOrganization(f.ctx, "Acme")
	ok(t, err)
	withHeader := langfuse("traces")
	withHeader.Config.Headers, withHeader.Config.HeadersSet = map[string]string{"Authorization": headerSecret}, true
	f.live, err = store.CreateDestination(f.ctx, f.org.ID, withHeader)
	ok(t, err)
	f.deleted, err = store.CreateDestination(f.ctx, f.org.ID, langfuse("gone"))
	ok(t, err)
	ok(t, store.DeleteDestination(f.ctx, f.org.ID, f.deleted.ID))
	f.bare, err = store.CreateDestination(f.ctx, f.org.ID, webhook("hooks"))
	ok(t, err)
	return f
}

// readable reports whether a store opening with key alone reads the live
// destination's secrets.
func (f *secretFixture) readable(t *testing.T, key []byte) bool {
	t.Helper()
	d, err := f.open(newBox(t, key)).FindDestination(f.ctx, f.org.ID, f.live.ID)
	ok(t, err)
	return !d.SecretsUnreadable && d.Config.Values["secretKey"] == langfuseSecret && d.Config.Headers["Authorization"] == headerSecret
}

func testReseal(t *testing.T, open KeyedOpener) {
	f := newSecretFixture(t, open)
	next := gatehouse.NewSecretKey()
	n, err := f.open(newBox(t, next, f.key)).ResealSecrets(f.ctx, false)
	ok(t, err)
	if n.Destinations != 2 || len(n.Skipped) != 0 {
		t.Fatalf("ResealSecrets = %+v; want the 2 destinations with secrets (the deleted one too)", n)
	}
	if f.readable(t, f.key) || !f.readable(t, next) {
		t.Fatal("after the re-seal the old key still opens the secrets, or the new one does not")
	}
	// The deleted destination was re-sealed too: the new key alone reseals
	// everything again.
	if n, err := f.open(newBox(t, gatehouse.NewSecretKey(), next)).ResealSecrets(f.ctx, false); err != nil || n.Destinations != 2 {
		t.Fatalf("ResealSecrets with only the new key as previous = %+v, %v; want 2 destinations", n, err)
	}
}

func testUnreadableSecrets(t *testing.T, open KeyedOpener) {
	f := newSecretFixture(t, open)
	other := gatehouse.NewSecretKey()
	store := f.open(newBox(t, other)) // a key that opens none of them

	// Reads: the destination is listed and found, marked, with its other
	// values; the one without secrets is unaffected.
	list, total, err := store.FindDestinations(f.ctx, f.org.ID, "", page(0, 10))
	ok(t, err)
	if total != 2 || len(list) != 2 {
		t.Fatalf("FindDestinations = %d of %d, want the 2 live ones", len(list), total)
	}
	for _, d := range list {
		if want := d.ID == f.live.ID; d.SecretsUnreadable != want {
			t.Errorf("destination %s (%s): SecretsUnreadable = %v, want %v", d.ID, d.Type, d.SecretsUnreadable, want)
		}
	}
	d, err := store.FindDestination(f.ctx, f.org.ID, f.live.ID)
	ok(t, err)
	if !d.SecretsUnreadable || d.Config.Values["publicKey"] != langfusePublic || d.Config.Values["secretKey"] != "" || d.Config.Headers != nil {
		t.Fatalf("FindDestination = %+v, want it marked with its public values only", d)
	}
	shown := d.ShownConfig()
	if shown.Values["secretKey"] != "********" || shown.Values["publicKey"] != langfusePublic || shown.Headers != nil {
		t.Errorf("ShownConfig = %+v, want the required secret masked and no headers", shown)
	}
	got, err := store.UnreadableSecrets(f.ctx)
	ok(t, err)
	dest := gatehouse.SecretOfDestination
	want := []gatehouse.UnreadableSecret{
		{Kind: dest, ID: f.live.ID, OrganizationID: f.org.ID, WorkspaceID: f.live.WorkspaceID},
		{Kind: dest, ID: f.deleted.ID, OrganizationID: f.org.ID, WorkspaceID: f.deleted.WorkspaceID, Deleted: true},
	}
	slices.SortFunc(want, func(a, b gatehouse.UnreadableSecret) int { return strings.Compare(a.ID, b.ID) })
	wantEqual(t, "UnreadableSecrets", want, got)

	// A rotation that cannot open them changes nothing and names them all.
	_, err = store.ResealSecrets(f.ctx, false)
	wantCode(t, err, gatehouse.ECONFLICT)
	wantMetadata(t, err, "ids", []string{want[0].ID, want[1].ID})
	if !f.readable(t, f.key) {
		t.Fatal("a refused re-seal changed the secrets")
	}
	// Told to skip them, it re-seals the others (none here) and leaves
	// them as they are.
	n, err := store.ResealSecrets(f.ctx, true)
	ok(t, err)
	if n.Destinations != 0 {
		t.Errorf("ResealSecrets(skip) re-sealed %+v, want none", n)
	}
	wantEqual(t, "skipped", want, n.Skipped)
	if !f.readable(t, f.key) {
		t.Fatal("a skipping re-seal changed the secrets it could not open")
	}

	// An update that leaves the configuration alone keeps the sealed
	// secrets as they are: the old key still opens them.
	d, err = store.UpdateDestination(f.ctx, f.org.ID, f.live.ID, gatehouse.DestinationUpdate{Enabled: gatehouse.Val(false)})
	ok(t, err)
	if !d.SecretsUnreadable || d.Enabled {
		t.Errorf("UpdateDestination(enabled) = %+v, want it disabled and still marked", d)
	}
	if !f.readable(t, f.key) {
		t.Fatal("an update of enabled lost the sealed secrets")
	}
	// A change of configuration must send the secrets again in clear: a
	// masked value, or none, is refused, and changes nothing.
	for _, p := range []*gatehouse.ConfigPatch{
		{Values: map[string]*string{"publicKey": new("pk-lf-new")}},
		{Values: map[string]*string{"secretKey": new("********")}},
		{Values: map[string]*string{"secretKey": new("********cdef")}},
		{Values: map[string]*string{"secretKey": new("sk-lf-new-secret-000")}, Headers: map[string]string{"Authorization": "********"}, HeadersSet: true},
	} {
		_, err := store.UpdateDestination(f.ctx, f.org.ID, f.live.ID, gatehouse.DestinationUpdate{Config: p})
		wantCode(t, err, gatehouse.EINVALID)
		if !f.readable(t, f.key) {
			t.Fatalf("a refused update (%+v) changed the secrets", p)
		}
	}
	_, err = store.UpdateDestination(f.ctx, f.org.ID, f.live.ID, gatehouse.DestinationUpdate{
		Config: &gatehouse.ConfigPatch{Values: map[string]*string{"publicKey": new("pk-lf-new")}}})
	wantMetadata(t, err, "secrets_required", []string{"config.secretKey"})

	// Sent again, they are sealed with the store's key: readable again.
	d, err = store.UpdateDestination(f.ctx, f.org.ID, f.live.ID, gatehouse.DestinationUpdate{
		Config: &gatehouse.ConfigPatch{Values: map[string]*string{"secretKey": new("sk-lf-resent-0123456789")}}})
	ok(t, err)
	if d.SecretsUnreadable || d.Config.Values["secretKey"] != "sk-lf-resent-0123456789" || d.Config.Values["publicKey"] != langfusePublic {
		t.Fatalf("UpdateDestination with the secret = %+v, want it readable", d)
	}
	d, err = store.FindDestination(f.ctx, f.org.ID, f.live.ID)
	ok(t, err)
	if d.SecretsUnreadable || d.Config.Values["secretKey"] != "sk-lf-resent-0123456789" || d.Config.Headers != nil {
		t.Errorf("FindDestination after the secrets were sent again = %+v", d)
	}
	got, err = store.UnreadableSecrets(f.ctx)
	ok(t, err)
	wantEqual(t, "UnreadableSecrets after the fix", []gatehouse.UnreadableSecret{
		{Kind: dest, ID: f.deleted.ID, OrganizationID: f.org.ID, WorkspaceID: f.deleted.WorkspaceID, Deleted: true}}, got)
}

// testClientSecrets: an identity provider's client secret is re-sealed
// with the others, opens with the new key only, and is named when no key
// of the store opens it (its sign-ins then fail, saying so).
func testClientSecrets(t *testing.T, open KeyedOpener) {
	ctx, opener, key := context.Background(), open(t), gatehouse.NewSecretKey()
	store := opener(newBox(t, key))
	org, err := store.CreateOrganization(ctx, "Acme")
	ok(t, err)
	const secret = "a client secret of the provider"
	p, err := store.CreateSSOProvider(ctx, org.ID, gatehouse.SSOProviderUpdate{Name: gatehouse.Val("Okta"),
		IssuerURL: gatehouse.Val("https://acme.okta.example"), ClientID: gatehouse.Val("c"), ClientSecret: gatehouse.Val(secret)})
	ok(t, err)
	public, err := store.CreateSSOProvider(ctx, org.ID, gatehouse.SSOProviderUpdate{Name: gatehouse.Val("Public"),
		IssuerURL: gatehouse.Val("https://idp.example"), ClientID: gatehouse.Val("p")})
	ok(t, err)
	next := gatehouse.NewSecretKey()
	n, err := opener(newBox(t, next, key)).ResealSecrets(ctx, false)
	ok(t, err)
	if n.SSOProviders != 1 {
		t.Fatalf("ResealSecrets = %+v, want the one provider with a secret", n)
	}
	for _, c := range []struct {
		key  []byte
		want bool
	}{{key, false}, {next, true}} {
		got, err := opener(newBox(t, c.key)).FindSSOProviderForSignIn(ctx, p.ID)
		if opened := err == nil && string(got.ClientSecret) == secret; opened != c.want {
			t.Fatalf("after the re-seal, the secret opens with a key: %v (%v), want %v", opened, err, c.want)
		}
	}
	stranger := opener(newBox(t, gatehouse.NewSecretKey()))
	_, err = stranger.FindSSOProviderForSignIn(ctx, p.ID)
	wantCode(t, err, gatehouse.EUNAVAILABLE)
	if _, err := stranger.FindSSOProviderForSignIn(ctx, public.ID); err != nil {
		t.Fatalf("a public client needs no key: %v", err)
	}
	list, err := stranger.UnreadableSecrets(ctx)
	ok(t, err)
	wantEqual(t, "UnreadableSecrets", []gatehouse.UnreadableSecret{{Kind: gatehouse.SecretOfSSOProvider, ID: p.ID, OrganizationID: org.ID}}, list)
}
