package main

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/sqlite"
	"gatehouse/storetest"
)

// TestBackupAndRestore: `gatehouse backup` copies the database of a
// running server under a load of key creations, with its secret key
// beside it (both 0600); `restore` refuses while a server serves the
// target, restores into a new path with the key installed, and a server
// started on the restored database has every key acknowledged before the
// backup began and reads its destination secrets.
func TestBackupAndRestore(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gatehouse.db")
	s := startServer(t, nil, "--addr", "127.0.0.1:0", "--database", db)
	mgmt := printedKeys(t, s.stderr.String())[0]
	destID, masked := s.createDestination(t, mgmt)

	var mu sync.Mutex
	var created []string
	var stop atomic.Bool
	var load sync.WaitGroup
	for c := range 3 {
		load.Go(func() {
			for n := 0; !stop.Load(); n++ {
				status, body := s.do("POST", "/api/v1/keys", mgmt, map[string]any{"name": fmt.Sprintf("load-%d-%d", c, n)})
				if status != http.StatusCreated {
					t.Errorf("POST /keys under backup = %d %v", status, body)
					return
				}
				data, _ := body["data"].(map[string]any)
				mu.Lock()
				created = append(created, str(data["hash"]))
				mu.Unlock()
			}
		})
	}
	waitFor(t, "keys created", func() bool { mu.Lock(); defer mu.Unlock(); return len(created) >= 30 })
	mu.Lock()
	acknowledged := append([]string(nil), created...)
	mu.Unlock()
	backup := filepath.Join(dir, "backups", "gatehouse-1.db")
	os.MkdirAll(filepath.Dir(backup), 0o700)
	out, _, err := cli(t, nil, "backup", "--database", db, "--to", backup)
	stop.Store(true)
	load.Wait()
	if err != nil {
		t.Fatalf("backup beside a running server: %v", err)
	}
	if !strings.Contains(out, "api_keys") || !strings.Contains(out, backup+".key") {
		t.Errorf("backup output:\n%s", out)
	}
	for _, f := range []string{backup, backup + ".key"} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, want mode 0600", f, err)
		}
	}
	if mustRead(t, backup+".key") != mustRead(t, db+".key") {
		t.Errorf("the backup's key file differs from the server's key file")
	}

	// The target is being served: refused, and nothing changes.
	if _, _, err := cli(t, nil, "restore", "--from", backup, "--database", db, "--force"); err == nil ||
		!strings.Contains(err.Error(), "restore refused") || !strings.Contains(err.Error(), "serving") {
		t.Errorf("restore over a served database: %v, want refused", err)
	}
	if matches, _ := filepath.Glob(db + ".replaced-*"); len(matches) != 0 {
		t.Errorf("a refused restore moved the database: %v", matches)
	}
	s.stop()

	restored := filepath.Join(dir, "restored", "gatehouse.db")
	os.MkdirAll(filepath.Dir(restored), 0o700)
	out, _, err = cli(t, nil, "restore", "--from", backup, "--database", restored)
	if err != nil || !strings.Contains(out, "Restored") {
		t.Fatalf("restore into a new path: %v\n%s", err, out)
	}
	if mustRead(t, restored+".key") != mustRead(t, db+".key") {
		t.Errorf("restore did not install the backup's key as %s", restored+".key")
	}
	s2 := startServer(t, nil, "--addr", "127.0.0.1:0", "--database", restored)
	for _, h := range acknowledged {
		if status, body := s2.do("GET", "/api/v1/keys/"+h, mgmt, nil); status != http.StatusOK {
			t.Fatalf("key %s, created before the backup began, after restore: %d %v", h, status, body)
		}
	}
	s2.checkDestination(t, mgmt, destID, masked)
	s2.stop()

	// Restoring over an existing database needs --force, and keeps it.
	if _, _, err := cli(t, nil, "restore", "--from", backup, "--database", restored); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("restore over an existing database without --force: %v", err)
	}
	out, _, err = cli(t, nil, "restore", "--from", backup, "--database", restored, "--force")
	if err != nil || !strings.Contains(out, "kept as") {
		t.Errorf("forced restore: %v\n%s", err, out)
	}
}

