// Package seed fills a Gatehouse database with many rows at once, for the
// scale benchmarks of bench/ (`gatehouse bench-seed`). The organization is
// created through the store, so that it and its default workspace are what
// the server makes; every other row is written in bulk (multi-row INSERTs
// in large transactions on SQLite, COPY on PostgreSQL) with the values the
// store itself would write. Ids and key plaintexts derive from a random
// secret of the run, so nothing of a million rows is held in memory.
package seed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"gatehouse"
)

// Options are the sizes of a seeded organization.
type Options struct {
	Keys, Guardrails, Members int
	// Workspaces counts the default workspace.
	Workspaces int
	// WorkspaceMembers is the number of members of each workspace other
	// than the default one (which holds every member without rows).
	WorkspaceMembers int
	// Samples is how many ids of each kind the manifest samples.
	Samples int
	OrgName string
	// Generations is how many calls the usage ledger holds, spread over
	// the GenerationDays days before the seeding (see generations.go).
	Generations, GenerationDays int
	// Audit writes the audit log of the keys' creations, as the API would
	// have (see audit.go).
	Audit bool
	// AssignEvery assigns every AssignEvery-th key (past the reserved
	// ones) and member to a guardrail: 10 unless told (or 0), 1 for lists
	// of assignments as long as the keys'.
	AssignEvery int
	// Presets is how many presets the default workspace holds, each with
	// its one version.
	Presets int
}

// DefaultOptions returns the sizes `gatehouse bench-seed` seeds without flags.
func DefaultOptions() Options {
	return Options{Keys: 1000, Guardrails: 100, Members: 100, Workspaces: 10, Samples: 1000, OrgName: "Bench organization",
		GenerationDays: 90, AssignEvery: 10}
}

// Validate reports options that cannot be seeded.
func (o Options) Validate() error {
	switch {
	case o.Keys < 0 || o.Guardrails < 0 || o.Members < 0 || o.WorkspaceMembers < 0 || o.Samples < 0 || o.Generations < 0 || o.Presets < 0:
		return errors.New("counts must not be negative")
	case o.Generations > 0 && o.Keys == 0:
		return errors.New("--generations needs keys to have made the calls: set --keys")
	case o.Generations > 0 && o.GenerationDays < 1:
		return errors.New("--generation-days must be at least 1")
	case o.AssignEvery < 0:
		return errors.New("--assign-every must be at least 1")
	case o.Workspaces < 1:
		return errors.New("--workspaces counts the default workspace, so it must be at least 1")
	case o.WorkspaceMembers > o.Members:
		return errors.New("--workspace-members must not exceed --members")
	}
	return nil
}

// Organization is the organization that receives the seeded rows.
type Organization struct {
	ID                 string
	ManagementKey      string // plaintext
	DefaultWorkspaceID string
}

// NewOrganization creates the organization through the store, with a
// management key: bootstrapKey when it is set, else a new one.
func NewOrganization(ctx context.Context, store gatehouse.Store, name, bootstrapKey string) (*Organization, error) {
	org, err := store.CreateOrganization(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("create organization: %s", gatehouse.ErrorMessage(err))
	}
	out := &Organization{ID: org.ID, ManagementKey: bootstrapKey}
	if bootstrapKey != "" {
		if _, err := store.EnsureManagementKey(ctx, org.ID, bootstrapKey, "Bootstrap management key"); err != nil {
			return nil, fmt.Errorf("GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY: %s", gatehouse.ErrorMessage(err))
		}
	} else if _, out.ManagementKey, err = store.CreateManagementKey(ctx, org.ID, "Bench management key"); err != nil {
		return nil, fmt.Errorf("create management key: %s", gatehouse.ErrorMessage(err))
	}
	w, err := store.FindWorkspace(ctx, org.ID, "")
	if err != nil {
		return nil, fmt.Errorf("find default workspace: %s", gatehouse.ErrorMessage(err))
	}
	out.DefaultWorkspaceID = w.ID
	return out, nil
}

// Fill writes the rows of o into org, in the database at databaseURL (a
// SQLite path or a postgres:// URL) whose store is closed, and returns the
// manifest of what it wrote. Progress goes to log, a line per table and
// more for large ones.
func Fill(ctx context.Context, databaseURL string, org *Organization, o Options, log io.Writer) (*Manifest, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	p := newPlan(o, org, time.Now())
	bulk, err := openBulk(ctx, databaseURL)
	if err != nil {
		return nil, err
	}
	defer bulk.close()
	for _, t := range p.tables() {
		if err := fillTable(ctx, bulk, t, log); err != nil {
			return nil, fmt.Errorf("seed %s: %w", t.name, err)
		}
	}
	if err := bulk.finish(ctx); err != nil {
		return nil, err
	}
	return p.manifest(), nil
}

// fillTable writes the rows of t, building its indexes after them when it
// defers them.
func fillTable(ctx context.Context, bulk bulkWriter, t table, log io.Writer) error {
	var indexes []index
	if t.deferIndexes {
		var err error
		if indexes, err = bulk.dropIndexes(ctx, t.name); err != nil {
			return err
		}
	}
	start := time.Now()
	n, err := bulk.insert(ctx, t, func(done int) {
		fmt.Fprintf(log, "  %s: %d rows (%s)\n", t.name, done, time.Since(start).Round(100*time.Millisecond))
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "seeded %-18s %9d rows in %s\n", t.name, n, time.Since(start).Round(10*time.Millisecond))
	for _, ix := range indexes {
		start := time.Now()
		if err := bulk.exec(ctx, ix.definition); err != nil {
			return fmt.Errorf("build index %s: %w", ix.name, err)
		}
		fmt.Fprintf(log, "built index %-18s in %s\n", ix.name, time.Since(start).Round(10*time.Millisecond))
	}
	return nil
}
