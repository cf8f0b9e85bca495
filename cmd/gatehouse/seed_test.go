package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gatehouse"
	"gatehouse/postgres/pgtest"
)

// seedArgs spread rows over the default workspace and five others: the
// default workspace takes its floor (10,000 keys, 1,000 guardrails) and the
// rest go round the others.
var seedArgs = []string{"--keys", "12000", "--guardrails", "1500", "--members", "300",
	"--workspaces", "6", "--workspace-members", "50", "--samples", "40"}

// TestBenchSeed seeds a database in bulk and checks through the API that
// what was written reads back, lists and changes like rows the server
// made itself.
func TestBenchSeed(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "gatehouse.db")
		vars := map[string]string{"GATEHOUSE_DATABASE_URL": db, "GATEHOUSE_RATE_LIMIT_RPS": "0"}
		m := seedAndCheck(t, vars)
		if n := countRows(t, db, `SELECT count(*) FROM pragma_foreign_key_check`); n != 0 {
			t.Errorf("foreign_key_check reports %d rows", n)
		}
		if n := countRows(t, db, `SELECT count(*) FROM api_keys WHERE organization_id = '`+m.OrganizationID+`'`); n != 12001 {
			t.Errorf("%d keys in the organization, want 12,000 and the management key", n)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		vars := map[string]string{
			"GATEHOUSE_DATABASE_URL":             pgtest.NewDatabase(t),
			"GATEHOUSE_SECRET_KEY":               base64.StdEncoding.EncodeToString(b),
			"GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY": gatehouse.ManagementKeyPrefix + hex.EncodeToString(b),
			"GATEHOUSE_RATE_LIMIT_RPS":           "0",
		}
		seedAndCheck(t, vars)
	})
}

func seedAndCheck(t *testing.T, vars map[string]string) *seedManifest {
	manifestFile := filepath.Join(t.TempDir(), "manifest.json")
	var stdout, stderr bytes.Buffer
	args := append([]string{"bench-seed", "--manifest", manifestFile}, seedArgs...)
	if err := run(context.Background(), args, env(vars), &stdout, &stderr); err != nil {
		t.Fatalf("bench-seed: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("bench-seed printed %q", stdout.String())
	}
	orgID, key := lines[len(lines)-2], lines[len(lines)-1]
	if want := vars["GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY"]; want != "" && key != want {
		t.Errorf("printed key %q, want the bootstrap key", key)
	}
	if !strings.HasPrefix(key, gatehouse.ManagementKeyPrefix) || !strings.Contains(stderr.String(), "seeded api_keys") {
		t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	var m seedManifest
	raw, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.OrganizationID != orgID || m.ManagementKey != key {
		t.Fatalf("manifest names organization %s and key %s, stdout %s and %s", m.OrganizationID, m.ManagementKey, orgID, key)
	}
	s := startServer(t, vars, "serve", "--addr", "127.0.0.1:0")
	defer s.stop()
	c := seedChecker{t: t, s: s, key: key}
	c.reads(&m)
	c.lists(&m)
	c.writes(&m)
	return &m
}

type seedChecker struct {
	t   *testing.T
	s   *testServer
	key string
}

// get requests path and returns the response's data and total_count.
func (c seedChecker) get(path string) (any, int) {
	c.t.Helper()
	status, body := c.s.do("GET", path, c.key, nil)
	if status != http.StatusOK {
		c.t.Fatalf("GET %s = %d %v", path, status, body)
	}
	total, _ := body["total_count"].(float64)
	return body["data"], int(total)
}

func (c seedChecker) reads(m *seedManifest) {
	t := c.t
	if len(m.KeyHashes) != 40 || len(m.GuardrailIDs) != 40 || len(m.RegularKeys) != seedRegularKeys {
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
		status, body := c.s.do("GET", "/api/v1/key", plaintext, nil)
		data, _ := body["data"].(map[string]any)
		if status != http.StatusOK || data["is_management_key"] != false || data["limit"] != nil {
			t.Errorf("GET /key with a seeded regular key = %d %v", status, body)
		}
	}
}

func (c seedChecker) lists(m *seedManifest) {
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
	if data, _ := c.get("/api/v1/keys"); len(data.([]any)) == 0 {
		t.Error("GET /keys lists no key")
	}
}

// writes runs one request of each write benchmark on seeded rows.
func (c seedChecker) writes(m *seedManifest) {
	t := c.t
	w := m.Workspaces[0]
	status, body := c.s.do("POST", "/api/v1/workspaces/"+w.ID+"/members/remove", c.key, map[string]any{"user_ids": w.UserIDs})
	if status != http.StatusOK || body["removed_count"] != float64(50) {
		t.Errorf("bulk remove of a seeded workspace's members = %d %v", status, body)
	}
	if len(m.AssignGuardrailIDs) != 2 || len(m.AssignKeyHashes) < 200 {
		t.Fatalf("manifest: %d assign guardrails, %d assign keys", len(m.AssignGuardrailIDs), len(m.AssignKeyHashes))
	}
	for i, g := range m.AssignGuardrailIDs {
		path := fmt.Sprintf("/api/v1/guardrails/%s/assignments/keys", g)
		status, body := c.s.do("POST", path, c.key, map[string]any{"key_hashes": m.AssignKeyHashes[:100]})
		if status != http.StatusOK || body["assigned_count"] != float64(100) {
			t.Errorf("bulk assign %d of 100 seeded keys = %d %v", i, status, body)
		}
	}
	status, body = c.s.do("PATCH", "/api/v1/keys/"+m.KeyHashes[0], c.key, map[string]any{"name": "renamed"})
	if data, _ := body["data"].(map[string]any); status != http.StatusOK || data["name"] != "renamed" {
		t.Errorf("PATCH a seeded key = %d %v", status, body)
	}
}

func workspaceIDs(m *seedManifest) []string {
	var ids []string
	for _, w := range m.Workspaces {
		ids = append(ids, w.ID)
	}
	return ids
}

func TestBenchSeedFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--workspaces", "0"},
		{"--keys", "-1"},
		{"--members", "5", "--workspace-members", "6"},
		{"extra"},
	} {
		db := filepath.Join(t.TempDir(), "gatehouse.db")
		err := run(context.Background(), append([]string{"bench-seed", "--database", db}, args...), env(nil), &bytes.Buffer{}, &bytes.Buffer{})
		if exitCode(err) != 2 {
			t.Errorf("bench-seed %v = %v, want a usage error", args, err)
		}
	}
}
