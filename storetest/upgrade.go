package storetest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

// The previous release, whose databases the current code must upgrade:
// its migrations (names and content) and rows it wrote (see
// testdata/release-31ba065/README.md).
//
//go:embed testdata/release-31ba065/migrations.sha256 testdata/release-31ba065/data.sql
var previousRelease embed.FS

const releaseDir = "testdata/release-31ba065"

// ReleaseTime is an instant of the day when the previous release wrote
// its rows: a store checked by CheckUpgraded must read the time from a
// clock set to it, so that the rows' usage periods are current.
var ReleaseTime = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// Migration is one migration file: its name as schema_migrations records
// it ("migration/0001_init.sql") and its statements.
type Migration struct {
	Name, SQL string
}

// PreviousRelease returns what the previous release applied to a database
// of an engine ("sqlite" or "postgres"): its migrations in order, read
// from the engine's migration directory (dir, on disk), each checked to be
// unchanged since that release, and its rows (SQL both engines run).
func PreviousRelease(t *testing.T, engine, dir string) ([]Migration, string) {
	t.Helper()
	sums, err := previousRelease.ReadFile(path.Join(releaseDir, "migrations.sha256"))
	if err != nil {
		t.Fatal(err)
	}
	var out []Migration
	sc := bufio.NewScanner(strings.NewReader(string(sums)))
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok || !strings.HasPrefix(file, engine+"/migration/") {
			continue
		}
		body, err := os.ReadFile(filepath.Join(dir, path.Base(file)))
		if err != nil {
			t.Fatalf("migration %s of the previous release: %v (a released migration must never be removed)", file, err)
		}
		got := sha256.Sum256(body)
		if hex.EncodeToString(got[:]) != sum {
			t.Fatalf("migration %s changed since the previous release: databases it migrated do not have the schema the file now "+
				"makes. Put the change in a new migration and restore the file", file)
		}
		out = append(out, Migration{Name: "migration/" + path.Base(file), SQL: string(body)})
	}
	if len(out) == 0 {
		t.Fatalf("no migrations of %s in %s", engine, releaseDir)
	}
	data, err := previousRelease.ReadFile(path.Join(releaseDir, "data.sql"))
	if err != nil {
		t.Fatal(err)
	}
	return out, string(data)
}

// The rows of data.sql.
const (
	releaseOrg       = "a0000000-0000-4000-8000-000000000001"
	releaseWorkspace = "b0000000-0000-4000-8000-000000000001"
	releaseTeam      = "b0000000-0000-4000-8000-000000000002"
	releaseGuardrail = "c0000000-0000-4000-8000-000000000001"
	releaseDest      = "f1000000-0000-4000-8000-000000000001"
)

var (
	releaseMgmtKey    = "sk-gh-mgmt-v1-" + strings.Repeat("0", 63) + "1"
	releaseRegularKey = "sk-gh-v1-" + strings.Repeat("0", 63) + "2"
)

