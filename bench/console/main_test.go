package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"gatehouse/bench/seed"
)

// TestRun seeds a small organization (with a ledger) and times every page
// once: each renders with 200.
func TestRun(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	db, err := open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	org, err := seed.NewOrganization(ctx, db, "Bench organization", "")
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	o := seed.Options{Keys: 2000, Guardrails: 10, Members: 20, Workspaces: 3, WorkspaceMembers: 10, Samples: 20, Generations: 3000, GenerationDays: 40,
		OrgName: "Bench organization", Audit: true}
	m, err := seed.Fill(ctx, path, org, o, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(t.TempDir(), "m.json")
	if err := m.WriteFile(manifest); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run([]string{"-database", path, "-manifest", manifest, "-runs", "1"}, &out); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), " ms |\n"); n != 39 {
		t.Errorf("%d pages rendered, want 39:\n%s", n, out.String())
	}
}
