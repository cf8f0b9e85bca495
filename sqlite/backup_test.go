package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/sqlite"
)

// TestBackupUnderWriteLoad backs a database up while four writers create
// keys and settle metered requests through the store, then checks that
// the copy is one consistent moment: every writer's keys are a gapless
// prefix of what it wrote, at least what was acknowledged before the
// backup began, each key's usage equals its ledger entries. After the load
// a last backup, restored into a new file, holds every row of every table
// of the source, and the restored database opens and serves.
func TestBackupUnderWriteLoad(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	key := gatehouse.NewSecretKey()
	box, _ := gatehouse.NewSecretBox(key)
	path := filepath.Join(dir, "gatehouse.db")
	db, err := sqlite.Open(ctx, path, box)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	org, err := db.CreateOrganization(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}
	dest := createSecretDestination(t, db, org.ID)
	session, invitation := createConsoleAccount(t, db, org.ID)

	const writers = 4
	var acked [writers]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := writeOne(ctx, db, org.ID, w, n); err != nil {
					errs <- err
					return
				}
				acked[w].Store(int64(n + 1))
			}
		})
	}
	waitAcked := func(n int64) {
		deadline := time.Now().Add(30 * time.Second)
		for w := range writers {
			for acked[w].Load() < n {
				if time.Now().After(deadline) {
					t.Fatalf("writer %d acknowledged %d writes, want %d", w, acked[w].Load(), n)
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	waitAcked(20)
	var before [writers]int64
	for w := range writers {
		before[w] = acked[w].Load()
	}
	mid := filepath.Join(dir, "mid.db")
	info, err := sqlite.Backup(ctx, path, mid, false, nil)
	if err != nil {
		t.Fatalf("Backup under load: %v", err)
	}
	waitAcked(before[0] + 10) // the load went on during and after the copy
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a writer failed: %v", err)
	}
	if fi, err := os.Stat(mid); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("backup file: %v, mode %v; want mode 0600", err, fi.Mode().Perm())
	}
	if rowsOf(info, "api_keys") == 0 || rowsOf(info, "generations") == 0 {
		t.Errorf("the backup's tables: %+v", info.Tables)
	}
	checkConsistent(t, mid, writers, before[:])

	// No -wal, -shm or temporary file is left beside the backup.
	matches, _ := filepath.Glob(filepath.Join(dir, "mid.db*"))
	if len(matches) != 1 {
		t.Errorf("files beside the backup: %v, want mid.db alone", matches)
	}

	// After the load: a backup restored into a new file holds every row.
	last := filepath.Join(dir, "last.db")
	if _, err := sqlite.Backup(ctx, path, last, false, box); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(dir, "restored.db")
	kept, err := sqlite.Restore(ctx, last, restored, false)
	if err != nil || kept != "" {
		t.Fatalf("Restore into a new file = %q, %v", kept, err)
	}
	want := dumpAll(t, path)
	got := dumpAll(t, restored)
	if len(want) == 0 || len(want["api_keys"]) < writers*20 {
		t.Fatalf("source dump: %d tables, %d keys", len(want), len(want["api_keys"]))
	}
	for table, rows := range want {
		if !slices.Equal(rows, got[table]) {
			t.Errorf("table %s: restored %d rows, source %d (or they differ)", table, len(got[table]), len(rows))
		}
	}
	if len(got) != len(want) {
		t.Errorf("restored %d tables, source %d", len(got), len(want))
	}
	// The restored database opens with the same key and reads its secret.
	rdb, err := sqlite.Open(ctx, restored, box)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	d, err := rdb.FindDestination(ctx, org.ID, dest)
	if err != nil || d.Config.Values["secretKey"] != "sk-lf-backup-0123456789" {
		t.Errorf("the restored destination: %v, %v", d, err)
	}
	// Console sessions, passwords and links are kept.
	if _, err := rdb.FindSession(ctx, session); err != nil {
		t.Errorf("the restored console session: %v", err)
	}
	if _, err := rdb.FindInvitation(ctx, invitation); err != nil {
		t.Errorf("the restored invitation: %v", err)
	}
	if _, _, err := gatehouse.NewAccounts(rdb, nil).SignIn(ctx, "ada@example.com", "backed up password"); err != nil {
		t.Errorf("signing in with a restored password: %v", err)
	}
	info, err = sqlite.CheckBackup(ctx, last, box)
	if err != nil || info.Sealed != 1 || len(info.Unreadable) != 0 {
		t.Errorf("CheckBackup with the key: %+v, %v; want 1 sealed secret, all readable", info, err)
	}
	other, _ := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if info, err := sqlite.CheckBackup(ctx, last, other); err != nil || len(info.Unreadable) != 1 || info.Unreadable[0] != "destination "+dest {
		t.Errorf("CheckBackup with another key: %+v, %v; want %s unreadable", info, err, dest)
	}
}

// writeOne makes write n of writer w: a key named after both, and a
// metered request of it.
func writeOne(ctx context.Context, db *sqlite.DB, orgID string, w, n int) error {
	k, _, err := db.CreateKey(ctx, orgID, gatehouse.KeyCreate{Name: fmt.Sprintf("w%d-%05d", w, n)})
	if err != nil {
		return err
	}
	cost := gatehouse.Money(1000 * (n + 1))
	r := &gatehouse.Reservation{ID: fmt.Sprintf("r-%d-%d", w, n), KeyHash: k.Hash, Amount: cost, ExpiresAt: time.Now().Add(time.Minute)}
	if err := db.Reserve(ctx, r); err != nil {
		return err
	}
	return db.Settle(ctx, r.ID, &gatehouse.Generation{ID: gatehouse.NewGenerationID(), OrganizationID: orgID,
		WorkspaceID: k.WorkspaceID, KeyHash: k.Hash, Model: "fake/echo", Provider: "fake", PromptTokens: 1,
		CompletionTokens: 2, Cost: cost, Status: "completed"})
}

// createConsoleAccount makes a member with a password, signs them in and
// invites another: it returns the tokens of the session and the invitation.
func createConsoleAccount(t *testing.T, db *sqlite.DB, orgID string) (session, invitation string) {
	t.Helper()
	ctx := context.Background()
	accounts := gatehouse.NewAccounts(db, nil)
	_, token, err := db.CreateInvitation(ctx, orgID, gatehouse.InvitationCreate{Email: "ada@example.com"})
	if err == nil {
		_, err = accounts.AcceptInvitation(ctx, token, "backed up password")
	}
	if err == nil {
		_, session, err = accounts.SignIn(ctx, "ada@example.com", "backed up password")
	}
	if err == nil {
		_, invitation, err = db.CreateInvitation(ctx, orgID, gatehouse.InvitationCreate{Email: "grace@example.com"})
	}
	if err != nil {
		t.Fatal(err)
	}
	return session, invitation
}

func createSecretDestination(t *testing.T, db *sqlite.DB, orgID string) string {
	t.Helper()
	d, err := db.CreateDestination(context.Background(), orgID, gatehouse.DestinationCreate{
		Type: "langfuse",
		DestinationUpdate: gatehouse.DestinationUpdate{
			Name: gatehouse.Val("traces"),
			Config: &gatehouse.ConfigPatch{Values: map[string]*string{
				"publicKey": new("pk-lf-public"), "secretKey": new("sk-lf-backup-0123456789")}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return d.ID
}

// checkConsistent reads a backup: each writer's keys must be w<i>-00000
// up to some n without a gap, n at least the writes acknowledged before
// the backup began, and every key's usage equal to its ledger entries
// (written in the same transaction as the counter).
func checkConsistent(t *testing.T, file string, writers int, before []int64) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+file+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	names := map[int][]string{}
	rows, err := db.Query(`SELECT name FROM api_keys WHERE name LIKE 'w%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		rows.Scan(&name)
		var w, n int
		fmt.Sscanf(name, "w%d-%d", &w, &n)
		names[w] = append(names[w], name)
	}
	rows.Close()
	for w := range writers {
		for n, name := range names[w] {
			if want := fmt.Sprintf("w%d-%05d", w, n); name != want {
				t.Fatalf("writer %d: key %d of the backup is %s, want %s (a gap: not one consistent moment)", w, n, name, want)
			}
		}
		if int64(len(names[w])) < before[w] {
			t.Errorf("writer %d: the backup has %d keys, but %d were acknowledged before it began", w, len(names[w]), before[w])
		}
	}
	var mismatched int
	err = db.QueryRow(`SELECT count(*) FROM api_keys k WHERE k.name LIKE 'w%' AND k.usage_total <>
		(SELECT coalesce(sum(cost), 0) FROM generations g WHERE g.key_hash = k.hash)`).Scan(&mismatched)
	if err != nil || mismatched != 0 {
		t.Errorf("%d keys of the backup whose usage differs from their ledger (%v)", mismatched, err)
	}
}

// dumpAll renders every row of every table of a database file, each
// table's rows sorted.
func dumpAll(t *testing.T, file string) map[string][]string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+file+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tables []string
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	out := map[string][]string{}
	for _, table := range tables {
		rows, err := db.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for i, v := range vals {
				fmt.Fprintf(&b, "%s=%v|", cols[i], v)
			}
			out[table] = append(out[table], b.String())
		}
		rows.Close()
		slices.Sort(out[table])
	}
	return out
}

func rowsOf(info *sqlite.BackupInfo, table string) int {
	for _, t := range info.Tables {
		if t.Table == table {
			return t.Rows
		}
	}
	return 0
}

// TestBackupRefusals: a missing database is not created, an existing
// backup is not overwritten without replace, a file that is not a
// Gatehouse database is refused on restore, and a restore does not
// replace a database without replace; a replaced database is kept whole,
// with its log.
func TestBackupRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if _, err := sqlite.Backup(ctx, missing, filepath.Join(dir, "b.db"), false, nil); err == nil {
		t.Error("backup of a missing database succeeded")
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("backup created the missing database")
	}
	db := openDB(t, dir, time.Now)
	org, err := db.CreateOrganization(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(dir, "b.db")
	if _, err := sqlite.Backup(ctx, db.Path, b, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Backup(ctx, db.Path, b, false, nil); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second backup into %s: %v, want already exists", b, err)
	}
	if _, err := sqlite.Backup(ctx, db.Path, db.Path, true, nil); err == nil {
		t.Error("a backup onto the database itself succeeded")
	}
	junk := filepath.Join(dir, "junk.db")
	os.WriteFile(junk, []byte("not a database at all, just text"), 0o600)
	if _, err := sqlite.CheckBackup(ctx, junk, nil); err == nil {
		t.Error("CheckBackup accepted a text file")
	}
	empty := filepath.Join(dir, "empty.db")
	if e, err := sql.Open("sqlite", empty); err == nil {
		e.Exec(`CREATE TABLE t (x)`)
		e.Close()
	}
	if _, err := sqlite.CheckBackup(ctx, empty, nil); err == nil || !strings.Contains(err.Error(), "not a Gatehouse database") {
		t.Errorf("CheckBackup of a foreign SQLite file: %v", err)
	}
	// A database left as a crash leaves it: its last write only in its
	// -wal file (copied at once, before a checkpoint: the writer never
	// checkpoints in a commit). A forced restore keeps it whole, log
	// included, under another name, and never lets that log into the
	// restored file.
	if _, err := db.CreateOrganization(ctx, "After the backup"); err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(dir, "crashed.db")
	for _, suffix := range []string{"", "-wal"} {
		data, err := os.ReadFile(db.Path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(crashed+suffix, data, 0o600)
	}
	db.Close()
	// Its server was killed with charges in its journal: they go with it.
	journal := sqlite.JournalPath(crashed) + ".3"
	if err := os.WriteFile(journal, []byte("charges"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Restore(ctx, b, crashed, false); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("restore over a database without replace: %v", err)
	}
	kept, err := sqlite.Restore(ctx, b, crashed, true)
	if err != nil || kept == "" {
		t.Fatalf("forced restore = %q, %v", kept, err)
	}
	if _, err := os.Stat(crashed + "-wal"); err == nil {
		t.Errorf("the replaced database's log is still beside the restored one")
	}
	if _, err := os.Stat(journal); err == nil {
		t.Errorf("the replaced database's charge journal is still beside the restored one")
	}
	if data, err := os.ReadFile(sqlite.JournalPath(kept) + ".3"); err != nil || string(data) != "charges" {
		t.Errorf("the replaced database's charge journal was not kept with it: %q, %v", data, err)
	}
	if n := count(t, kept, `SELECT count(*) FROM organizations`); n != 2 {
		t.Errorf("the kept database has %d organizations, want both", n)
	}
	if n := count(t, crashed, `SELECT count(*) FROM organizations WHERE id = '`+org.ID+`'`); n != 1 || count(t, crashed, `SELECT count(*) FROM organizations`) != 1 {
		t.Errorf("the restored database does not hold exactly the backed-up organization")
	}
}

func count(t *testing.T, file, query string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+file+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s on %s: %v", query, file, err)
	}
	return n
}

// TestCheckBackupRefusesNewerSchema: a backup that a newer Gatehouse
// migrated is refused before anything is restored: this binary would
// refuse to open it.
func TestCheckBackupRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "g.db")
	box, _ := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	db, err := sqlite.Open(ctx, path, box)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO schema_migrations (name, applied_at) VALUES ('migration/0099_future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	if _, err := sqlite.CheckBackup(ctx, path, box); err == nil || !strings.Contains(err.Error(), "newer Gatehouse") ||
		!strings.Contains(err.Error(), "0099_future") {
		t.Errorf("CheckBackup of a newer schema: %v", err)
	}
}
