package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gatehouse"
	"gatehouse/bench/seed"
)

// TestBenchSeed runs the command: a small seed on SQLite whose summary names
// the organization and its key, as the manifest does. What the rows are is
// bench/seed's test.
func TestBenchSeed(t *testing.T) {
	dir := t.TempDir()
	db, manifestFile := filepath.Join(dir, "gatehouse.db"), filepath.Join(dir, "manifest.json")
	var stdout, stderr bytes.Buffer
	args := []string{"bench-seed", "--database", db, "--manifest", manifestFile, "--keys", "30", "--guardrails", "5",
		"--members", "7", "--workspaces", "2", "--workspace-members", "3", "--samples", "4"}
	if err := run(context.Background(), args, env(nil), &stdout, &stderr); err != nil {
		t.Fatalf("bench-seed: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) < 2 || !strings.Contains(stderr.String(), "seeded api_keys") {
		t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	orgID, key := lines[len(lines)-2], lines[len(lines)-1]
	if !strings.HasPrefix(key, gatehouse.ManagementKeyPrefix) {
		t.Errorf("last line %q is not a management key", key)
	}
	raw, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	var m seed.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.OrganizationID != orgID || m.ManagementKey != key || len(m.KeyHashes) != 4 {
		t.Errorf("manifest names organization %s, key %s, %d keys; stdout %s and %s", m.OrganizationID, m.ManagementKey, len(m.KeyHashes), orgID, key)
	}
	if n := countRows(t, db, `SELECT count(*) FROM api_keys WHERE organization_id = '`+orgID+`'`); n != 31 {
		t.Errorf("%d keys in the organization, want 30 and the management key", n)
	}
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