// TestBackupRestoreKeys: the secret key decides. A backup without a key
// file to copy makes none up; a restore with a key that does not open the
// backup's secrets, or with none at all, restores nothing; with
// GATEHOUSE_SECRET_KEY the key is checked and no key file is written.
func TestBackupRestoreKeys(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gatehouse.db")
	s := startServer(t, nil, "--addr", "127.0.0.1:0", "--database", db)
	mgmt := printedKeys(t, s.stderr.String())[0]
	destID, _ := s.createDestination(t, mgmt)
	s.stop()
	serverKey := mustRead(t, db+".key")

	// No key file at the configured place: nothing is written.
	elsewhere := map[string]string{"GATEHOUSE_SECRET_KEY_FILE": filepath.Join(dir, "nowhere.key")}
	if _, _, err := cli(t, elsewhere, "backup", "--database", db, "--to", filepath.Join(dir, "x.db")); err == nil || !strings.Contains(err.Error(), "no secret key file") {
		t.Errorf("backup without its key file: %v", err)
	}
	if fileExists(filepath.Join(dir, "x.db")) || fileExists(filepath.Join(dir, "nowhere.key")) {
		t.Errorf("a failed backup left files behind")
	}
	backup := filepath.Join(dir, "b.db")
	if _, _, err := cli(t, nil, "backup", "--database", db, "--to", backup); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cli(t, nil, "backup", "--database", db, "--to", backup); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second backup to the same file: %v", err)
	}

	wrong := base64.StdEncoding.EncodeToString(gatehouse.NewSecretKey())
	target := filepath.Join(dir, "r1.db")
	if _, _, err := cli(t, map[string]string{"GATEHOUSE_SECRET_KEY": wrong}, "restore", "--from", backup, "--database", target); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Errorf("restore with a wrong GATEHOUSE_SECRET_KEY: %v", err)
	}
	wrongFile := filepath.Join(dir, "wrong.key")
	os.WriteFile(wrongFile, []byte(wrong+"\n"), 0o600)
	if _, _, err := cli(t, nil, "restore", "--from", backup, "--key-from", wrongFile, "--database", target); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Errorf("restore with a wrong --key-from: %v", err)
	}
	os.Rename(backup+".key", backup+".key.away")
	if _, _, err := cli(t, nil, "restore", "--from", backup, "--database", target); err == nil || !strings.Contains(err.Error(), "no secret key") {
		t.Errorf("restore without any key: %v", err)
	}
	if fileExists(target) || fileExists(target+".key") {
		t.Fatalf("a refused restore created %s or its key", target)
	}
	// The right key from the environment: restored, no key file written.
	vars := map[string]string{"GATEHOUSE_SECRET_KEY": serverKey}
	if _, _, err := cli(t, vars, "restore", "--from", backup, "--database", target); err != nil {
		t.Fatalf("restore with the right GATEHOUSE_SECRET_KEY: %v", err)
	}
	if fileExists(target + ".key") {
		t.Errorf("restore wrote a key file although GATEHOUSE_SECRET_KEY is set")
	}
	// Mid-rotation (the secrets still sealed with the previous key): the
	// backup is written, but the command fails naming the destinations
	// its key cannot open.
	rotating := map[string]string{"GATEHOUSE_SECRET_KEY": wrong, "GATEHOUSE_SECRET_KEY_PREVIOUS": serverKey}
	_, _, err := cli(t, rotating, "backup", "--database", db, "--to", filepath.Join(dir, "mid-rotation.db"))
	if err == nil || !strings.Contains(err.Error(), destID) || !strings.Contains(err.Error(), "rotate-secret-key") {
		t.Errorf("backup mid-rotation: %v, want an error naming %s and the rotation", err, destID)
	}
	// PostgreSQL is backed up with its own tools.
	pg := map[string]string{"GATEHOUSE_DATABASE_URL": "postgres://gatehouse@127.0.0.1:1/gatehouse"}
	for _, args := range [][]string{{"backup", "--to", filepath.Join(dir, "pg.db")}, {"restore", "--from", backup}} {
		if _, _, err := cli(t, pg, args...); err == nil || !strings.Contains(err.Error(), "pg_") {
			t.Errorf("gatehouse %v on PostgreSQL: %v, want a pointer to pg_dump/pg_restore", args, err)
		}
	}
	if _, _, err := cli(t, nil, "backup"); err == nil || exitCode(err) != 2 {
		t.Errorf("backup without --to: %v, want a usage error", err)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRestoreChecksBYOKKeys: a backup whose only sealed secrets are BYOK
// keys is refused with a key that does not open them, or with none, as
// one with destinations is; the right key restores it.
func TestRestoreChecksBYOKKeys(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gatehouse.db")
	key := gatehouse.NewSecretKey()
	os.WriteFile(db+".key", []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600)
	box, err := gatehouse.NewSecretBox(key)
	if err != nil {
		t.Fatal(err)
	}
	store := openDatabase(t, db, box)
	org, err := store.CreateOrganization(context.Background(), "Acme")
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	addBYOKKey(t, db, key, org.ID)
	backup := filepath.Join(dir, "b.db")
	if _, _, err := cli(t, nil, "backup", "--database", db, "--to", backup); err != nil {
		t.Fatal(err)
	}
	wrongFile := filepath.Join(dir, "wrong.key")
	os.WriteFile(wrongFile, []byte(base64.StdEncoding.EncodeToString(gatehouse.NewSecretKey())+"\n"), 0o600)
	target := filepath.Join(dir, "r.db")
	if _, _, err := cli(t, nil, "restore", "--from", backup, "--key-from", wrongFile, "--database", target); err == nil ||
		!strings.Contains(err.Error(), "does not open") || !strings.Contains(err.Error(), "BYOK key") {
		t.Errorf("restore with a wrong key: %v", err)
	}
	os.Rename(backup+".key", backup+".key.away")
	if _, _, err := cli(t, nil, "restore", "--from", backup, "--database", target); err == nil || !strings.Contains(err.Error(), "no secret key") {
		t.Errorf("restore without a key: %v", err)
	}
	if fileExists(target) || fileExists(target+".key") {
		t.Fatalf("a refused restore created %s or its key", target)
	}
	if _, _, err := cli(t, nil, "restore", "--from", backup, "--key-from", backup+".key.away", "--database", target); err != nil {
		t.Fatalf("restore with the right key: %v", err)
	}
}

// TestBackupRefusesUnwrittenJournal: a database that no server serves and
// whose charge journal holds charges (a server was killed) is not backed
// up, since the copy would lose them; nothing is written.
func TestBackupRefusesUnwrittenJournal(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "gatehouse.db")
	s := startServer(t, nil, "--addr", "127.0.0.1:0", "--database", db)
	s.stop()
	segment := sqlite.JournalPath(db) + ".1"
	if err := os.WriteFile(segment, []byte("charges a killed server left"), 0o600); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(dir, "b.db")
	if _, _, err := cli(t, nil, "backup", "--database", db, "--to", backup); err == nil || !strings.Contains(err.Error(), segment) ||
		!strings.Contains(err.Error(), "start gatehouse serve") {
		t.Errorf("backup with an unwritten journal: %v", err)
	}
	if fileExists(backup) || fileExists(backup+".key") {
		t.Errorf("a refused backup wrote files")
	}
	os.Remove(segment)
	if _, _, err := cli(t, nil, "backup", "--database", db, "--to", backup); err != nil {
		t.Errorf("backup once the journal is written: %v", err)
	}
}

