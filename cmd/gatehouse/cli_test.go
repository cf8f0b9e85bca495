package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"gatehouse"
)

// createOrg runs `orgs create` and returns the new organization's id.
func createOrg(t *testing.T, vars map[string]string, args ...string) string {
	t.Helper()
	return cliCreate(t, vars, "orgs", args, "a UUID", func(id string) bool {
		_, err := uuid.Parse(id)
		return err == nil
	})
}

// createMgmtKey runs `mgmt-keys create` and returns the new key.
func createMgmtKey(t *testing.T, vars map[string]string, args ...string) string {
	t.Helper()
	return cliCreate(t, vars, "mgmt-keys", args, "a management key", func(key string) bool {
		return mgmtKeyRE.MatchString(key) && len(key) == len("sk-gh-mgmt-v1-")+64
	})
}

// cliCreate runs `command create args...` and returns the last line of its
// output, which must be what valid accepts.
func cliCreate(t *testing.T, vars map[string]string, command string, args []string, what string, valid func(string) bool) string {
	t.Helper()
	out, errOut, err := cli(t, vars, append([]string{command, "create"}, args...)...)
	if err != nil {
		t.Fatalf("%s create: %v\nstderr: %s", command, err, errOut)
	}
	last := lastLine(out)
	if !valid(last) {
		t.Fatalf("%s create: last line %q is not %s; stdout:\n%s", command, last, what, out)
	}
	return last
}

func TestCLICreatesOrganizationAndKey(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	org := createOrg(t, nil, "--name", "Acme", "--database", db)
	key := createMgmtKey(t, nil, "--org", org, "--name", "ci", "--database", db)

	// The server starts on a database that already has an organization:
	// it must not create another one nor print a key.
	s := startServer(t, map[string]string{"GATEHOUSE_DATABASE_URL": db}, "--addr", "127.0.0.1:0")
	if keys := printedKeys(t, s.stderr.String()); len(keys) != 0 {
		t.Errorf("server printed keys %v on a database that has an organization", keys)
	}
	status, body := s.do("GET", "/api/v1/key", key, nil)
	if status != http.StatusOK {
		t.Fatalf("GET /key with the CLI key = %d %v", status, body)
	}
	data, _ := body["data"].(map[string]any)
	if data["is_management_key"] != true || data["organization_id"] != org {
		t.Errorf("GET /key = %v, want a management key of organization %s", data, org)
	}
}

