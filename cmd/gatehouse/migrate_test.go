package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"gatehouse"
	"gatehouse/postgres"
	"gatehouse/postgres/pgtest"
	"gatehouse/sqlite"
)

// TestMigrateData copies a SQLite database with every kind of row (usage
// counters and a soft-deleted destination included) into PostgreSQL, then
// serves the copy and finds everything there.
func TestMigrateData(t *testing.T) {
	ctx := context.Background()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	secretKey := base64.StdEncoding.EncodeToString(secret)
	box, _ := gatehouse.NewSecretBox(secret)

	// The source: a SQLite database filled through the store.
	path := filepath.Join(t.TempDir(), "source.db")
	src, err := sqlite.Open(ctx, path, box)
	if err != nil {
		t.Fatal(err)
	}
	org, err := src.CreateOrganization(ctx, "Migrated")
	if err != nil {
		t.Fatal(err)
	}
	_, mgmt, _ := src.CreateManagementKey(ctx, org.ID, "mgmt")
	member, _ := src.CreateMember(ctx, org.ID, gatehouse.MemberCreate{Email: "ada@example.com"})
	ws, _ := src.CreateWorkspace(ctx, org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Team"), Slug: gatehouse.Val("team")}, nil)
	if _, _, err := src.AddWorkspaceMembers(ctx, org.ID, ws.ID, []string{member.ID}); err != nil {
		t.Fatal(err)
	}
	limit := gatehouse.USD(10)
	key, _, _ := src.CreateKey(ctx, org.ID, gatehouse.KeyCreate{Name: "metered", Limit: &limit, LimitReset: gatehouse.Daily, CreatorUserID: &member.ID})
	for _, spend := range []struct {
		amount gatehouse.Money
		byok   bool
	}{{gatehouse.Money(1_500_000_000), false}, {gatehouse.Money(250_000_000), true}} {
		if _, err := src.RecordUsage(ctx, key.Hash, spend.amount, spend.byok); err != nil {
			t.Fatal(err)
		}
	}
	g, err := src.CreateGuardrail(ctx, org.ID, gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{
		Name: gatehouse.Val("g"), AllowedProviders: gatehouse.Val([]string{"openai"}), EnforceZDR: gatehouse.Val(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.AssignKeys(ctx, org.ID, g.ID, []string{key.Hash}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := src.AssignMembers(ctx, org.ID, g.ID, []string{member.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := src.CreateAuthCode(ctx, org.ID, nil, gatehouse.AuthCodeCreate{CallbackURL: "https://app.example.com/cb"}); err != nil {
		t.Fatal(err)
	}
	newDest := func(name, secretValue string) *gatehouse.Destination {
		d, err := src.CreateDestination(ctx, org.ID, gatehouse.DestinationCreate{Type: "langfuse", DestinationUpdate: gatehouse.DestinationUpdate{
			Name: gatehouse.Val(name), Config: &gatehouse.ConfigPatch{Values: map[string]*string{
				"publicKey": ptr("pk-lf-1"), "secretKey": ptr(secretValue)}}}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	live := newDest("live", "sk-lf-live-0123456789")
	gone := newDest("gone", "sk-lf-gone-0123456789")
	if err := src.DeleteDestination(ctx, org.ID, gone.ID); err != nil {
		t.Fatal(err)
	}
	src.Close()

	target := pgtest.NewDatabase(t)
	stdout, stderr, err := runCommand(map[string]string{}, "migrate-data", "--from", path, "--to", target)
	if err != nil {
		t.Fatalf("migrate-data: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	for _, table := range copyTables {
		want := countRows(t, path, `SELECT count(*) FROM `+table)
		if got := sqlCount(t, target, `SELECT count(*) FROM `+table); got != want || want == 0 {
			t.Errorf("%s: %d rows copied of %d (the test should fill every table)", table, got, want)
		}
	}
	if n := sqlCount(t, target, `SELECT count(*) FROM destinations WHERE deleted_at IS NOT NULL`); n != 1 {
		t.Errorf("soft-deleted destinations in the copy: %d, want 1", n)
	}

	// The copy serves, with the same secret key.
	s := startServer(t, map[string]string{"GATEHOUSE_DATABASE_URL": target, "GATEHOUSE_SECRET_KEY": secretKey})
	status, body := s.do("GET", "/api/v1/keys/"+key.Hash, mgmt, nil)
	if status != http.StatusOK {
		t.Fatalf("GET the migrated key: %d %v", status, body)
	}
	data := body["data"].(map[string]any)
	if data["usage"] != 1.5 || data["byok_usage"] != 0.25 || data["usage_daily"] != 1.5 || data["limit_remaining"] != 8.5 {
		t.Errorf("usage after migration: %v", data)
	}
	if status, _ := s.do("GET", "/api/v1/observability/destinations/"+gone.ID, mgmt, nil); status != http.StatusNotFound {
		t.Errorf("soft-deleted destination: %d, want 404", status)
	}
	pg, err := postgres.Open(ctx, target, box, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	d, err := pg.FindDestination(ctx, org.ID, live.ID)
	if err != nil || d.Config.Values["secretKey"] != "sk-lf-live-0123456789" {
		t.Errorf("migrated destination secret: %v, %v", d, err)
	}
	// The identity of oauth_apps continues after the copied ids.
	if _, err := pg.CreateAuthCode(ctx, org.ID, nil, gatehouse.AuthCodeCreate{CallbackURL: "https://other.example.com/cb"}); err != nil {
		t.Errorf("a new OAuth app after migration: %v", err)
	}

	// A second migration into the filled database is refused.
	if _, _, err := runCommand(map[string]string{}, "migrate-data", "--from", path, "--to", target); err == nil ||
		!strings.Contains(err.Error(), "already holds data") {
		t.Errorf("migrating into a non-empty database: %v, want a refusal", err)
	}
}

func ptr[T any](v T) *T { return &v }
