package seed

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/httpapi"
	"gatehouse/postgres"
	"gatehouse/postgres/pgtest"
	"gatehouse/ratelimit"
	"gatehouse/sqlite"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

// testOptions spread rows over the default workspace and five others: the
// default workspace takes its floor (10,000 keys, 1,000 guardrails) and the
// rest go round the others.
var testOptions = Options{Keys: 12000, Guardrails: 1500, Members: 300, Workspaces: 6, WorkspaceMembers: 50,
	Samples: 40, OrgName: "Bench organization", Audit: true, Presets: 30}

// opener opens the store of the seeded database.
type opener func(ctx context.Context, box *gatehouse.SecretBox) (gatehouse.Store, error)

// TestSeed seeds a database in bulk and checks through the API that what
// was written reads back, lists and changes like rows the server made
// itself.
func TestSeed(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "gatehouse.db")
		m := seedAndCheck(t, path, "", func(ctx context.Context, box *gatehouse.SecretBox) (gatehouse.Store, error) {
			return sqlite.Open(ctx, path, box)
		})
		if n := countRows(t, path, `SELECT count(*) FROM pragma_foreign_key_check`); n != 0 {
			t.Errorf("foreign_key_check reports %d rows", n)
		}
		if n := countRows(t, path, `SELECT count(*) FROM api_keys WHERE organization_id = '`+m.OrganizationID+`'`); n != 12001 {
			t.Errorf("%d keys in the organization, want 12,000 and the management key", n)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.NewDatabase(t)
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		seedAndCheck(t, url, gatehouse.ManagementKeyPrefix+hex.EncodeToString(b), func(ctx context.Context, box *gatehouse.SecretBox) (gatehouse.Store, error) {
			return postgres.Open(ctx, url, box, postgres.Options{})
		})
	})
}

// seedAndCheck seeds testOptions into the database at url, then serves it
// and checks the rows through the API.
func seedAndCheck(t *testing.T, url, bootstrapKey string, open opener) *Manifest {
	t.Helper()
	ctx := context.Background()
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	store, err := open(ctx, box)
	if err != nil {
		t.Fatal(err)
	}
	org, err := NewOrganization(ctx, store, testOptions.OrgName, bootstrapKey)
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	if bootstrapKey != "" && org.ManagementKey != bootstrapKey {
		t.Errorf("management key %q, want the bootstrap key", org.ManagementKey)
	}
	var log bytes.Buffer
	m, err := Fill(ctx, url, org, testOptions, &log)
	if err != nil {
		t.Fatalf("Fill: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "seeded api_keys") {
		t.Errorf("Fill logged %q, want a line per table", log.String())
	}
	if m.OrganizationID != org.ID || m.ManagementKey != org.ManagementKey || m.DefaultWorkspaceID != org.DefaultWorkspaceID {
		t.Fatalf("manifest names organization %s, key %s, workspace %s; want %+v", m.OrganizationID, m.ManagementKey, m.DefaultWorkspaceID, org)
	}
	checkManifestFile(t, m)
	if store, err = open(ctx, box); err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	// The counts and blocks the seed wrote are those the triggers would
	// have kept, and the anchors those the store would have placed.
	if err := store.(interface{ CheckListBlocks(context.Context) error }).CheckListBlocks(ctx); err != nil {
		t.Errorf("the seeded lists: %v", err)
	}
	srv := httptest.NewServer(httpapi.NewHandler(store, ratelimit.Unlimited{}, slog.New(slog.NewTextHandler(io.Discard, nil)),
		prometheus.NewRegistry(), time.Now, httpapi.DataPlane{}))
	defer srv.Close()
	c := checker{t: t, url: srv.URL, key: org.ManagementKey}
	c.reads(m)
	c.lists(m)
	c.writes(m)
	return m
}

// checkManifestFile writes the manifest and reads it back.
func checkManifestFile(t *testing.T, m *Manifest) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.json")
	if err := m.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("manifest file mode %v, want 0600: it holds key plaintexts", info.Mode().Perm())
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back Manifest
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, &back); diff != "" {
		t.Errorf("manifest read back differs (-want +got):\n%s", diff)
	}
}