// TestCLIWhileServing runs the commands concurrently with each other and with
// requests to a server on the same database.
func TestCLIWhileServing(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	vars := map[string]string{"GATEHOUSE_DATABASE_URL": db, "GATEHOUSE_RATE_LIMIT_RPS": "0"}
	s := startServer(t, vars, "--addr", "127.0.0.1:0")
	keys := printedKeys(t, s.stderr.String())
	if len(keys) != 1 {
		t.Fatalf("first start printed %d keys, want 1\nstderr:\n%s", len(keys), s.stderr)
	}
	first := keys[0]

	const n = 4
	type result struct{ org, key string }
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(2)
		go func() { // the CLI, in-process, like a second process on the same file
			defer wg.Done()
			// Not createOrg and createMgmtKey: they stop the test, which only
			// the test goroutine may do.
			out, _, err := runCommand(vars, "orgs", "create", "--name", fmt.Sprintf("Org %d", i))
			if err != nil {
				t.Errorf("orgs create while serving: %v", err)
				return
			}
			org := lastLine(out)
			out, _, err = runCommand(vars, "mgmt-keys", "create", "--org", org)
			if err != nil {
				t.Errorf("mgmt-keys create while serving: %v", err)
				return
			}
			results[i] = result{org, lastLine(out)}
		}()
		go func() { // the server writing at the same time
			defer wg.Done()
			status, body := s.do("POST", "/api/v1/keys", first, map[string]any{"name": fmt.Sprintf("k%d", i)})
			if status != http.StatusCreated {
				t.Errorf("POST /keys during CLI = %d %v", status, body)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, r := range results {
		if !mgmtKeyRE.MatchString(r.key) {
			t.Errorf("mgmt-keys create printed %q as its last line", r.key)
		}
		status, body := s.do("GET", "/api/v1/key", r.key, nil)
		data, _ := body["data"].(map[string]any)
		if status != http.StatusOK || data["organization_id"] != r.org {
			t.Errorf("GET /key with the key of %s = %d %v", r.org, status, body)
		}
		// The new organization has its default workspace.
		status, body = s.do("GET", "/api/v1/workspaces/default", r.key, nil)
		if status != http.StatusOK {
			t.Errorf("GET /workspaces/default of %s = %d %v", r.org, status, body)
		}
	}
}

// TestCLIManagementKeys lists, disables, enables and deletes management
// keys with the CLI, named by the key or by its hash, and reads the
// result back from the store.
func TestCLIManagementKeys(t *testing.T) {
	vars := map[string]string{"GATEHOUSE_DATABASE_URL": filepath.Join(t.TempDir(), "g.db")}
	org := createOrg(t, vars, "--name", "Acme")
	createMgmtKey(t, vars, "--org", createOrg(t, vars, "--name", "Other")) // not listed
	if out := mgmtKeys(t, vars, "list", "--org", org); !strings.Contains(out, "no management keys") {
		t.Errorf("list of an organization without management keys:\n%s", out)
	}
	first := gatehouse.HashKey(createMgmtKey(t, vars, "--org", org, "--name", "First"))
	secondKey := createMgmtKey(t, vars, "--org", org, "--name", "CI deploy")
	second := gatehouse.HashKey(secondKey)
	wantMgmtKeys(t, vars, org, listedKey{first, "active", "First"}, listedKey{second, "active", "CI deploy"})

	out := mgmtKeys(t, vars, "disable", "--org", org, secondKey) // by the key
	if want := "Disabled management key " + second + " (CI deploy) of organization " + org; !strings.Contains(out, want) {
		t.Errorf("disable printed %q, want %q", out, want)
	}
	if k, err := storedKey(t, vars, second); err != nil || !k.Disabled {
		t.Errorf("the store after disable: %v, %v; want the key disabled", k, err)
	}
	wantMgmtKeys(t, vars, org, listedKey{first, "active", "First"}, listedKey{second, "disabled", "CI deploy"})
	if out := mgmtKeys(t, vars, "disable", "--org", org, second); !strings.Contains(out, "nothing changed") {
		t.Errorf("disable of a disabled key printed %q", out)
	}

	mgmtKeys(t, vars, "enable", strings.ToUpper(second), "--org", org) // by the hash, before the flags
	if k, err := storedKey(t, vars, second); err != nil || k.Disabled {
		t.Errorf("the store after enable: %v, %v; want the key active", k, err)
	}
	wantMgmtKeys(t, vars, org, listedKey{first, "active", "First"}, listedKey{second, "active", "CI deploy"})

	mgmtKeys(t, vars, "delete", "--org", org, secondKey)
	if k, err := storedKey(t, vars, second); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Errorf("the store after delete: %v, %v; want ENOTFOUND", k, err)
	}
	wantMgmtKeys(t, vars, org, listedKey{first, "active", "First"})
	mgmtKeys(t, vars, "delete", "--org", org, first)
	if out := mgmtKeys(t, vars, "list", "--org", org); !strings.Contains(out, "no management keys") {
		t.Errorf("list after deleting every key:\n%s", out)
	}

	// A KEY that is neither is refused without being repeated: it may be a secret.
	_, _, err := cli(t, vars, "mgmt-keys", "delete", "--org", org, "sk-gh-v1-notamanagementkey")
	if exitCode(err) != 2 || strings.Contains(err.Error(), "notamanagementkey") {
		t.Errorf("delete of a regular key's plaintext: %v (exit %d), want a usage error that does not repeat it", err, exitCode(err))
	}
}

// mgmtKeys runs `gatehouse mgmt-keys args...`, which must succeed, and
// returns its output.
func mgmtKeys(t *testing.T, vars map[string]string, args ...string) string {
	t.Helper()
	out, errOut, err := cli(t, vars, append([]string{"mgmt-keys"}, args...)...)
	if err != nil {
		t.Fatalf("mgmt-keys %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// listedKey is a row of mgmt-keys list.
type listedKey struct{ hash, state, name string }

// wantMgmtKeys fails the test unless mgmt-keys list shows the keys of org
// in this order, under a header, with their creation times in RFC 3339 UTC.
func wantMgmtKeys(t *testing.T, vars map[string]string, org string, want ...listedKey) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(mgmtKeys(t, vars, "list", "--org", org), "\n"), "\n")
	if len(lines) != len(want)+1 || strings.Join(strings.Fields(lines[0]), " ") != "HASH STATE CREATED NAME" {
		t.Fatalf("mgmt-keys list:\n%s\nwant a header and %d keys", strings.Join(lines, "\n"), len(want))
	}
	for i, w := range want {
		f := append(strings.Fields(lines[i+1]), "", "", "")
		created, err := time.Parse(time.RFC3339, f[2])
		if f[0] != w.hash || f[1] != w.state || strings.TrimSpace(strings.Join(f[3:], " ")) != w.name || err != nil || created.Location() != time.UTC {
			t.Errorf("mgmt-keys list row %d = %q, want %s %s <created> %s", i, lines[i+1], w.hash, w.state, w.name)
		}
	}
}

// storedKey reads a key from the database itself, around any server's
// cache.
func storedKey(t *testing.T, vars map[string]string, hash string) (*gatehouse.Key, error) {
	t.Helper()
	cfg := DefaultConfig()
	if err := cfg.fromEnv(env(vars)); err != nil {
		t.Fatal(err)
	}
	var k *gatehouse.Key
	err := withStore(context.Background(), cfg, io.Discard, openMode{existing: true}, func(store gatehouse.Store) (err error) {
		k, err = store.FindKeyByHash(context.Background(), hash)
		return err
	})
	return k, err
}

// TestCLIDisableWhileServing: management keys disabled and deleted with the
// CLI while a server runs on the database, and holds them in its key
// cache, are refused by that server within the bound the CLI states (on
// SQLite the cache's 10 s TTL; on PostgreSQL, whose change feed reaches
// the cache, about a second), and another key goes on working.
func TestCLIDisableWhileServing(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			vars, bound := map[string]string{"GATEHOUSE_RATE_LIMIT_RPS": "0"}, 10*time.Second
			if engine == "postgres" {
				vars, _ = pgInstances(t)
				bound = time.Second
			} else {
				vars["GATEHOUSE_DATABASE_URL"] = filepath.Join(t.TempDir(), "g.db")
			}
			org := createOrg(t, vars, "--name", "Acme")
			disabled, deleted, kept := createMgmtKey(t, vars, "--org", org), createMgmtKey(t, vars, "--org", org), createMgmtKey(t, vars, "--org", org)
			s := startServer(t, vars, "--addr", "127.0.0.1:0")
			for _, key := range []string{disabled, deleted, kept} { // now in the cache
				if status, body := s.do("GET", "/api/v1/key", key, nil); status != http.StatusOK {
					t.Fatalf("GET /key before the CLI = %d %v", status, body)
				}
			}
			mgmtKeys(t, vars, "disable", "--org", org, disabled)
			mgmtKeys(t, vars, "delete", "--org", org, deleted)
			deadline := time.Now().Add(bound + 5*time.Second) // slack for loaded machines
			for _, key := range []string{disabled, deleted} {
				for status := 0; status != http.StatusUnauthorized; {
					if time.Now().After(deadline) {
						t.Fatalf("GET /key with a key the CLI disabled or deleted = %d after %v, want 401", status, bound)
					}
					time.Sleep(20 * time.Millisecond)
					status, _ = s.do("GET", "/api/v1/key", key, nil)
				}
			}
			if status, body := s.do("GET", "/api/v1/key", kept, nil); status != http.StatusOK {
				t.Errorf("GET /key with the key the CLI left alone = %d %v", status, body)
			}
		})
	}
}

