package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"gatehouse"
)

// orgsCommand runs `gatehouse orgs create` and `gatehouse orgs list`.
func orgsCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if len(args) == 0 || (args[0] != "create" && args[0] != "list") {
		return usageError{"usage: gatehouse orgs create --name NAME, or gatehouse orgs list"}
	}
	cfg := DefaultConfig()
	if err := cfg.fromEnv(getenv); err != nil {
		return err
	}
	fs := flag.NewFlagSet("orgs "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := new(string)
	if args[0] == "create" {
		name = fs.String("name", "", "name of the organization (required)")
	}
	databaseFlag(fs, &cfg)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if args[0] == "list" {
		return withStore(ctx, cfg, stderr, openMode{existing: true}, func(store gatehouse.Store) error {
			return listOrganizations(ctx, store, stdout)
		})
	}
	if *name == "" {
		return usageError{"--name is required: gatehouse orgs create --name NAME"}
	}
	return withStore(ctx, cfg, stderr, openMode{}, func(store gatehouse.Store) error {
		org, err := store.CreateOrganization(ctx, *name)
		if err != nil {
			return fmt.Errorf("create organization: %s", gatehouse.ErrorMessage(err))
		}
		fmt.Fprintf(stdout, "Created organization %q with a default workspace.\n%s\n", org.Name, org.ID)
		return nil
	})
}

// listOrganizations prints every organization, oldest first (the first is
// the one the server created on its first start): its id first, so that
// `awk 'NR > 1 {print $1}'` lists the ids.
func listOrganizations(ctx context.Context, store gatehouse.Store, stdout io.Writer) error {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCREATED\tNAME")
	for offset := 0; ; offset += gatehouse.MaxPageSize {
		orgs, _, err := store.FindOrganizations(ctx, gatehouse.Page{Offset: offset, Limit: gatehouse.MaxPageSize})
		if err != nil {
			return fmt.Errorf("list organizations: %s", gatehouse.ErrorMessage(err))
		}
		for _, o := range orgs {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", o.ID, o.CreatedAt.UTC().Format(time.RFC3339), o.Name)
		}
		if len(orgs) < gatehouse.MaxPageSize {
			break
		}
	}
	return tw.Flush()
}

// mgmtKeysCommand runs `gatehouse mgmt-keys create`.
func mgmtKeysCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if len(args) == 0 || args[0] != "create" {
		return usageError{"usage: gatehouse mgmt-keys create --org ID [--name NAME]"}
	}
	cfg := DefaultConfig()
	if err := cfg.fromEnv(getenv); err != nil {
		return err
	}
	fs := flag.NewFlagSet("mgmt-keys create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	org := fs.String("org", "", "organization id (required; see gatehouse orgs list)")
	name := fs.String("name", "Management key", "name of the key")
	databaseFlag(fs, &cfg)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *org == "" {
		return usageError{"--org is required: gatehouse mgmt-keys create --org ID (gatehouse orgs list shows the ids)"}
	}
	return withStore(ctx, cfg, stderr, openMode{existing: true}, func(store gatehouse.Store) error {
		_, plaintext, err := store.CreateManagementKey(ctx, *org, *name)
		if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
			return fmt.Errorf("create management key: organization %q not found in %s: pass an id that gatehouse orgs list shows", *org, databaseName(cfg))
		}
		if err != nil {
			return fmt.Errorf("create management key: %s", gatehouse.ErrorMessage(err))
		}
		fmt.Fprintf(stdout, "Created a management key for organization %s. It is shown only once:\n%s\n", *org, plaintext)
		return nil
	})
}

// databaseName is the configured database as errors show it (without a
// password).
func databaseName(cfg Config) string {
	if cfg.isPostgres() {
		return redactURL(cfg.DatabaseURL)
	}
	return cfg.DatabaseURL
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// withStore opens the configured database for a command, runs fn and closes it.
func withStore(ctx context.Context, cfg Config, stderr io.Writer, mode openMode, fn func(gatehouse.Store) error) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store, err := openStore(ctx, cfg, logger, mode)
	if err != nil {
		return err
	}
	defer store.Close()
	return fn(store)
}
