package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/postgres"
	"gatehouse/sqlite"
	"gatehouse/storetest"
)

// readsSecrets opens the database directly with only the given key, and
// reports whether it can read the destination's secrets.
func readsSecrets(t *testing.T, dbURL string, key []byte, orgID, id string) bool {
	t.Helper()
	box, err := gatehouse.NewSecretBox(key)
	if err != nil {
		t.Fatal(err)
	}
	store := openDatabase(t, dbURL, box)
	defer store.Close()
	d, err := store.FindDestination(context.Background(), orgID, id)
	return err == nil && d.Config.Headers["Authorization"] == headerSecret
}

// byokSecret is the provider key of the BYOK key the rotation tests add.
const byokSecret = "sk-proj-ROTATION-0123456789abcdef"

// addBYOKKey opens the database (its server stopped) with key and adds a
// BYOK key to the organization's default workspace; it returns the
// workspace's id.
func addBYOKKey(t *testing.T, dbURL string, key []byte, orgID string) string {
	t.Helper()
	box, err := gatehouse.NewSecretBox(key)
	if err != nil {
		t.Fatal(err)
	}
	store := openDatabase(t, dbURL, box)
	defer store.Close()
	k, err := store.CreateBYOKKey(context.Background(), orgID, gatehouse.BYOKKeyCreate{Provider: "openai",
		BYOKKeyUpdate: gatehouse.BYOKKeyUpdate{Key: gatehouse.Val(byokSecret)}})
	if err != nil {
		t.Fatal(err)
	}
	return k.WorkspaceID
}

// readsBYOKKey opens the database with only the given key, and reports
// whether it can read the BYOK key addBYOKKey added.
func readsBYOKKey(t *testing.T, dbURL string, key []byte, workspaceID string) bool {
	t.Helper()
	box, err := gatehouse.NewSecretBox(key)
	if err != nil {
		t.Fatal(err)
	}
	store := openDatabase(t, dbURL, box)
	defer store.Close()
	keys, err := store.ProviderBYOKKeys(context.Background(), workspaceID, "openai")
	return err == nil && len(keys) == 1 && string(keys[0].Key) == byokSecret
}

// openDatabase opens the database of a server (not running) directly.
func openDatabase(t *testing.T, dbURL string, box *gatehouse.SecretBox) gatehouse.Store {
	t.Helper()
	var store gatehouse.Store
	var err error
	if strings.HasPrefix(dbURL, "postgres://") {
		store, err = postgres.Open(context.Background(), dbURL, box, postgres.Options{})
	} else {
		store, err = sqlite.Open(context.Background(), dbURL, box)
	}
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// orgOf returns the organization of a management key.
func (s *testServer) orgOf(t *testing.T, key string) string {
	t.Helper()
	_, body := s.do("GET", "/api/v1/key", key, nil)
	return str(body["data"].(map[string]any)["organization_id"])
}

// TestRotateSecretKeyFile: with the key in a file, rotation re-seals every
// secret with a new key, writes it into the file, and the server reads the
// secrets after a restart; the old key no longer opens them.
func TestRotateSecretKeyFile(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	s := startServer(t, nil, "--addr", "127.0.0.1:0", "--database", db)
	key := printedKeys(t, s.stderr.String())[0]
	id, masked := s.createDestination(t, key)
	org := s.orgOf(t, key)
	s.stop()
	oldKey := readKeyFile(t, db+".key")
	ws := addBYOKKey(t, db, oldKey, org)

	stdout, stderr, err := runCommand(nil, "rotate-secret-key", "--database", db)
	if err != nil {
		t.Fatalf("rotate-secret-key: %v\n%s%s", err, stdout, stderr)
	}
	if !strings.Contains(stdout, "1 destinations and 1 BYOK keys") {
		t.Errorf("output does not count the re-sealed destination and BYOK key:\n%s", stdout)
	}
	newKey := readKeyFile(t, db+".key")
	if string(newKey) == string(oldKey) {
		t.Fatal("the key file still holds the old key")
	}
	if fi, err := os.Stat(db + ".key"); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode: %v, %v; want 0600", fi.Mode(), err)
	}
	if fileExists(db + ".key.new") {
		t.Error("the pending key file was left behind")
	}
	if strings.Contains(stdout, base64.StdEncoding.EncodeToString(newKey)) {
		t.Error("a key kept in a file was printed")
	}
	if readsSecrets(t, db, oldKey, org, id) || !readsSecrets(t, db, newKey, org, id) {
		t.Error("after rotation the old key still opens the secrets, or the new one does not")
	}
	if readsBYOKKey(t, db, oldKey, ws) || !readsBYOKKey(t, db, newKey, ws) {
		t.Error("after rotation the old key still opens the BYOK key, or the new one does not")
	}
	s = startServer(t, nil, "--addr", "127.0.0.1:0", "--database", db)
	s.checkDestination(t, key, id, masked)
}