// checker requests the API of a seeded database with its management key.
type checker struct {
	t   *testing.T
	url string
	key string
}

// get requests path and returns the response's data and total_count.
func (c checker) get(path string) (any, int) {
	c.t.Helper()
	status, body := c.do("GET", path, c.key, nil)
	if status != http.StatusOK {
		c.t.Fatalf("GET %s = %d %v", path, status, body)
	}
	total, _ := body["total_count"].(float64)
	return body["data"], int(total)
}

func (c checker) reads(m *Manifest) {
	t := c.t
	if len(m.KeyHashes) != 40 || len(m.GuardrailIDs) != 40 || len(m.RegularKeys) != regularKeys {
		t.Fatalf("manifest samples: %d keys, %d guardrails, %d regular keys", len(m.KeyHashes), len(m.GuardrailIDs), len(m.RegularKeys))
	}
	workspaces := map[string]bool{}
	for _, h := range m.KeyHashes {
		data, _ := c.get("/api/v1/keys/" + h)
		k := data.(map[string]any)
		if k["hash"] != h || !strings.HasPrefix(str(k["name"]), "bench-key-") {
			t.Errorf("GET /keys/%s = %v", h, k)
		}
		workspaces[str(k["workspace_id"])] = true
	}
	if len(workspaces) < 2 {
		t.Errorf("the sampled keys sit in %d workspaces, want them spread", len(workspaces))
	}
	for _, id := range m.GuardrailIDs {
		data, _ := c.get("/api/v1/guardrails/" + id)
		if g := data.(map[string]any); g["id"] != id || !strings.HasPrefix(str(g["name"]), "bench-guardrail-") {
			t.Errorf("GET /guardrails/%s = %v", id, g)
		}
	}
	for _, plaintext := range m.RegularKeys[:2] {
		status, body := c.do("GET", "/api/v1/key", plaintext, nil)
		data, _ := body["data"].(map[string]any)
		if status != http.StatusOK || data["is_management_key"] != false || data["limit"] != nil {
			t.Errorf("GET /key with a seeded regular key = %d %v", status, body)
		}
	}
}

func (c checker) lists(m *Manifest) {
	t := c.t
	if _, n := c.get("/api/v1/workspaces"); n != 6 {
		t.Errorf("%d workspaces, want 6", n)
	}
	guardrails := 0
	for _, w := range append([]string{m.DefaultWorkspaceID}, workspaceIDs(m)...) {
		_, n := c.get("/api/v1/guardrails?limit=100&workspace_id=" + w)
		guardrails += n
	}
	if guardrails != 1500 {
		t.Errorf("the workspaces list %d guardrails in all, want 1500", guardrails)
	}
	if data, n := c.get("/api/v1/guardrails?limit=100"); n != 1000 || len(data.([]any)) != 100 {
		t.Errorf("the default workspace lists %d guardrails (a page of %d), want 1000 (100)", n, len(data.([]any)))
	}
	members, n := c.get("/api/v1/organization/members?limit=100")
	if n != 300 || len(members.([]any)) != 100 {
		t.Errorf("%d organization members, want 300", n)
	}
	for _, w := range m.Workspaces {
		data, n := c.get("/api/v1/workspaces/" + w.ID + "/members?limit=100")
		var got []string
		for _, wm := range data.([]any) {
			got = append(got, str(wm.(map[string]any)["user_id"]))
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(w.UserIDs))
		if n != 50 || !slices.Equal(got, want) {
			t.Errorf("workspace %s lists %d members %v, want the manifest's 50", w.ID, n, got)
		}
	}
	if _, n := c.get("/api/v1/guardrails/assignments/keys"); n != 200 {
		t.Errorf("%d key assignments, want 200 (every tenth key from 10,000, past the reserved ones)", n)
	}
	if _, n := c.get("/api/v1/guardrails/assignments/members"); n != 30 {
		t.Errorf("%d member assignments, want 30 (every tenth member)", n)
	}
	if data, n := c.get("/api/v1/presets?limit=100"); n != 30 || len(data.([]any)) != 30 ||
		str(data.([]any)[0].(map[string]any)["slug"]) != "bench-preset-29" {
		t.Errorf("%d presets, the first %v; want 30, the last made first", n, data)
	}
	if data, _ := c.get("/api/v1/keys"); len(data.([]any)) == 0 {
		t.Error("GET /keys lists no key")
	}
	// The audit log of the keys' creations, by the management key.
	entries, n := c.get("/api/v1/audit-log?operation=key.create&limit=1")
	if n != 11999 {
		t.Errorf("%d key.create entries, want 11,999 (a workspace.update instead every 10,000th)", n)
	} else if e := entries.([]any)[0].(map[string]any); str(e["actor"].(map[string]any)["key_hash"]) != gatehouse.HashKey(c.key) || e["resource_type"] != "key" {
		t.Errorf("a key.create entry %v, want the management key's", e)
	}
	if _, n := c.get("/api/v1/audit-log?operation=workspace.update"); n != 1 {
		t.Errorf("%d workspace.update entries, want 1", n)
	}
}

