package scim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"gatehouse"
	"gatehouse/keycache"
	"gatehouse/ratelimit"
	"gatehouse/scim"
	"gatehouse/sqlite"
	"gatehouse/sqlite/sqlitetest"
)

// env is the SCIM handler over a real store (SQLite in a temporary
// directory, behind the key cache, as the server wires it), serving on the
// loopback, with one organization and its SCIM token.
type env struct {
	t     *testing.T
	ctx   context.Context
	URL   string
	db    *sqlite.DB
	store gatehouse.Store
	org   *gatehouse.Organization
	token string
	logs  *bytes.Buffer
	path  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, ctx: context.Background(), logs: &bytes.Buffer{}, path: sqlitetest.Path(t, "gatehouse.db")}
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	e.db, err = sqlite.Open(e.ctx, e.path, box)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.db.Close() })
	e.store = keycache.New(e.db, keycache.Options{})
	h, err := scim.NewHandler(e.store, ratelimit.Unlimited{}, slog.New(slog.NewJSONHandler(e.logs, nil)), nil, "https://gatehouse.example.com")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(scim.Prefix+"/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e.URL = srv.URL + scim.Prefix
	e.org, e.token = e.newOrg("Acme")
	return e
}

// newOrg creates an organization and its SCIM token.
func (e *env) newOrg(name string) (*gatehouse.Organization, string) {
	e.t.Helper()
	org, err := e.store.CreateOrganization(e.ctx, name)
	if err != nil {
		e.t.Fatal(err)
	}
	_, token, err := e.store.CreateSCIMToken(e.ctx, org.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return org, token
}

// answer is a response: its status and its body decoded.
type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// do sends a request with the organization's token; body is JSON text.
func (e *env) do(method, path, body string) answer {
	e.t.Helper()
	return e.doWith(e.token, method, path, body)
}

func (e *env) doWith(token, method, path, body string) answer {
	e.t.Helper()
	req, err := http.NewRequest(method, e.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/scim+json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &a.body); err != nil {
			e.t.Fatalf("%s %s: %d answer is not a JSON object: %s", method, path, resp.StatusCode, raw)
		}
	}
	if resp.StatusCode >= 400 && a.body["schemas"] == nil {
		e.t.Fatalf("%s %s: error %d without SCIM's error schema: %s", method, path, resp.StatusCode, raw)
	}
	return a
}

// want fails the test unless the answer has the status.
func (a answer) want(t *testing.T, what string, status int) answer {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: %d, want %d: %s", what, a.status, status, a.raw)
	}
	return a
}

// str reads a string at a dotted path of the body.
func (a answer) str(path string) string {
	s, _ := a.get(path).(string)
	return s
}

func (a answer) get(path string) any {
	var v any = a.body
	for part := range strings.SplitSeq(path, ".") {
		switch c := v.(type) {
		case map[string]any:
			v = c[part]
		case []any:
			i := 0
			for _, ch := range part {
				i = i*10 + int(ch-'0')
			}
			if i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}

// role returns a member's role.
func (e *env) role(userID string) string {
	e.t.Helper()
	list, err := e.store.FindMembersByRef(e.ctx, e.org.ID, []string{userID})
	if err != nil || len(list) != 1 {
		e.t.Fatalf("member %s: %v, %v", userID, list, err)
	}
	return list[0].Role
}

// auditOps returns the operations of the organization's audit log, oldest
// first.
func (e *env) auditOps() []string {
	e.t.Helper()
	list, _, err := e.store.FindAuditEntries(e.ctx, e.org.ID, gatehouse.AuditFilter{Page: gatehouse.Page{Limit: 100}})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for i := len(list) - 1; i >= 0; i-- {
		out = append(out, list[i].Operation)
	}
	return out
}
