package postgres_test

import (
	"context"
	"strings"
	"testing"

	"gatehouse"
	"gatehouse/postgres"
	"gatehouse/postgres/pgtest"
	"gatehouse/storetest"

	"github.com/jackc/pgx/v5"
)

// TestDestinationSecretsNotInDump checks that destination secrets are
// sealed at rest: no column of any table of the database holds a secret
// configuration value or a header in the clear, while non-secret values are
// stored as they are.
func TestDestinationSecretsNotInDump(t *testing.T) {
	ctx := context.Background()
	db, url := openSealed(t)
	org, err := db.CreateOrganization(ctx, "Acme")
	if err != nil {
		t.Fatalf("CreateOrganization: %v", err)
	}
	const (
		secretKey   = "sk-lf-DUMPCHECK-secret-0123456789"
		headerValue = "Bearer DUMPCHECK-header-9876543210"
		publicKey   = "pk-lf-DUMPCHECK-public-0123456789"
	)
	secret, public := secretKey, publicKey
	d, err := db.CreateDestination(ctx, org.ID, gatehouse.DestinationCreate{
		Type: "langfuse",
		DestinationUpdate: gatehouse.DestinationUpdate{
			Name: gatehouse.Val("traces"),
			Config: &gatehouse.ConfigPatch{
				Values:     map[string]*string{"publicKey": &public, "secretKey": &secret},
				Headers:    map[string]string{"X-Dump-Check": headerValue},
				HeadersSet: true,
			},
		},
	})
	if err != nil {
		t.Fatalf("CreateDestination: %v", err)
	}
	// The secrets were stored, not dropped: they read back.
	got, err := db.FindDestination(ctx, org.ID, d.ID)
	if err != nil {
		t.Fatalf("FindDestination: %v", err)
	}
	if got.Config.Values["secretKey"] != secretKey || got.Config.Headers["X-Dump-Check"] != headerValue {
		t.Fatalf("destination config read back = %+v", got.Config)
	}

	dump := dumpTables(t, ctx, url, "destinations")
	for _, s := range []string{secretKey, headerValue} {
		if strings.Contains(dump, s) {
			t.Errorf("the database holds the secret %q in the clear", s)
		}
	}
	if !strings.Contains(dump, publicKey) {
		t.Errorf("the database does not hold the public key %q: the dump misses the destination", publicKey)
	}
}

// TestGenerationContentNotInDump checks that the prompts and completions
// kept of generations are sealed at rest.
func TestGenerationContentNotInDump(t *testing.T) {
	ctx := context.Background()
	db, url := openSealed(t)
	const prompt, completion = "PROMPT-DUMPCHECK-4b8e1f", "COMPLETION-DUMPCHECK-9d2c7a"
	g := storetest.StoreContent(t, db, prompt, completion)
	dump := dumpTables(t, ctx, url, "generation_content")
	for _, s := range []string{prompt, completion, "DUMPCHECK"} {
		if strings.Contains(dump, s) {
			t.Errorf("the database holds %q in the clear", s)
		}
	}
	if !strings.Contains(dump, g.ID) {
		t.Errorf("the dump does not hold the generation %s", g.ID)
	}
}

// openSealed opens a new database with a fresh secret key, for the test.
func openSealed(t *testing.T) (*postgres.DB, string) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(context.Background(), url, box, postgres.Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db, url
}

// TestBYOKKeysNotInDump checks that BYOK keys are sealed at rest: no
// column of any table holds one in the clear, before or after a rotation,
// while the gateway's read opens the current one.
func TestBYOKKeysNotInDump(t *testing.T) {
	ctx := context.Background()
	db, url := openSealed(t)
	org, err := db.CreateOrganization(ctx, "Acme")
	if err != nil {
		t.Fatalf("CreateOrganization: %v", err)
	}
	// A destination too: dumpTables wants one.
	if _, err := db.CreateDestination(ctx, org.ID, gatehouse.DestinationCreate{Type: "webhook", DestinationUpdate: gatehouse.DestinationUpdate{
		Name: gatehouse.Val("hook"), Config: &gatehouse.ConfigPatch{Values: map[string]*string{"url": new("https://hooks.example.com/in")}}}}); err != nil {
		t.Fatalf("CreateDestination: %v", err)
	}
	const (
		first   = "sk-proj-DUMPCHECK-first-0123456789"
		rotated = "sk-proj-DUMPCHECK-rotated-9876543210"
		name    = "DUMPCHECK-visible-byok-name"
	)
	k, err := db.CreateBYOKKey(ctx, org.ID, gatehouse.BYOKKeyCreate{Provider: "openai",
		BYOKKeyUpdate: gatehouse.BYOKKeyUpdate{Key: gatehouse.Val(first), Name: gatehouse.Val(name)}})
	if err != nil {
		t.Fatalf("CreateBYOKKey: %v", err)
	}
	if _, err := db.UpdateBYOKKey(ctx, org.ID, k.ID, gatehouse.BYOKKeyUpdate{Key: gatehouse.Val(rotated)}); err != nil {
		t.Fatalf("UpdateBYOKKey: %v", err)
	}
	keys, err := db.ProviderBYOKKeys(ctx, k.WorkspaceID, "openai")
	if err != nil || len(keys) != 1 || string(keys[0].Key) != rotated {
		t.Fatalf("ProviderBYOKKeys = %v, %v; want the rotated key back", keys, err)
	}
	dump := dumpTables(t, ctx, url, "byok_keys")
	for _, s := range []string{first, rotated} {
		if strings.Contains(dump, s) {
			t.Errorf("the database holds the BYOK key %q in the clear", s)
		}
	}
	if !strings.Contains(dump, name) {
		t.Errorf("the dump misses the BYOK key's row (no %q)", name)
	}
}

// dumpTables returns the text of every row of every table in the public
// schema of the database at url, one "table: row" line each.
func dumpTables(t *testing.T, ctx context.Context, url, want string) string {
	t.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`)
	if err != nil {
		t.Fatalf("list tables: %v", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) == 0 {
		t.Fatalf("list tables: %v, %v", tables, err)
	}
	var dump strings.Builder
	for _, table := range tables {
		rows, err := conn.Query(ctx, `SELECT t::text FROM `+pgx.Identifier{"public", table}.Sanitize()+` t`)
		if err != nil {
			t.Fatalf("dump %s: %v", table, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("dump %s: %v", table, err)
		}
		for _, l := range lines {
			dump.WriteString(table + ": " + l + "\n")
		}
	}
	if !strings.Contains(dump.String(), want+": ") {
		t.Fatalf("the dump has no %s row:\n%s", want, dump.String())
	}
	return dump.String()
}