// writes runs one request of each write benchmark on seeded rows.
func (c checker) writes(m *Manifest) {
	t := c.t
	w := m.Workspaces[0]
	status, body := c.do("POST", "/api/v1/workspaces/"+w.ID+"/members/remove", c.key, map[string]any{"user_ids": w.UserIDs})
	if status != http.StatusOK || body["removed_count"] != float64(50) {
		t.Errorf("bulk remove of a seeded workspace's members = %d %v", status, body)
	}
	if len(m.AssignGuardrailIDs) != 2 || len(m.AssignKeyHashes) < 200 {
		t.Fatalf("manifest: %d assign guardrails, %d assign keys", len(m.AssignGuardrailIDs), len(m.AssignKeyHashes))
	}
	for i, g := range m.AssignGuardrailIDs {
		path := fmt.Sprintf("/api/v1/guardrails/%s/assignments/keys", g)
		status, body := c.do("POST", path, c.key, map[string]any{"key_hashes": m.AssignKeyHashes[:100]})
		if status != http.StatusOK || body["assigned_count"] != float64(100) {
			t.Errorf("bulk assign %d of 100 seeded keys = %d %v", i, status, body)
		}
	}
	status, body = c.do("PATCH", "/api/v1/keys/"+m.KeyHashes[0], c.key, map[string]any{"name": "renamed"})
	if data, _ := body["data"].(map[string]any); status != http.StatusOK || data["name"] != "renamed" {
		t.Errorf("PATCH a seeded key = %d %v", status, body)
	}
}

func workspaceIDs(m *Manifest) []string {
	var ids []string
	for _, w := range m.Workspaces {
		ids = append(ids, w.ID)
	}
	return ids
}

// do sends a request with the management key and a JSON body, and decodes
// the JSON answer.
func (c checker) do(method, path, key string, body any) (int, map[string]any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.url+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// countRows runs a count query on the SQLite file.
func countRows(t *testing.T, path, query string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestOptionsValidate(t *testing.T) {
	valid := DefaultOptions()
	if err := valid.Validate(); err != nil {
		t.Errorf("DefaultOptions().Validate() = %v", err)
	}
	for _, tc := range []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.Workspaces = 0 }, "at least 1"},
		{func(o *Options) { o.Keys = -1 }, "negative"},
		{func(o *Options) { o.Members, o.WorkspaceMembers = 5, 6 }, "must not exceed --members"},
	} {
		o := DefaultOptions()
		tc.change(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an error saying %q", o, err, tc.want)
		}
	}
}
