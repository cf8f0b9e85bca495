package sqlite_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/sqlite"
	"gatehouse/sqlite/sqlitetest"
	"gatehouse/storetest"
)

// openDB opens a new database in dir with a fresh secret key.
func openDB(t *testing.T, dir string, now gatehouse.Clock) *sqlite.DB {
	t.Helper()
	return openPath(t, filepath.Join(dir, "gatehouse.db"), now)
}

// openPath opens the database at path with a fresh secret key.
func openPath(t *testing.T, path string, now gatehouse.Clock) *sqlite.DB {
	t.Helper()
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(context.Background(), path, box)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	db.Now = now
	return db
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now gatehouse.Clock) gatehouse.Store {
		db := openPath(t, sqlitetest.Path(t, "gatehouse.db"), now) // a migrated copy
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestStoreSecrets(t *testing.T) {
	storetest.RunSecrets(t, func(t *testing.T) func(*gatehouse.SecretBox) gatehouse.Store {
		path := filepath.Join(t.TempDir(), "gatehouse.db")
		return func(box *gatehouse.SecretBox) gatehouse.Store {
			db, err := sqlite.Open(context.Background(), path, box)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		}
	})
}

// TestDestinationSecretsNotInFile checks that destination secrets are
// encrypted at rest: no file of the database holds them in plaintext.
func TestDestinationSecretsNotInFile(t *testing.T) {
	const (
		secretKey = "sk-lf-SECRET-7f3a9c1e5b2d4f6a"
		header    = "Bearer hdr-SECRET-0c4e8a2f6b1d"
		publicKey = "pk-lf-PUBLIC-5e9b1d3f7a2c"
	)
	ctx := context.Background()
	dir := t.TempDir()
	db := openDB(t, dir, time.Now)
	org, err := db.CreateOrganization(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.CreateDestination(ctx, org.ID, gatehouse.DestinationCreate{
		Type: "langfuse",
		DestinationUpdate: gatehouse.DestinationUpdate{
			Name: gatehouse.Val("traces"),
			Config: &gatehouse.ConfigPatch{
				Values:     map[string]*string{"publicKey": new(publicKey), "secretKey": new(secretKey)},
				Headers:    map[string]string{"Authorization": header},
				HeadersSet: true,
			},
		},
	})
	if err != nil {
		t.Fatalf("CreateDestination: %v", err)
	}
	// An update rewrites the row (and its secrets) once more.
	if _, err := db.UpdateDestination(ctx, org.ID, d.ID, gatehouse.DestinationUpdate{Name: gatehouse.Val("renamed")}); err != nil {
		t.Fatalf("UpdateDestination: %v", err)
	}
	if got, err := db.FindDestination(ctx, org.ID, d.ID); err != nil || got.Config.Values["secretKey"] != secretKey {
		t.Fatalf("FindDestination = %v, %v; want the secret back", got, err)
	}
	// Scan while open, when the -wal and -shm files hold the latest pages,
	// and after closing, when the WAL has been checkpointed into the file.
	scanFiles(t, dir, publicKey, secretKey, header)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	scanFiles(t, dir, publicKey, secretKey, header)
}

// TestGenerationContentNotInFile checks that the prompts and completions
// kept of generations are sealed at rest.
func TestGenerationContentNotInFile(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, time.Now)
	g := storetest.StoreContent(t, db, "PROMPT-SECRET-4b8e1f", "COMPLETION-SECRET-9d2c7a")
	scanFiles(t, dir, g.ID, "PROMPT-SECRET-4b8e1f", "COMPLETION-SECRET-9d2c7a", "SECRET-4b8e1f", "SECRET-9d2c7a")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	scanFiles(t, dir, g.ID, "PROMPT-SECRET-4b8e1f", "COMPLETION-SECRET-9d2c7a", "SECRET-4b8e1f", "SECRET-9d2c7a")
}

// TestBYOKKeysNotInFile checks that BYOK keys are encrypted at rest: no
// file of the database holds one in plaintext, the first or the one that
// replaced it, while the gateway's read opens the current one.
func TestBYOKKeysNotInFile(t *testing.T) {
	const (
		first   = "sk-proj-FIRSTKEY-7f3a9c1e5b2d4f6a"
		rotated = "sk-proj-ROTATEDKEY-0c4e8a2f6b1d"
		name    = "visible-byok-name-5e9b1d3f"
	)
	ctx := context.Background()
	dir := t.TempDir()
	db := openDB(t, dir, time.Now)
	org, err := db.CreateOrganization(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}
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
	scanFiles(t, dir, name, first, rotated, "FIRSTKEY", "ROTATEDKEY")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	scanFiles(t, dir, name, first, rotated, "FIRSTKEY", "ROTATEDKEY")
}

// TestClientSecretsNotInFile checks that identity providers' client
// secrets and SCIM tokens are not in the database's files: the secret
// sealed, the token hashed.
func TestClientSecretsNotInFile(t *testing.T) {
	const (
		first   = "client-FIRSTSECRET-7f3a9c1e5b2d4f6a"
		rotated = "client-ROTATEDSECRET-0c4e8a2f6b1d"
		name    = "visible-provider-name-5e9b1d3f"
	)
	ctx := context.Background()
	dir := t.TempDir()
	db := openDB(t, dir, time.Now)
	org, err := db.CreateOrganization(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.CreateSSOProvider(ctx, org.ID, gatehouse.SSOProviderUpdate{Name: gatehouse.Val(name),
		IssuerURL: gatehouse.Val("https://idp.example.com"), ClientID: gatehouse.Val("c"), ClientSecret: gatehouse.Val(first)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpdateSSOProvider(ctx, org.ID, p.ID, gatehouse.SSOProviderUpdate{ClientSecret: gatehouse.Val(rotated)}); err != nil {
		t.Fatal(err)
	}
	_, token, err := db.CreateSCIMToken(ctx, org.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := db.FindSSOProviderForSignIn(ctx, p.ID); err != nil || string(got.ClientSecret) != rotated {
		t.Fatalf("FindSSOProviderForSignIn = %v, %v; want the rotated secret back", got, err)
	}
	scanFiles(t, dir, name, first, rotated, "FIRSTSECRET", "ROTATEDSECRET", token, token[len(gatehouse.SCIMTokenPrefix):])
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	scanFiles(t, dir, name, first, rotated, "FIRSTSECRET", "ROTATEDSECRET", token, token[len(gatehouse.SCIMTokenPrefix):])
}

// scanFiles fails the test if any file in dir holds one of the secrets, or
// if none holds visible, the proof that the scan sees the data.
func scanFiles(t *testing.T, dir, visible string, secrets ...string) {
	t.Helper()
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("scanned %s (%d bytes)", f.Name(), len(b))
		all = append(all, b...)
	}
	if !bytes.Contains(all, []byte(visible)) {
		t.Fatalf("%q is not in the files: the scan does not see the data", visible)
	}
	for _, secret := range append(secrets, "SECRET") {
		if bytes.Contains(all, []byte(secret)) {
			t.Errorf("the database files contain %q in plaintext", secret)
		}
	}
}

// TestDatabaseFilesPrivate: the database file and its WAL and shared-memory
// files are created readable and writable by their owner only, whatever
// the umask lets others read.
func TestDatabaseFilesPrivate(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir, time.Now)
	if _, err := db.CreateOrganization(context.Background(), "private"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gatehouse.db", "gatehouse.db-wal", "gatehouse.db-shm"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %o, want 600", name, mode)
		}
	}
	db.Close()
}
