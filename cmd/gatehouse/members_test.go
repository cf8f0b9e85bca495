package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"gatehouse"

	"github.com/google/uuid"
)

// invite runs `members invite` and returns the token of the link it
// prints as its last line, which must start with base.
func invite(t *testing.T, vars map[string]string, base string, args ...string) string {
	t.Helper()
	out, errOut, err := cli(t, vars, append([]string{"members", "invite"}, args...)...)
	if err != nil {
		t.Fatalf("members invite %v: %v\n%s%s", args, err, out, errOut)
	}
	token, ok := strings.CutPrefix(lastLine(out), base+"/invite/")
	if !ok || len(token) != 43 {
		t.Fatalf("members invite %v: last line %q, want %s/invite/<token>\n%s", args, lastLine(out), base, out)
	}
	return token
}

// withAccounts opens the database of vars with its key, as the server does.
func withAccounts(t *testing.T, vars map[string]string, fn func(gatehouse.Store, *gatehouse.Accounts)) {
	t.Helper()
	cfg := DefaultConfig()
	if err := cfg.fromEnv(env(vars)); err != nil {
		t.Fatal(err)
	}
	err := withStore(context.Background(), cfg, io.Discard, openMode{existing: true, secrets: true}, func(s gatehouse.Store) error {
		fn(s, gatehouse.NewAccounts(s, nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCLIMembers invites with no server running, accepts the link, lists
// the members, and refuses bad invitations.
func TestCLIMembers(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "g.db")
	vars := map[string]string{"GATEHOUSE_DATABASE_URL": db}
	org := createOrg(t, vars, "--name", "Acme")

	token := invite(t, vars, "http://127.0.0.1:8080", "--org", org, "--email", "ada@example.com", "--role", "admin")
	withAccounts(t, vars, func(s gatehouse.Store, a *gatehouse.Accounts) {
		v, err := s.FindInvitation(ctx, token)
		if err != nil || v.Email != "ada@example.com" || v.Role != gatehouse.RoleAdmin || v.OrganizationID != org {
			t.Fatalf("the CLI's invitation: %+v, %v", v, err)
		}
		if _, err := a.AcceptInvitation(ctx, token, "correct horse battery"); err != nil {
			t.Fatal(err)
		}
	})
	invite(t, vars, "http://127.0.0.1:8080", "--org", org, "--email", "grace@example.com")
	out, _, err := cli(t, vars, "members", "list", "--org", org)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 2 || !strings.Contains(lines[1], "org:admin") || !strings.Contains(lines[1], "password set") ||
		!strings.HasSuffix(lines[1], "ada@example.com") || !strings.HasPrefix(lines[1], "user_") {
		t.Errorf("members list: %v\n%s", err, out)
	}

	// The link's base: GATEHOUSE_PUBLIC_URL, --public-url, or the address.
	for _, c := range []struct {
		vars map[string]string
		args []string
		base string
	}{
		{map[string]string{"GATEHOUSE_PUBLIC_URL": "https://gh.example.com/"}, nil, "https://gh.example.com"},
		{map[string]string{"GATEHOUSE_PUBLIC_URL": "https://gh.example.com"}, []string{"--public-url", "https://console.example.com/gh"}, "https://console.example.com/gh"},
		{map[string]string{"GATEHOUSE_ADDR": "0.0.0.0:9090"}, nil, "http://127.0.0.1:9090"},
		{nil, []string{"--addr", "[::]:9091"}, "http://127.0.0.1:9091"},
		{nil, []string{"--addr", "10.1.2.3:80"}, "http://10.1.2.3:80"},
	} {
		v := map[string]string{"GATEHOUSE_DATABASE_URL": db}
		for k, val := range c.vars {
			v[k] = val
		}
		invite(t, v, c.base, append([]string{"--org", org, "--email", "x-" + uuid.NewString()[:8] + "@example.com"}, c.args...)...)
	}

	for _, c := range []struct {
		vars    map[string]string
		args    []string
		wantErr string
		code    int
	}{
		{nil, []string{"members"}, "members invite", 2},
		{nil, []string{"members", "remove"}, "members invite", 2},
		{nil, []string{"members", "invite", "--email", "x@example.com"}, "--org", 2},
		{nil, []string{"members", "list"}, "--org", 2},
		{nil, []string{"members", "invite", "--org", org}, "--email", 2},
		{nil, []string{"members", "invite", "--org", org, "--email", "x@example.com", "--role", "owner"}, "--role", 2},
		{nil, []string{"members", "invite", "--org", org, "--email", "not an email"}, "email: must be a plain email address", 1},
		{nil, []string{"members", "invite", "--org", org, "--email", "ADA@example.com"}, "has a password already", 1},
		{nil, []string{"members", "invite", "--org", uuid.NewString(), "--email", "x@example.com"}, "not found", 1},
		{nil, []string{"members", "list", "--org", "nope"}, "not found", 1},
		{map[string]string{"GATEHOUSE_PUBLIC_URL": "ftp://gh.example.com"}, []string{"members", "invite", "--org", org, "--email", "x@example.com"}, "GATEHOUSE_PUBLIC_URL", 1},
		{map[string]string{"GATEHOUSE_PUBLIC_URL": "https://gh.example.com/?a=1"}, []string{"members", "invite", "--org", org, "--email", "x@example.com"}, "GATEHOUSE_PUBLIC_URL", 1},
		{map[string]string{"GATEHOUSE_DATABASE_URL": filepath.Join(t.TempDir(), "none.db")}, []string{"members", "invite", "--org", org, "--email", "x@example.com"}, "none.db", 1},
	} {
		v := map[string]string{"GATEHOUSE_DATABASE_URL": db}
		for k, val := range c.vars {
			v[k] = val
		}
		out, _, err := cli(t, v, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.wantErr) || exitCode(err) != c.code {
			t.Errorf("gatehouse %v: %v (exit %d), want an error about %q (exit %d)\n%s", c.args, err, exitCode(err), c.wantErr, c.code, out)
		}
	}
	withAccounts(t, vars, func(s gatehouse.Store, _ *gatehouse.Accounts) {
		if _, n, err := s.FindInvitations(ctx, org, gatehouse.Page{Limit: 100}); err != nil || n != 6 {
			t.Errorf("invitations after the refused ones: %d, %v; want 6", n, err)
		}
	})
}

// TestServePublicURL: a server started on port 0 hands out links on the
// port it bound, unless GATEHOUSE_PUBLIC_URL says otherwise.
func TestServePublicURL(t *testing.T) {
	for _, c := range []struct {
		vars map[string]string
		base func(addr string) string
	}{
		{nil, func(addr string) string { return "http://" + addr }},
		{map[string]string{"GATEHOUSE_PUBLIC_URL": "https://gh.example.com"}, func(string) string { return "https://gh.example.com" }},
	} {
		vars := map[string]string{"GATEHOUSE_DATABASE_URL": filepath.Join(t.TempDir(), "g.db")}
		for k, v := range c.vars {
			vars[k] = v
		}
		s := startServer(t, vars, "--addr", "127.0.0.1:0")
		mgmt := printedKeys(t, s.stderr.String())[0]
		status, body := s.do("POST", "/api/v1/organization/invitations", mgmt, map[string]any{"email": "ada@example.com"})
		if status != http.StatusCreated {
			t.Fatalf("POST /organization/invitations = %d %v", status, body)
		}
		url, _ := body["data"].(map[string]any)["url"].(string)
		if !strings.HasPrefix(url, c.base(s.addr)+"/invite/") {
			t.Errorf("url %q, want it under %s", url, c.base(s.addr))
		}
		s.stop()
	}
}
