package main

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
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

func TestCLIErrors(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	createOrg(t, nil, "--name", "Acme", "--database", db) // the database exists
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
		{[]string{"mgmt-keys", "-h"}, "mgmt-keys create"},
		{[]string{"mgmt-keys", "create", "--help"}, "-org"},
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