// TestRotateSecretKeyEnv: with GATEHOUSE_SECRET_KEY, rotation prints the
// new key; servers with it as the key (and the old one as previous, during
// the roll-out) read the secrets. On SQLite, and on PostgreSQL when set up.
func TestRotateSecretKeyEnv(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			old := make([]byte, 32)
			_, _ = rand.Read(old)
			vars := map[string]string{"GATEHOUSE_SECRET_KEY": base64.StdEncoding.EncodeToString(old)}
			if engine == "postgres" {
				pg, _ := pgInstances(t)
				vars["GATEHOUSE_DATABASE_URL"] = pg["GATEHOUSE_DATABASE_URL"]
			} else {
				vars["GATEHOUSE_DATABASE_URL"] = filepath.Join(t.TempDir(), "g.db")
			}
			s := startServer(t, vars, "--addr", "127.0.0.1:0")
			key := printedKeys(t, s.stderr.String())[0]
			id, masked := s.createDestination(t, key)
			org := s.orgOf(t, key)
			s.stop()
			ws := addBYOKKey(t, vars["GATEHOUSE_DATABASE_URL"], old, org)

			stdout, stderr, err := runCommand(vars, "rotate-secret-key")
			if err != nil {
				t.Fatalf("rotate-secret-key: %v\n%s%s", err, stdout, stderr)
			}
			newKey, err := decodeSecretKey(lastLine(stdout))
			if err != nil {
				t.Fatalf("the last line is not the new key: %q", lastLine(stdout))
			}
			dbURL := vars["GATEHOUSE_DATABASE_URL"]
			if readsSecrets(t, dbURL, old, org, id) || !readsSecrets(t, dbURL, newKey, org, id) {
				t.Error("after rotation the old key still opens the secrets, or the new one does not")
			}
			if readsBYOKKey(t, dbURL, old, ws) || !readsBYOKKey(t, dbURL, newKey, ws) {
				t.Error("after rotation the old key still opens the BYOK key, or the new one does not")
			}
			// An instance not yet moved to the new key, given it as previous, reads too.
			rolling := map[string]string{
				"GATEHOUSE_DATABASE_URL":        dbURL,
				"GATEHOUSE_SECRET_KEY":          base64.StdEncoding.EncodeToString(old),
				"GATEHOUSE_SECRET_KEY_PREVIOUS": base64.StdEncoding.EncodeToString(newKey),
			}
			s = startServer(t, rolling, "--addr", "127.0.0.1:0")
			s.checkDestination(t, key, id, masked)
			s.stop()
			vars["GATEHOUSE_SECRET_KEY"] = lastLine(stdout)
			s = startServer(t, vars, "--addr", "127.0.0.1:0")
			s.checkDestination(t, key, id, masked)

			// With a wrong key, rotation changes nothing and says so.
			wrong := map[string]string{"GATEHOUSE_DATABASE_URL": dbURL, "GATEHOUSE_SECRET_KEY": base64.StdEncoding.EncodeToString(old)}
			if _, _, err := runCommand(wrong, "rotate-secret-key"); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
				t.Errorf("rotation with a wrong current key: %v", err)
			}
			if !readsSecrets(t, dbURL, newKey, org, id) || !readsBYOKKey(t, dbURL, newKey, ws) {
				t.Error("a failed rotation changed the secrets")
			}
		})
	}
}

func readKeyFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	key, err := decodeSecretKey(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// TestRotateSecretKeyContent: rotation re-seals the stored content of
// generations too, after the destinations: the new key alone opens it.
func TestRotateSecretKeyContent(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	oldKey := make([]byte, 32)
	_, _ = rand.Read(oldKey)
	if err := os.WriteFile(db+".key", []byte(base64.StdEncoding.EncodeToString(oldKey)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	box, err := gatehouse.NewSecretBox(oldKey)
	if err != nil {
		t.Fatal(err)
	}
	store := openDatabase(t, db, box)
	g := storetest.StoreContent(t, store, "rotated prompt", "rotated completion")
	store.Close()

	stdout, stderr, err := runCommand(nil, "rotate-secret-key", "--database", db)
	if err != nil {
		t.Fatalf("rotate-secret-key: %v\n%s%s", err, stdout, stderr)
	}
	if !strings.Contains(stdout, "Re-sealed the stored content of 1 generations.") {
		t.Errorf("output does not count the re-sealed content:\n%s", stdout)
	}
	reads := func(key []byte) bool {
		box, err := gatehouse.NewSecretBox(key)
		if err != nil {
			t.Fatal(err)
		}
		store := openDatabase(t, db, box)
		defer store.Close()
		sc, err := store.FindGenerationContent(context.Background(), g.OrganizationID, g.ID, time.Time{})
		return err == nil && sc.Content != nil && *sc.Content.Completion == "rotated completion"
	}
	if reads(oldKey) || !reads(readKeyFile(t, db+".key")) {
		t.Error("after rotation the old key still opens the content, or the new one does not")
	}
}
