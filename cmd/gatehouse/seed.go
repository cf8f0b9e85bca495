package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"gatehouse/bench/seed"
)

// benchSeedCommand runs `gatehouse bench-seed`: it creates one organization
// through the store, then fills it with rows written in bulk, for the scale
// benchmarks of bench/ (see package seed).
func benchSeedCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := DefaultConfig()
	if err := cfg.fromEnv(getenv); err != nil {
		return err
	}
	opts, manifestFile, err := parseSeedFlags(args, &cfg, stderr)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	start := time.Now()
	org, err := seedOrganization(ctx, cfg, opts.OrgName)
	if err != nil {
		return err
	}
	manifest, err := seed.Fill(ctx, cfg.DatabaseURL, org, opts, stderr)
	if err != nil {
		return err
	}
	if manifestFile != "" {
		if err := manifest.WriteFile(manifestFile); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "Seeded organization %q: %d keys, %d guardrails, %d members, %d workspaces, %d generations in %s.\n%s\n%s\n",
		opts.OrgName, opts.Keys, opts.Guardrails, opts.Members, opts.Workspaces, opts.Generations,
		time.Since(start).Round(10*time.Millisecond), org.ID, org.ManagementKey)
	return nil
}

func parseSeedFlags(args []string, cfg *Config, stderr io.Writer) (o seed.Options, manifestFile string, err error) {
	o = seed.DefaultOptions()
	fs := flag.NewFlagSet("bench-seed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	databaseFlag(fs, cfg)
	fs.IntVar(&o.Keys, "keys", o.Keys, "regular API keys")
	fs.IntVar(&o.Guardrails, "guardrails", o.Guardrails, "guardrails")
	fs.IntVar(&o.Members, "members", o.Members, "organization members")
	fs.IntVar(&o.Workspaces, "workspaces", o.Workspaces, "workspaces, the default one included")
	fs.IntVar(&o.WorkspaceMembers, "workspace-members", o.WorkspaceMembers, "members of each workspace other than the default (at most --members)")
	fs.IntVar(&o.Samples, "samples", o.Samples, "how many ids of each kind the manifest samples")
	fs.IntVar(&o.Generations, "generations", o.Generations, "calls in the usage ledger, made by the seeded keys")
	fs.IntVar(&o.GenerationDays, "generation-days", o.GenerationDays, "days before now that the calls spread over")
	fs.BoolVar(&o.Audit, "audit", o.Audit, "write the audit log of the keys' creations (one entry a key), as the API would have")
	fs.IntVar(&o.Presets, "presets", o.Presets, "presets of the default workspace")
	fs.IntVar(&o.AssignEvery, "assign-every", o.AssignEvery, "assign every Nth key (past the reserved ones) and member to a guardrail")
	fs.StringVar(&o.OrgName, "org-name", o.OrgName, "name of the organization")
	fs.StringVar(&manifestFile, "manifest", "", "write a JSON file of ids for the benchmarks (sampled keys, guardrails, workspaces and their members)")
	if err := parseFlags(fs, args); err != nil {
		return o, "", err
	}
	if err := o.Validate(); err != nil {
		return o, "", usageError{"bench-seed: " + err.Error()}
	}
	return o, manifestFile, nil
}

// seedOrganization creates the organization through the store, closed
// again before the bulk writes.
func seedOrganization(ctx context.Context, cfg Config, name string) (*seed.Organization, error) {
	// Nothing is sealed: the organization and its key only.
	store, err := openStore(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), openMode{})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return seed.NewOrganization(ctx, store, name, cfg.BootstrapKey)
}