// CheckUpgraded checks, through store, a database that the previous
// release filled with its rows and the current code then migrated: every
// row reads back as the release wrote it, the reservation its crash left
// open is charged, and the usual writes work. The store's clock must read
// ReleaseTime.
func CheckUpgraded(t *testing.T, store gatehouse.Store) {
	t.Helper()
	ctx := context.Background()
	org, err := store.FindOrganization(ctx, releaseOrg)
	if err != nil || org.Name != "Upgraded Org" {
		t.Fatalf("FindOrganization = %+v, %v; want Upgraded Org", org, err)
	}
	mgmt, err := store.FindKeyByHash(ctx, gatehouse.HashKey(releaseMgmtKey))
	if err != nil || !mgmt.Management || mgmt.OrganizationID != releaseOrg {
		t.Fatalf("the management key: %+v, %v", mgmt, err)
	}
	key, err := store.FindKey(ctx, releaseOrg, gatehouse.HashKey(releaseRegularKey))
	if err != nil {
		t.Fatalf("FindKey: %v", err)
	}
	if key.Name != "ci" || key.Limit == nil || *key.Limit != gatehouse.USD(10) || key.LimitReset != gatehouse.Monthly ||
		key.WorkspaceID != releaseWorkspace || key.CreatorUserID == nil || *key.CreatorUserID != "user_ada" {
		t.Errorf("the regular key read back as %+v", key)
	}
	quarter := gatehouse.Money(250_000_000)
	if u := key.Usage.At(ReleaseTime); u != (gatehouse.Usage{Total: quarter, Daily: quarter, Weekly: quarter, Monthly: quarter}) {
		t.Errorf("the regular key's usage = %+v, want $0.25 in every period", u)
	}
	team, err := store.FindWorkspace(ctx, releaseOrg, "team")
	if err != nil || team.ID != releaseTeam || team.Description == nil || *team.Description != "the team" {
		t.Errorf("FindWorkspace(team) = %+v, %v", team, err)
	}
	members, n, err := store.FindWorkspaceMembers(ctx, releaseOrg, "team", page(0, 10))
	if err != nil || n != 1 || members[0].UserID != "user_ada" {
		t.Errorf("FindWorkspaceMembers(team) = %v (%d), %v; want user_ada", members, n, err)
	}
	g, err := store.FindGuardrail(ctx, releaseOrg, releaseGuardrail)
	if err != nil || g.Name != "no-frontier" || len(g.AllowedProviders) != 1 || g.AllowedProviders[0] != "openai" ||
		g.LimitUSD == nil || *g.LimitUSD != gatehouse.USD(5) {
		t.Errorf("FindGuardrail = %+v, %v", g, err)
	}
	assigned, n, err := store.FindKeyAssignments(ctx, releaseOrg, releaseGuardrail, page(0, 10))
	if err != nil || n != 1 || assigned[0].KeyHash != key.Hash {
		t.Errorf("FindKeyAssignments = %v (%d), %v; want the regular key", assigned, n, err)
	}
	d, err := store.FindDestination(ctx, releaseOrg, releaseDest)
	if err != nil || d.Type != "webhook" || d.Config.Values["url"] != "https://hooks.example.com/gatehouse" {
		t.Errorf("FindDestination = %+v, %v", d, err)
	}
	gen, err := store.FindGeneration(ctx, releaseOrg, "gen-upgrade0000000000000001")
	if err != nil || gen.Cost != quarter || gen.Status != gatehouse.GenerationCompleted {
		t.Errorf("FindGeneration = %+v, %v", gen, err)
	}
	entries, n, err := store.FindAuditEntries(ctx, releaseOrg, gatehouse.AuditFilter{Page: page(0, 10)})
	if err != nil || n != 1 || entries[0].Operation != gatehouse.OpKeyCreate || entries[0].RequestID == nil || *entries[0].RequestID != "req-upgrade-1" {
		t.Errorf("FindAuditEntries = %v (%d), %v; want the key's creation", entries, n, err)
	}

	// The release crashed with a $0.05 reservation open: charged at the
	// next start, to the key and its guardrail's budget.
	charged, err := store.ChargeOpen(ctx, time.Time{})
	if err != nil || charged != 1 {
		t.Fatalf("ChargeOpen = %d, %v; want the release's open reservation charged", charged, err)
	}
	gen, err = store.FindGeneration(ctx, releaseOrg, "gen-upgrade0000000000000002")
	if err != nil || gen.Cost != 50_000_000 || gen.Status != gatehouse.GenerationPartial {
		t.Errorf("the charged reservation's generation = %+v, %v", gen, err)
	}
	key, err = store.FindKey(ctx, releaseOrg, key.Hash)
	if err != nil || key.Usage.At(ReleaseTime).Total != 300_000_000 {
		t.Errorf("the key's usage after the charge = %+v, %v; want $0.30", key, err)
	}
	budget, _, err := store.BudgetUsage(ctx, releaseGuardrail, "key:"+key.Hash)
	if err != nil || budget.Monthly != 300_000_000 {
		t.Errorf("the budget's usage after the charge = %+v, %v; want $0.30", budget, err)
	}

	// New writes work on the upgraded schema.
	if _, _, err := store.CreateKey(ctx, releaseOrg, gatehouse.KeyCreate{Name: "after the upgrade", WorkspaceID: "team"}); err != nil {
		t.Errorf("CreateKey after the upgrade: %v", err)
	}
	if _, err := store.UpdateGuardrail(ctx, releaseOrg, releaseGuardrail, gatehouse.GuardrailUpdate{Description: gatehouse.Val("kept")}); err != nil {
		t.Errorf("UpdateGuardrail after the upgrade: %v", err)
	}
	if _, err := store.RecordUsage(ctx, key.Hash, 10_000_000, false); err != nil {
		t.Errorf("RecordUsage after the upgrade: %v", err)
	}
}
