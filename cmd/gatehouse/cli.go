package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"gatehouse"
)

// orgsCommand runs `gatehouse orgs create`.
func orgsCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if len(args) == 0 || args[0] != "create" {
		return usageError{"usage: gatehouse orgs create --name NAME"}
	}
	cfg := DefaultConfig()
	if err := cfg.fromEnv(getenv); err != nil {
		return err
	}
	fs := flag.NewFlagSet("orgs create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "name of the organization (required)")
	databaseFlag(fs, &cfg)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *name == "" {
		return usageError{"--name is required: gatehouse orgs create --name NAME"}
	}
	return withStore(ctx, cfg, stderr, func(store gatehouse.Store) error {
		org, err := store.CreateOrganization(ctx, *name)
		if err != nil {
			return fmt.Errorf("create organization: %s", gatehouse.ErrorMessage(err))
		}
		fmt.Fprintf(stdout, "Created organization %q with a default workspace.\n%s\n", org.Name, org.ID)
		return nil
	})
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
	org := fs.String("org", "", "organization id (required; see gatehouse orgs create)")
	name := fs.String("name", "Management key", "name of the key")
	databaseFlag(fs, &cfg)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *org == "" {
		return usageError{"--org is required: gatehouse mgmt-keys create --org ID"}
	}
	return withStore(ctx, cfg, stderr, func(store gatehouse.Store) error {
		_, plaintext, err := store.CreateManagementKey(ctx, *org, *name)
		if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
			return fmt.Errorf("create management key: organization %q not found in %s: pass the id that gatehouse orgs create printed", *org, cfg.DatabaseURL)
		}
		if err != nil {
			return fmt.Errorf("create management key: %s", gatehouse.ErrorMessage(err))
		}
		fmt.Fprintf(stdout, "Created a management key for organization %s. It is shown only once:\n%s\n", *org, plaintext)
		return nil
	})
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
func withStore(ctx context.Context, cfg Config, stderr io.Writer, fn func(gatehouse.Store) error) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store, err := openStore(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer store.Close()
	return fn(store)
}
