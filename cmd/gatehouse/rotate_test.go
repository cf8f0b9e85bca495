package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
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

// TestRotateRefusedWhileServing: beside a server on the same SQLite
// database, rotation refuses and changes nothing (the server still reads
// its destinations); and a server does not start while a rotation runs.
func TestRotateRefusedWhileServing(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	s := startServer(t, nil, "--addr", "127.0.0.1:0", "--database", db)
	key := printedKeys(t, s.stderr.String())[0]
	id, masked := s.createDestination(t, key)
	before := readKeyFile(t, db+".key")

	_, _, err := runCommand(nil, "rotate-secret-key", "--database", db)
	if err == nil || !strings.Contains(err.Error(), "in use by gatehouse serve (pid ") || !strings.Contains(err.Error(), "stop the server") ||
		!strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("rotate-secret-key beside a server: %v, want a refusal naming the server", err)
	}
	if after := readKeyFile(t, db+".key"); string(after) != string(before) || fileExists(db+".key.new") {
		t.Error("a refused rotation changed the key file")
	}
	s.checkDestination(t, key, id, masked)
	s.stop()

	// A rotation in progress holds the lock: a server start is refused,
	// naming it.
	release, _, err := sqlite.Lock(db, "gatehouse rotate-secret-key")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = runCommand(nil, "--addr", "127.0.0.1:0", "--database", db)
	release()
	if err == nil || !strings.Contains(err.Error(), "in use by gatehouse rotate-secret-key (pid ") {
		t.Errorf("serve during a rotation: %v, want a refusal naming the rotation", err)
	}
	// Once it is done, rotation and serving work.
	if out, errOut, err := runCommand(nil, "rotate-secret-key", "--database", db); err != nil {
		t.Fatalf("rotate-secret-key after the server stopped: %v\n%s%s", err, out, errOut)
	}
	s = startServer(t, nil, "--addr", "127.0.0.1:0", "--database", db)
	s.checkDestination(t, key, id, masked)
}

// TestUnreadableAfterKeyChange: a server started with another key (the
// key file lost, or the wrong GATEHOUSE_SECRET_KEY) says at start which
// destinations it cannot open, lists and reads them (200, marked), and a
// rotation refuses naming them, unless told to skip them.
func TestUnreadableAfterKeyChange(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	s := startServer(t, nil, "--addr", "127.0.0.1:0", "--database", db)
	key := printedKeys(t, s.stderr.String())[0]
	id, _ := s.createDestination(t, key)
	org := s.orgOf(t, key)
	s.stop()
	original := readKeyFile(t, db+".key")
	if err := os.Remove(db + ".key"); err != nil { // lost
		t.Fatal(err)
	}

	s = startServer(t, nil, "--addr", "127.0.0.1:0", "--database", db) // makes a new key file
	line, ok := logLine(s.stderr.String(), "the secret key does not open some secrets at rest (was it changed without gatehouse rotate-secret-key?): "+
		"those destinations receive nothing and show secrets_unreadable, those BYOK keys serve nothing, until the key they "+
		"were sealed with is given (GATEHOUSE_SECRET_KEY_PREVIOUS) or they are sent again")
	if !ok || !strings.Contains(fmt.Sprint(line["secrets"]), "destination "+id) {
		t.Errorf("no start warning naming %s:\n%s", id, s.stderr)
	}
	status, body := s.do("GET", "/api/v1/observability/destinations", key, nil)
	list, _ := body["data"].([]any)
	if status != http.StatusOK || len(list) != 1 || list[0].(map[string]any)["secrets_unreadable"] != true {
		t.Errorf("GET destinations with another key = %d %v, want the destination marked", status, body)
	}
	status, body = s.do("GET", "/api/v1/observability/destinations/"+id, key, nil)
	if status != http.StatusOK || body["data"].(map[string]any)["secrets_unreadable"] != true {
		t.Errorf("GET destination with another key = %d %v, want it marked", status, body)
	}
	s.stop()

	_, _, err := runCommand(nil, "rotate-secret-key", "--database", db)
	if err == nil || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), "nothing was changed") ||
		!strings.Contains(err.Error(), "--skip-unreadable") {
		t.Fatalf("rotation with the key that does not open %s: %v, want a refusal naming it", id, err)
	}
	// With the old key as previous, the rotation opens and re-seals it.
	vars := map[string]string{"GATEHOUSE_SECRET_KEY_PREVIOUS": base64.StdEncoding.EncodeToString(original)}
	if out, errOut, err := runCommand(vars, "rotate-secret-key", "--database", db); err != nil || !strings.Contains(out, "1 destinations") {
		t.Fatalf("rotation with the old key as previous: %v\n%s%s", err, out, errOut)
	}
	if !readsSecrets(t, db, readKeyFile(t, db+".key"), org, id) {
		t.Error("after the rotation the key file's key does not open the secrets")
	}

	// A destination whose key is gone for good is skipped when asked.
	if err := os.WriteFile(db+".key", []byte(base64.StdEncoding.EncodeToString(gatehouse.NewSecretKey())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runCommand(nil, "rotate-secret-key", "--database", db, "--skip-unreadable")
	if err != nil || !strings.Contains(out, "Re-sealed the secrets of 0 destinations") || !strings.Contains(out, "Left 1 secrets") ||
		!strings.Contains(out, id) {
		t.Errorf("rotation --skip-unreadable: %v\n%s%s", err, out, errOut)
	}
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

// TestRotateSecretKeyContentUnreadable: a stored content that no key opens
// (sealed with a key that is gone) does not stop the rotation: the others
// are re-sealed and open with the new key alone, the unreadable one is
// counted and left as it was, and the command succeeds.
func TestRotateSecretKeyContentUnreadable(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	oldKey, goneKey := gatehouse.NewSecretKey(), gatehouse.NewSecretKey()
	if err := os.WriteFile(db+".key", []byte(base64.StdEncoding.EncodeToString(oldKey)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store := func(key []byte) interface {
		gatehouse.Store
		Close() error
	} {
		box, err := gatehouse.NewSecretBox(key)
		if err != nil {
			t.Fatal(err)
		}
		return openDatabase(t, db, box)
	}
	s := store(goneKey)
	lost := storetest.StoreContent(t, s, "lost prompt", "lost completion")
	s.Close()
	s = store(oldKey)
	var kept []*gatehouse.Generation
	for range 3 {
		kept = append(kept, storetest.StoreContent(t, s, "kept prompt", "kept completion"))
	}
	s.Close()

	stdout, stderr, err := runCommand(nil, "rotate-secret-key", "--database", db)
	if err != nil {
		t.Fatalf("rotate-secret-key: %v\n%s%s", err, stdout, stderr)
	}
	if !strings.Contains(stdout, "Re-sealed the stored content of 3 generations.") || !strings.Contains(stdout, "of 1 generations that no key given opens") {
		t.Errorf("output:\n%s%s", stdout, stderr)
	}
	s = store(readKeyFile(t, db+".key"))
	defer s.Close()
	for _, g := range kept {
		if sc, err := s.FindGenerationContent(context.Background(), g.OrganizationID, g.ID, time.Time{}); err != nil || sc.Content == nil {
			t.Errorf("content %s after rotation: %v", g.ID, err)
		}
	}
	if _, err := s.FindGenerationContent(context.Background(), lost.OrganizationID, lost.ID, time.Time{}); err == nil {
		t.Error("the content sealed with a key that is gone opens")
	}
}