func TestCLIErrors(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	org := createOrg(t, nil, "--name", "Acme", "--database", db) // the database exists
	hash := gatehouse.HashKey(gatehouse.NewKeySecret(true))      // of no key
	tests := []struct {
		name     string
		args     []string
		wantErr  []string // substrings of the error
		wantCode int
	}{
		{"orgs without --name", []string{"orgs", "create", "--database", db}, []string{"--name"}, 2},
		{"orgs with empty --name", []string{"orgs", "create", "--name", "", "--database", db}, []string{"--name"}, 2},
		{"orgs without subcommand", []string{"orgs"}, []string{"orgs create", "--help"}, 2},
		{"orgs unknown subcommand", []string{"orgs", "delete"}, []string{"orgs create", "--help"}, 2},
		{"orgs unknown flag", []string{"orgs", "create", "--nme", "x"}, []string{"nme", "--help"}, 2},
		{"orgs extra argument", []string{"orgs", "create", "--name", "x", "extra"}, []string{"extra"}, 2},
		{"mgmt-keys without --org", []string{"mgmt-keys", "create", "--database", db}, []string{"--org"}, 2},
		{"mgmt-keys without subcommand", []string{"mgmt-keys"}, []string{"mgmt-keys create"}, 2},
		{"mgmt-keys unknown org", []string{"mgmt-keys", "create", "--org", uuid.NewString(), "--database", db}, []string{"organization", "not found", "orgs list"}, 1},
		{"mgmt-keys malformed org", []string{"mgmt-keys", "create", "--org", "nope", "--database", db}, []string{"organization"}, 1},
		{"mgmt-keys unknown subcommand", []string{"mgmt-keys", "revoke"}, []string{"mgmt-keys disable", "--help"}, 2},
		{"mgmt-keys list without --org", []string{"mgmt-keys", "list", "--database", db}, []string{"--org", "mgmt-keys list"}, 2},
		{"mgmt-keys list unknown org", []string{"mgmt-keys", "list", "--org", uuid.NewString(), "--database", db}, []string{"organization", "not found", "orgs list"}, 1},
		{"mgmt-keys disable without KEY", []string{"mgmt-keys", "disable", "--org", org, "--database", db}, []string{"KEY is required", "mgmt-keys disable --org ID KEY"}, 2},
		{"mgmt-keys delete without --org", []string{"mgmt-keys", "delete", hash, "--database", db}, []string{"--org", "mgmt-keys delete"}, 2},
		{"mgmt-keys enable malformed KEY", []string{"mgmt-keys", "enable", "--org", org, "--database", db, "0123abc"}, []string{"KEY must be", "mgmt-keys list"}, 2},
		{"mgmt-keys disable two keys", []string{"mgmt-keys", "disable", "--org", org, hash, hash}, []string{"unexpected argument"}, 2},
		{"mgmt-keys disable unknown key", []string{"mgmt-keys", "disable", "--org", org, "--database", db, gatehouse.NewKeySecret(true)},
			[]string{"management key", "not found in organization " + org, "mgmt-keys list --org " + org}, 1},
		{"mgmt-keys delete unknown key", []string{"mgmt-keys", "delete", "--org", org, "--database", db, hash}, []string{hash, "not found", "mgmt-keys list"}, 1},
		{"mgmt-keys enable unknown org", []string{"mgmt-keys", "enable", "--org", uuid.NewString(), "--database", db, hash}, []string{"organization", "not found", "orgs list"}, 1},
		{"unknown command", []string{"frobnicate"}, []string{"frobnicate", "--help"}, 2},
		{"serve extra argument", []string{"serve", "now"}, []string{"now"}, 2},
		{"serve unknown flag", []string{"--port", "8080"}, []string{"port", "--help"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := cli(t, nil, tt.args...)
			if err == nil {
				t.Fatalf("gatehouse %v succeeded, want an error; stdout:\n%s", tt.args, out)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if got := exitCode(err); got != tt.wantCode {
				t.Errorf("exitCode(%v) = %d, want %d", err, got, tt.wantCode)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	tests := []struct {
		args []string
		out  string // expected in stdout, or in stderr (flag usage) when the error is flag.ErrHelp
	}{
		{[]string{"--help"}, "Usage:"},
		{[]string{"-h"}, "Usage:"},
		{[]string{"help"}, "Usage:"},
		{[]string{"serve", "--help"}, "-addr"},
		{[]string{"orgs", "--help"}, "orgs create"},
		{[]string{"orgs", "create", "--help"}, "-name"},
		{[]string{"orgs", "list", "--help"}, "-database"},
		{[]string{"--help"}, "orgs list"},
		{[]string{"mgmt-keys", "-h"}, "mgmt-keys create"},
		{[]string{"mgmt-keys", "create", "--help"}, "-org"},
		{[]string{"mgmt-keys", "list", "--help"}, "-org"},
		{[]string{"mgmt-keys", "disable", "-h"}, "-org"},
		{[]string{"mgmt-keys", "--help"}, "mgmt-keys disable|enable|delete"},
		{[]string{"credits", "--help"}, "credits grant"},
		{[]string{"credits", "grant", "--help"}, "-amount"},
		{[]string{"credits", "show", "-h"}, "-org"},
		{[]string{"members", "--help"}, "members invite"},
		{[]string{"members", "invite", "--help"}, "-public-url"},
		{[]string{"members", "list", "-h"}, "-org"},
		{[]string{"serve", "--help"}, "-public-url"},
		{[]string{"--help"}, "GATEHOUSE_PUBLIC_URL"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errOut, err := cli(t, nil, tt.args...)
			if code := exitCode(err); err != nil && code != 0 {
				t.Fatalf("err = %v (exit code %d), want success", err, code)
			}
			if err != nil && !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("err = %v", err)
			}
			if !strings.Contains(out+errOut, tt.out) {
				t.Errorf("help output does not mention %q:\n%s%s", tt.out, out, errOut)
			}
		})
	}
	// Every variable of the contract is documented.
	out, _, _ := cli(t, nil, "--help")
	for _, v := range []string{"GATEHOUSE_ADDR", "GATEHOUSE_DATABASE_URL", "GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY", "GATEHOUSE_SECRET_KEY"} {
		if !strings.Contains(out, v) {
			t.Errorf("usage does not document %s", v)
		}
	}
}

func TestExitCode(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{flag.ErrHelp, 0},
		{fmt.Errorf("wrapped: %w", flag.ErrHelp), 0},
		{usageError{"bad"}, 2},
		{fmt.Errorf("wrapped: %w", usageError{"bad"}), 2},
		{errors.New("boom"), 1},
	} {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

// TestCLICredits grants credits with the CLI while a server runs on the
// database, shows them, and reads them back through GET /credits.
func TestCLICredits(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	vars := map[string]string{"GATEHOUSE_DATABASE_URL": db}
	org := createOrg(t, vars, "--name", "Acme")
	key := createMgmtKey(t, vars, "--org", org)
	s := startServer(t, vars, "--addr", "127.0.0.1:0")
	credits := func() map[string]any {
		t.Helper()
		status, body := s.do("GET", "/api/v1/credits", key, nil)
		if status != http.StatusOK {
			t.Fatalf("GET /credits = %d %v", status, body)
		}
		return body["data"].(map[string]any)
	}
	if c := credits(); c["total_credits"] != 1e9 || c["total_usage"] != 0.0 {
		t.Fatalf("credits before any grant: %v", c)
	}
	out, _, err := cli(t, vars, "credits", "show", "--org", org)
	if err != nil || !strings.Contains(out, "credits:   unlimited") || !strings.Contains(out, "usage:     $0") {
		t.Fatalf("credits show before any grant: %v\n%s", err, out)
	}
	for _, g := range []struct{ amount, total string }{{"25", "25"}, {"-5.5", "19.5"}} {
		out, errOut, err := cli(t, vars, "credits", "grant", "--org", org, "--amount", g.amount)
		if err != nil || lastLine(out) != g.total {
			t.Fatalf("credits grant --amount %s: %v, last line %q, want %s\n%s%s", g.amount, err, lastLine(out), g.total, out, errOut)
		}
	}
	if c := credits(); c["total_credits"] != 19.5 || c["total_usage"] != 0.0 {
		t.Errorf("credits after the grants: %v", c)
	}
	out, _, err = cli(t, vars, "credits", "show", "--org", org)
	for _, want := range []string{"credits:   $19.5", "remaining: $19.5", "grants, newest first (2 in all)", "-$5.5  total $19.5", "+$25  total $25"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("credits show: %v; output does not hold %q:\n%s", err, want, out)
		}
	}
	if strings.Index(out, "-$5.5") > strings.Index(out, "+$25") {
		t.Errorf("credits show lists the grants oldest first:\n%s", out)
	}

	for _, c := range []struct {
		args    []string
		wantErr string
		code    int
	}{
		{[]string{"credits"}, "credits grant", 2},
		{[]string{"credits", "take"}, "credits grant", 2},
		{[]string{"credits", "grant", "--amount", "5"}, "--org", 2},
		{[]string{"credits", "show"}, "--org", 2},
		{[]string{"credits", "grant", "--org", org}, "--amount", 2},
		{[]string{"credits", "grant", "--org", org, "--amount", "0"}, "--amount", 2},
		{[]string{"credits", "grant", "--org", org, "--amount", "five"}, "--amount", 2},
		{[]string{"credits", "grant", "--org", org, "--amount", "1e10"}, "--amount", 2},
		{[]string{"credits", "show", "--org", org, "--amount", "5"}, "amount", 2},
		{[]string{"credits", "grant", "--org", org, "--amount", "-20"}, "below zero", 1},
		{[]string{"credits", "grant", "--org", uuid.NewString(), "--amount", "5"}, "not found", 1},
		{[]string{"credits", "show", "--org", "nope"}, "not found", 1},
	} {
		out, _, err := cli(t, vars, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.wantErr) || exitCode(err) != c.code {
			t.Errorf("gatehouse %v: %v (exit %d), want an error about %q (exit %d)\n%s", c.args, err, exitCode(err), c.wantErr, c.code, out)
		}
	}
	if c := credits(); c["total_credits"] != 19.5 {
		t.Errorf("credits after refused grants: %v", c)
	}
}