// TestBackupOfEarlyDatabase: `gatehouse backup` copies a database of an
// early release as it is (without byok_keys or generation_content, which
// came later), migrating nothing; the backup restores, and a server of
// this release then brings it up to date with every row. The databases:
// one of the release of 31ba065 (2026-11-22, its migrations and rows),
// and one of the migrations up to 0014 (before byok_keys).
func TestBackupOfEarlyDatabase(t *testing.T) {
	release, data := storetest.PreviousRelease(t, "sqlite", filepath.Join("..", "..", "sqlite", "migration"))
	var upTo0014 []storetest.Migration
	files, err := filepath.Glob(filepath.Join("..", "..", "sqlite", "migration", "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if filepath.Base(f) < "0015" {
			body := mustRead(t, f)
			upTo0014 = append(upTo0014, storetest.Migration{Name: "migration/" + filepath.Base(f), SQL: body})
		}
	}
	for _, c := range []struct {
		name       string
		migrations []storetest.Migration
	}{{"release 31ba065", release}, {"up to 0014", upTo0014}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "gatehouse.db")
			buildDatabase(t, db, c.migrations, data)
			key := base64.StdEncoding.EncodeToString(gatehouse.NewSecretKey())
			if err := os.WriteFile(db+".key", []byte(key+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			backup := filepath.Join(dir, "early.db")
			out, _, err := cli(t, nil, "backup", "--database", db, "--to", backup)
			if err != nil {
				t.Fatalf("backup of an early database: %v", err)
			}
			if !strings.Contains(out, "Backed up") || strings.Contains(out, "byok_keys") {
				t.Errorf("backup output:\n%s", out)
			}
			if n := migrationsOf(t, db); n != len(c.migrations) {
				t.Errorf("the source records %d migrations after the backup, want its %d: backup migrated it", n, len(c.migrations))
			}
			if n := migrationsOf(t, backup); n != len(c.migrations) {
				t.Errorf("the backup records %d migrations, want the source's %d", n, len(c.migrations))
			}
			target := filepath.Join(dir, "restored.db")
			if _, _, err := cli(t, nil, "restore", "--from", backup, "--database", target); err != nil {
				t.Fatalf("restore of the early backup: %v", err)
			}
			box, err := gatehouse.NewSecretBox(mustDecodeKey(t, mustRead(t, target+".key")))
			if err != nil {
				t.Fatal(err)
			}
			store, err := sqlite.Open(context.Background(), target, box)
			if err != nil {
				t.Fatalf("open the restored early database: %v", err)
			}
			defer store.Close()
			store.Now = storetest.NewClock(storetest.ReleaseTime).Now
			storetest.CheckUpgraded(t, store)
		})
	}
}

// buildDatabase makes a SQLite database at path as a release with these
// migrations did, filled with data.
func buildDatabase(t *testing.T, path string, migrations []storetest.Migration, data string) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)&_pragma=journal_mode(wal)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range migrations {
		if _, err := raw.Exec(m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if _, err := raw.Exec(`INSERT INTO schema_migrations (name, applied_at) VALUES (?, 1795168800000)`, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.Exec(data); err != nil {
		t.Fatalf("the release's rows: %v", err)
	}
}

// migrationsOf counts the migrations a database file records.
func migrationsOf(t *testing.T, path string) int {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func mustDecodeKey(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
