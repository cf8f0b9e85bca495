package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/postgres"
	"gatehouse/postgres/pgtest"
	"gatehouse/sqlite"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// placed are the tables of the lists' anchors and blocks, which each
// database's store places from the rows it holds (sqlstore.CloseListBlocks)
// and migrate-data does not copy.
var placed = map[string]bool{"list_anchors": true, "list_blocks": true}

// TestMigrateData fills every table of a SQLite database through the
// store (a soft-deleted destination, spend settled into the ledger and the
// budgets, a reservation still held), copies it into PostgreSQL, finds
// every row there value for value, then serves the copy.
func TestMigrateData(t *testing.T) {
	ctx := context.Background()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	secretKey := base64.StdEncoding.EncodeToString(secret)
	box, _ := gatehouse.NewSecretBox(secret)

	path := filepath.Join(t.TempDir(), "source.db")
	src, err := sqlite.Open(ctx, path, box)
	if err != nil {
		t.Fatal(err)
	}
	f := fillSource(t, src)
	src.Close()
	tables := sqliteTables(t, path)
	for _, tb := range tables {
		if placed[tb.name] {
			continue // no block is kept until a list has thousands of rows
		}
		if n := countRows(t, path, `SELECT count(*) FROM `+tb.name); n == 0 {
			t.Errorf("table %s of the source is empty: fillSource must give every table rows, or the copy of its rows goes unchecked", tb.name)
		}
	}

	target := pgtest.NewDatabase(t)
	// A server killed on the source left charges in its journal: copying
	// without them would lose them, so the copy is refused.
	journal := sqlite.JournalPath(path) + ".1"
	if err := os.WriteFile(journal, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCommand(map[string]string{}, "migrate-data", "--from", path, "--to", target); err == nil ||
		!strings.Contains(err.Error(), "start gatehouse serve on it once") {
		t.Errorf("migrate-data beside a charge journal: %v, want a refusal that says what to do", err)
	}
	os.Remove(journal)
	stdout, stderr, err := runCommand(map[string]string{}, "migrate-data", "--from", path, "--to", target)
	if err != nil {
		t.Fatalf("migrate-data: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	for _, tb := range tables {
		if tb.name == "list_counts" || tb.name == "list_bases" || placed[tb.name] {
			continue // not copied: the target's triggers count what is copied (compareDatabases sums them), and it has its own
		}
		if want := fmt.Sprintf("%-20s %d rows", tb.name, countRows(t, path, `SELECT count(*) FROM `+tb.name)); !strings.Contains(stdout, want) {
			t.Errorf("migrate-data does not report %q:\n%s", want, stdout)
		}
	}
	compareDatabases(t, path, target, tables)
	checkMigratedServes(t, target, secretKey, box, f)

	// A second migration into the filled database is refused.
	if _, _, err := runCommand(map[string]string{}, "migrate-data", "--from", path, "--to", target); err == nil ||
		!strings.Contains(err.Error(), "already holds data") {
		t.Errorf("migrating into a non-empty database: %v, want a refusal", err)
	}
}

// migrated is what fillSource made, for checks on the copy.
type migrated struct {
	org                 *gatehouse.Organization
	mgmt                string
	key                 *gatehouse.Key
	live, gone          *gatehouse.Destination
	byok                *gatehouse.BYOKKey
	settled, pending    gatehouse.Money
	mintedPending       gatehouse.Money // held by a key minted from key, against key too
	generation          string          // settled with its content sealed, and feedback
	session, keySession string          // console sessions' tokens: a member's, the management key's
	invitation          string          // a pending invitation's token
}

// fillSource writes rows into every table through the store.
func fillSource(t *testing.T, src *sqlite.DB) *migrated {
	t.Helper()
	ctx := context.Background()
	f := &migrated{}
	var err error
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	f.org, err = src.CreateOrganization(ctx, "Migrated")
	must(err)
	_, f.mgmt, err = src.CreateManagementKey(ctx, f.org.ID, "mgmt")
	must(err)
	member, err := src.CreateMember(ctx, f.org.ID, gatehouse.MemberCreate{Email: "ada@example.com"})
	must(err)
	ws, err := src.CreateWorkspace(ctx, f.org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Team"), Slug: gatehouse.Val("team")}, nil)
	must(err)
	_, _, err = src.AddWorkspaceMembers(ctx, f.org.ID, ws.ID, []string{member.ID})
	must(err)
	limit := gatehouse.USD(10)
	f.key, _, err = src.CreateKey(ctx, f.org.ID, gatehouse.KeyCreate{Name: "metered", Limit: &limit, LimitReset: gatehouse.Daily, CreatorUserID: &member.ID})
	must(err)
	for _, spend := range []struct {
		amount gatehouse.Money
		byok   bool
	}{{gatehouse.Money(1_500_000_000), false}, {gatehouse.Money(250_000_000), true}} {
		_, err := src.RecordUsage(ctx, f.key.Hash, spend.amount, spend.byok)
		must(err)
	}
	g, err := src.CreateGuardrail(ctx, f.org.ID, gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{
		Name: gatehouse.Val("g"), AllowedProviders: gatehouse.Val([]string{"openai"}), EnforceZDR: gatehouse.Val(true),
		LimitUSD: gatehouse.Val(gatehouse.USD(5)), ResetInterval: gatehouse.Val(gatehouse.Monthly)}})
	must(err)
	_, err = src.AssignKeys(ctx, f.org.ID, g.ID, []string{f.key.Hash}, nil)
	must(err)
	_, err = src.AssignMembers(ctx, f.org.ID, g.ID, []string{member.ID}, nil)
	must(err)
	_, err = src.CreateAuthCode(ctx, f.org.ID, nil, gatehouse.AuthCodeCreate{CallbackURL: "https://app.example.com/cb"})
	must(err)
	_, err = src.SetWorkspaceBudget(ctx, f.org.ID, "team", gatehouse.Monthly, gatehouse.WorkspaceBudgetSet{LimitUSD: gatehouse.Val(gatehouse.USD(100))})
	must(err)
	_, err = src.GrantCredits(ctx, f.org.ID, gatehouse.USD(1000))
	must(err)
	newDest := func(name, secretValue string) *gatehouse.Destination {
		d, err := src.CreateDestination(ctx, f.org.ID, gatehouse.DestinationCreate{Type: "langfuse", DestinationUpdate: gatehouse.DestinationUpdate{
			Name: gatehouse.Val(name), Config: &gatehouse.ConfigPatch{Values: map[string]*string{
				"publicKey": new("pk-lf-1"), "secretKey": new(secretValue)}}}})
		must(err)
		return d
	}
	f.live = newDest("live", "sk-lf-live-0123456789")
	f.gone = newDest("gone", "sk-lf-gone-0123456789")
	must(src.DeleteDestination(ctx, f.org.ID, f.gone.ID))
	// An instance's name, as a process on PostgreSQL registers it (a SQLite
	// database's process does not), for the copy of the table.
	src.SetInstance("instance-registered")
	must(src.RegisterInstance(ctx))
	src.SetInstance("")
	// A delivery waiting in the outbox, and the destination's status.
	must(src.AddTraces(ctx, "instance-migrated", time.Now().Add(time.Hour), []gatehouse.OutboxEntry{{ID: "obx-migrated",
		OrganizationID: f.org.ID, WorkspaceID: f.live.WorkspaceID, DestinationID: f.live.ID, Event: []byte(`{"KeyName":"k"}`)}}))
	must(src.RecordDeliveries(ctx, []gatehouse.DeliveryCount{{DestinationID: f.live.ID, OrganizationID: f.org.ID,
		WorkspaceID: f.live.WorkspaceID, DeliveryStatus: gatehouse.DeliveryStatus{Sent: 3, Dropped: 1}}}))
	f.byok, err = src.CreateBYOKKey(ctx, f.org.ID, gatehouse.BYOKKeyCreate{Provider: "openai", WorkspaceID: ws.ID,
		BYOKKeyUpdate: gatehouse.BYOKKeyUpdate{Key: gatehouse.Val("sk-proj-migrated-0123456789"), Name: gatehouse.Val("team key"),
			AllowedUserIDs: gatehouse.Val([]string{member.ID}), DeclaredZDR: gatehouse.Val(true)}})
	must(err)
	f.settled, f.pending = gatehouse.USD(1)/2, gatehouse.USD(1)/4
	// The key's workspace logs I/O: the settled call keeps its content.
	_, err = src.UpdateWorkspace(ctx, f.org.ID, "default", gatehouse.WorkspaceUpdate{IsObservabilityIOLoggingEnabled: gatehouse.Val(true)})
	must(err)
	spendThroughGateway(t, src, f)
	_, err = src.CreateFeedback(ctx, f.org.ID, gatehouse.FeedbackCreate{GenerationID: f.generation, Category: gatehouse.FeedbackOther,
		Comment: new("migrated feedback")})
	must(err)
	// A key minted through OAuth from the metered key holds a reservation
	// against its parent too (reservation_holds).
	code, err := src.CreateAuthCode(ctx, f.org.ID, &member.ID, gatehouse.AuthCodeCreate{
		CallbackURL: "https://minted.example.com/cb", CreatorKeyHash: f.key.Hash})
	must(err)
	plaintext, _, err := src.ExchangeAuthCode(ctx, gatehouse.AuthCodeExchange{Code: code.ID})
	must(err)
	f.mintedPending = gatehouse.USD(1) / 10
	must(src.Reserve(ctx, &gatehouse.Reservation{ID: uuid.NewString(), KeyHash: gatehouse.HashKey(plaintext),
		Amount: f.mintedPending, ExpiresAt: time.Now().Add(time.Hour)}))
	// A preset with two versions (presets, preset_versions).
	for _, temperature := range []string{"0.2", "0.7"} {
		_, _, err = src.SavePreset(ctx, f.org.ID, "team", "support-bot", gatehouse.PresetDraft{
			Config:       gatehouse.PresetConfig{"model": []byte(`"openai/gpt-4o-mini"`), "temperature": []byte(temperature)},
			SystemPrompt: new("Be brief.")})
		must(err)
	}
	fillAccounts(t, src, f)
	fillSSO(t, src, f)
	return f
}

// fillSSO gives the organization an identity provider that signed someone
// in with groups (sso_providers, sso_identities, member_claim_groups), a
// sign-in under way (sso_logins), a mapping of a group to a workspace
// (group_mappings, group_mapping_workspaces), sign-in settings, and SCIM's
// token, a user and a group (scim_tokens, scim_users, scim_groups,
// scim_group_members).
func fillSSO(t *testing.T, src *sqlite.DB, f *migrated) {
	t.Helper()
	ctx := context.Background()
	ws, err := src.FindWorkspace(ctx, f.org.ID, "team")
	if err != nil {
		t.Fatal(err)
	}
	p, err := src.CreateSSOProvider(ctx, f.org.ID, gatehouse.SSOProviderUpdate{Name: gatehouse.Val("Okta"),
		IssuerURL: gatehouse.Val("https://acme.okta.example"), ClientID: gatehouse.Val("c"), ClientSecret: gatehouse.Val("a migrated client secret"),
		AllowedDomains: gatehouse.Val([]string{"example.com"})})
	if err == nil {
		_, err = src.CreateGroupMapping(ctx, f.org.ID, gatehouse.GroupMappingUpdate{Group: gatehouse.Val("team"), WorkspaceIDs: gatehouse.Val([]string{ws.ID})})
	}
	if err == nil {
		_, _, err = src.SignInWithSSO(ctx, gatehouse.SSOSignIn{ProviderID: p.ID, Subject: "sub-sso", Email: "sso@example.com",
			EmailVerified: true, Groups: []string{"team"}, GroupsGiven: true})
	}
	if err == nil {
		err = src.CreateSSOLogin(ctx, gatehouse.NewSSOState(), gatehouse.SSOLogin{ProviderID: p.ID,
			NonceHash: gatehouse.HashNonce("n"), Verifier: "a verifier", Next: "/"})
	}
	for _, on := range []bool{false, true} { // leaves a row, passwords on
		if err == nil {
			_, err = src.UpdateSignInSettings(ctx, f.org.ID, gatehouse.SignInSettingsUpdate{PasswordSignIn: gatehouse.Val(on)})
		}
	}
	if err == nil {
		_, _, err = src.CreateSCIMToken(ctx, f.org.ID)
	}
	var u *gatehouse.SCIMUser
	if err == nil {
		u, err = src.CreateSCIMUser(ctx, f.org.ID, gatehouse.SCIMUserWrite{UserName: "scim@example.com", Active: true})
	}
	if err == nil {
		_, err = src.CreateSCIMGroup(ctx, f.org.ID, gatehouse.SCIMGroupWrite{DisplayName: "team", MemberIDs: []string{u.ID}})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// fillAccounts gives a member a password through an invitation, opens a
// console session of theirs and one of the management key, and leaves an
// invitation pending (console_sessions, invitations).
func fillAccounts(t *testing.T, src *sqlite.DB, f *migrated) {
	t.Helper()
	ctx := context.Background()
	accounts := gatehouse.NewAccounts(src, nil)
	_, token, err := src.CreateInvitation(ctx, f.org.ID, gatehouse.InvitationCreate{Email: "grace@example.com", Role: gatehouse.RoleAdmin})
	if err == nil {
		_, err = accounts.AcceptInvitation(ctx, token, "migrated password")
	}
	if err == nil {
		_, f.session, err = accounts.SignIn(ctx, "grace@example.com", "migrated password")
	}
	if err == nil {
		_, f.keySession, err = accounts.SignInWithKey(ctx, f.mgmt)
	}
	if err == nil {
		_, f.invitation, err = src.CreateInvitation(ctx, f.org.ID, gatehouse.InvitationCreate{Email: "pending@example.com"})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// spendThroughGateway meters requests of f.key as the gateway does: one
// reserved and settled into the ledger and the budget counters, one still
// holding its reservation.
func spendThroughGateway(t *testing.T, usage gatehouse.UsageService, f *migrated) {
	t.Helper()
	ctx := context.Background()
	applied, err := usage.GuardrailsForKey(ctx, f.key)
	if err != nil {
		t.Fatal(err)
	}
	budgets := gatehouse.Budgets(applied)
	if len(budgets) == 0 {
		t.Fatal("the key has no budget: reservation_budgets and guardrail_usage would stay empty")
	}
	reserve := func(amount gatehouse.Money) *gatehouse.Reservation {
		r := &gatehouse.Reservation{ID: uuid.NewString(), KeyHash: f.key.Hash, Amount: amount, Budgets: budgets,
			ExpiresAt: time.Now().Add(time.Hour)}
		if err := usage.Reserve(ctx, r); err != nil {
			t.Fatalf("Reserve: %v", err)
		}
		return r
	}
	r := reserve(f.settled)
	f.generation = gatehouse.NewGenerationID()
	if err := usage.Settle(ctx, r.ID, &gatehouse.Generation{ID: f.generation, OrganizationID: f.org.ID,
		WorkspaceID: f.key.WorkspaceID, KeyHash: f.key.Hash, Model: "openai/gpt-4o-mini", Provider: "openai",
		UpstreamID: new("chatcmpl-1"), PromptTokens: 12, CompletionTokens: 34, Cost: f.settled, Streamed: true,
		FinishReason: new("stop"), Status: "completed", LatencyMS: 120, GenerationMS: 100,
		SessionID: new("session-1"), ExternalUser: new("user-1"), HTTPReferer: new("https://app.example.com/"),
		AppTitle: new("App"), UserAgent: new("curl/8"),
		Content: &gatehouse.GenerationContent{Messages: json.RawMessage(`[{"role":"user","content":"migrate me"}]`),
			Completion: new("migrated")}}); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	reserve(f.pending)
}

// dbTable is a table of the source's schema and its columns.
type dbTable struct {
	name    string
	columns []string
}

// sqliteTables lists the tables of the SQLite file, as the schema has them,
// but for SQLite's own and schema_migrations.
func sqliteTables(t *testing.T, path string) []dbTable {
	t.Helper()
	db := openSQLite(t, path)
	var tables []dbTable
	for _, name := range queryStrings(t, db, `SELECT name FROM sqlite_schema
		WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations' ORDER BY name`) {
		tables = append(tables, dbTable{name, queryStrings(t, db, `SELECT name FROM pragma_table_info(?)`, name)})
	}
	if len(tables) == 0 {
		t.Fatal("no table in the source")
	}
	return tables
}

func openSQLite(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func queryStrings(t *testing.T, db *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// compareDatabases requires the same tables in both databases, and every
// row of the source in the target with the same values, column by column
// (PostgreSQL's booleans read as SQLite's 0 and 1).
func compareDatabases(t *testing.T, path, url string, tables []dbTable) {
	t.Helper()
	ctx := context.Background()
	src := openSQLite(t, path)
	dst, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close(ctx)
	rows, _ := dst.Query(ctx, `SELECT table_name::text FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations' ORDER BY 1`)
	pgNames, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tb := range tables {
		names = append(names, tb.name)
	}
	if !slices.Equal(names, pgNames) {
		t.Errorf("tables: SQLite has %v, PostgreSQL %v", names, pgNames)
	}
	for _, tb := range tables {
		if placed[tb.name] {
			continue
		}
		query, columns := `SELECT `+strings.Join(tb.columns, ", ")+` FROM `+tb.name, tb.columns
		if tb.name == "list_counts" {
			// Kept by triggers, in blocks on PostgreSQL: the counts must
			// agree, not the rows (the keys list's version is the
			// target's own); a count of 0 is no count.
			query = `SELECT list, scope, CAST(SUM(n) AS BIGINT) FROM list_counts WHERE list <> 'key_list_version' GROUP BY list, scope HAVING SUM(n) <> 0`
			columns = []string{"list", "scope", "sum(n)"}
		}
		want, got := sortedRows(t, sqliteRows(t, src, query)), sortedRows(t, pgRows(t, dst, query))
		if len(want) != len(got) {
			t.Errorf("%s: %d rows in PostgreSQL, %d in SQLite", tb.name, len(got), len(want))
			continue
		}
		for i := range want {
			for j, c := range columns {
				if want[i][j] != got[i][j] {
					t.Errorf("%s row %d, column %s: %#v in PostgreSQL, %#v in SQLite", tb.name, i, c, got[i][j], want[i][j])
				}
			}
		}
	}
}

func sqliteRows(t *testing.T, db *sql.DB, query string) [][]any {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]any
	for rows.Next() {
		vals, ptrs := make([]any, len(cols)), make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func pgRows(t *testing.T, conn *pgx.Conn, query string) [][]any {
	t.Helper()
	rows, err := conn.Query(context.Background(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]any, error) {
		vals, err := r.Values()
		for i, v := range vals {
			if b, ok := v.(bool); ok {
				vals[i] = map[bool]int64{false: 0, true: 1}[b]
			}
		}
		return vals, err
	})
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}

// sortedRows orders rows by their printed values: the engines sort text
// by different collations.
func sortedRows(t *testing.T, rows [][]any) [][]any {
	t.Helper()
	slices.SortFunc(rows, func(a, b []any) int { return strings.Compare(fmt.Sprintf("%#v", a), fmt.Sprintf("%#v", b)) })
	return rows
}

// checkMigratedServes serves the copy with the source's secret key and
// finds the key's usage, the destinations and the OAuth apps' identity.
func checkMigratedServes(t *testing.T, target, secretKey string, box *gatehouse.SecretBox, f *migrated) {
	t.Helper()
	ctx := context.Background()
	s := startServer(t, map[string]string{"GATEHOUSE_DATABASE_URL": target, "GATEHOUSE_SECRET_KEY": secretKey}, "--addr", "127.0.0.1:0")
	status, body := s.do("GET", "/api/v1/keys/"+f.key.Hash, f.mgmt, nil)
	if status != http.StatusOK {
		t.Fatalf("GET the migrated key: %d %v", status, body)
	}
	data := body["data"].(map[string]any)
	if data["usage"] != 2.0 || data["byok_usage"] != 0.25 || data["usage_daily"] != 2.0 {
		t.Errorf("usage after migration: %v, want 1.5 recorded and 0.5 settled, 0.25 BYOK", data)
	}
	if status, _ := s.do("GET", "/api/v1/observability/destinations/"+f.gone.ID, f.mgmt, nil); status != http.StatusNotFound {
		t.Errorf("soft-deleted destination: %d, want 404", status)
	}
	pg, err := postgres.Open(ctx, target, box, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	d, err := pg.FindDestination(ctx, f.org.ID, f.live.ID)
	if err != nil || d.Config.Values["secretKey"] != "sk-lf-live-0123456789" {
		t.Errorf("migrated destination secret: %v, %v", d, err)
	}
	// Content is copied still sealed, and opens with the same key.
	if sc, err := pg.FindGenerationContent(ctx, f.org.ID, f.generation, time.Time{}); err != nil || sc.Content == nil ||
		*sc.Content.Completion != "migrated" {
		t.Errorf("migrated generation content: %+v, %v", sc, err)
	}
	// The BYOK key still opens, with the same secret key.
	keys, err := pg.ProviderBYOKKeys(ctx, f.byok.WorkspaceID, "openai")
	if err != nil || len(keys) != 1 || string(keys[0].Key) != "sk-proj-migrated-0123456789" || keys[0].ID != f.byok.ID {
		t.Errorf("migrated BYOK key: %v, %v", keys, err)
	}
	// Console sessions and links work in the copy; so does the password.
	for _, token := range []string{f.session, f.keySession} {
		if _, err := pg.FindSession(ctx, token); err != nil {
			t.Errorf("a migrated console session: %v", err)
		}
	}
	if _, err := pg.FindInvitation(ctx, f.invitation); err != nil {
		t.Errorf("a migrated invitation: %v", err)
	}
	if _, _, err := gatehouse.NewAccounts(pg, nil).SignIn(ctx, "grace@example.com", "migrated password"); err != nil {
		t.Errorf("signing in with a migrated password: %v", err)
	}
	// The identity of oauth_apps continues after the copied ids.
	if _, err := pg.CreateAuthCode(ctx, f.org.ID, nil, gatehouse.AuthCodeCreate{CallbackURL: "https://other.example.com/cb"}); err != nil {
		t.Errorf("a new OAuth app after migration: %v", err)
	}
	// The reservations still held count against the key's limit: 10 less
	// 2 spent less the 0.25 it holds less the 0.10 its minted key holds.
	err = pg.Reserve(ctx, &gatehouse.Reservation{ID: uuid.NewString(), KeyHash: f.key.Hash, Amount: gatehouse.USD(8) - f.pending - f.mintedPending + 1,
		ExpiresAt: time.Now().Add(time.Minute)})
	if gatehouse.ErrorCode(err) != gatehouse.EPAYMENT {
		t.Errorf("Reserve past what the migrated reservation leaves: %v, want %s", err, gatehouse.EPAYMENT)
	}
}
