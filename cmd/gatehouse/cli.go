package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"gatehouse"
	"gatehouse/keycache"
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

// mgmtKeysUse is the usage of mgmt-keys.
const mgmtKeysUse = "usage: gatehouse mgmt-keys create --org ID [--name NAME], gatehouse mgmt-keys list --org ID, " +
	"or gatehouse mgmt-keys disable|enable|delete --org ID KEY"

// mgmtKeysSynopsis is the command line of each mgmt-keys subcommand.
var mgmtKeysSynopsis = map[string]string{
	"create":  "gatehouse mgmt-keys create --org ID [--name NAME]",
	"list":    "gatehouse mgmt-keys list --org ID",
	"disable": "gatehouse mgmt-keys disable --org ID KEY",
	"enable":  "gatehouse mgmt-keys enable --org ID KEY",
	"delete":  "gatehouse mgmt-keys delete --org ID KEY",
}

// mgmtKeysArgs is a parsed mgmt-keys command line.
type mgmtKeysArgs struct {
	sub  string // create, list, disable, enable or delete
	cfg  Config
	org  string
	name string // create's --name
	hash string // the key that KEY names
}

// mgmtKeysCommand runs `gatehouse mgmt-keys create|list|disable|enable|delete`:
// a management key is made, found, and (when it leaks) disabled or deleted
// with the database alone, without a key.
func mgmtKeysCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(stdout, usage)
		return nil
	}
	a, err := parseMgmtKeysArgs(args, getenv, stderr)
	if err != nil {
		return err
	}
	return withStore(ctx, a.cfg, stderr, openMode{existing: true}, func(store gatehouse.Store) error {
		switch a.sub {
		case "create":
			return a.create(ctx, store, stdout)
		case "list":
			return a.list(ctx, store, stdout)
		}
		return a.change(ctx, store, stdout)
	})
}

// parseMgmtKeysArgs reads the command line of a mgmt-keys subcommand.
func parseMgmtKeysArgs(args []string, getenv func(string) string, stderr io.Writer) (*mgmtKeysArgs, error) {
	if len(args) == 0 || mgmtKeysSynopsis[args[0]] == "" {
		return nil, usageError{mgmtKeysUse}
	}
	a := &mgmtKeysArgs{sub: args[0], cfg: DefaultConfig()}
	if err := a.cfg.fromEnv(getenv); err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet("mgmt-keys "+a.sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&a.org, "org", "", "organization id (required; see gatehouse orgs list)")
	if a.sub == "create" {
		fs.StringVar(&a.name, "name", "Management key", "name of the key")
	}
	databaseFlag(fs, &a.cfg)
	var err error
	if a.sub == "create" || a.sub == "list" {
		err = parseFlags(fs, args[1:])
	} else {
		a.hash, err = parseKeyArg(fs, args[1:], mgmtKeysSynopsis[a.sub])
	}
	if err != nil {
		return nil, err
	}
	if a.org == "" {
		return nil, usageError{"--org is required: " + mgmtKeysSynopsis[a.sub] + " (gatehouse orgs list shows the ids)"}
	}
	return a, nil
}

// parseKeyArg parses the flags and the one argument, KEY, which may come
// before, among or after them (flag stops at the first argument that is not
// a flag), and returns the hash of the key it names.
func parseKeyArg(fs *flag.FlagSet, args []string, synopsis string) (string, error) {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return "", err
	} else if err != nil {
		return "", usageError{err.Error()}
	}
	if fs.NArg() == 0 {
		return "", usageError{"KEY is required: " + synopsis + ", where KEY is the key or its hash (gatehouse mgmt-keys list shows the hashes)"}
	}
	key := fs.Arg(0)
	if err := parseFlags(fs, fs.Args()[1:]); err != nil {
		return "", err
	}
	return keyHash(key)
}

// keyHash returns the hash of the management key that KEY names: the key
// itself, or its hash as mgmt-keys list shows it. KEY is not repeated in
// the error: it may be a secret.
func keyHash(key string) (string, error) {
	key = strings.TrimSpace(key)
	if strings.HasPrefix(key, gatehouse.ManagementKeyPrefix) {
		return gatehouse.HashKey(key), nil
	}
	if h := strings.ToLower(key); gatehouse.IsKeyHash(h) {
		return h, nil
	}
	return "", usageError{fmt.Sprintf("KEY must be a management key (%s...) or its hash (64 hex digits, as gatehouse mgmt-keys list shows)",
		gatehouse.ManagementKeyPrefix)}
}

// action names what the subcommand does, to begin its errors.
func (a *mgmtKeysArgs) action() string {
	if a.sub == "list" {
		return "list management keys"
	}
	return a.sub + " management key"
}

// orgKeys returns the management keys of the organization; an unknown
// organization is named with the way to find the right id.
func (a *mgmtKeysArgs) orgKeys(ctx context.Context, store gatehouse.Store) ([]*gatehouse.Key, error) {
	keys, err := store.FindManagementKeys(ctx, a.org)
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		return nil, a.orgNotFound()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s", a.action(), gatehouse.ErrorMessage(err))
	}
	return keys, nil
}

// orgNotFound is the error for an --org that names no organization.
func (a *mgmtKeysArgs) orgNotFound() error {
	return fmt.Errorf("%s: organization %q not found in %s: pass an id that gatehouse orgs list shows", a.action(), a.org, databaseName(a.cfg))
}

// create creates a management key and prints it, once.
func (a *mgmtKeysArgs) create(ctx context.Context, store gatehouse.Store, stdout io.Writer) error {
	_, plaintext, err := store.CreateManagementKey(ctx, a.org, a.name)
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		return a.orgNotFound()
	}
	if err != nil {
		return fmt.Errorf("create management key: %s", gatehouse.ErrorMessage(err))
	}
	fmt.Fprintf(stdout, "Created a management key for organization %s. It is shown only once:\n%s\n", a.org, plaintext)
	return nil
}

// list prints the organization's management keys, oldest first: the hash
// first and the name, free text, last (as orgs list does), so that
// `awk 'NR > 1 {print $1}'` lists the hashes.
func (a *mgmtKeysArgs) list(ctx context.Context, store gatehouse.Store, stdout io.Writer) error {
	keys, err := a.orgKeys(ctx, store)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		fmt.Fprintf(stdout, "Organization %s has no management keys: gatehouse mgmt-keys create --org %s makes one.\n", a.org, a.org)
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HASH\tSTATE\tCREATED\tNAME")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.Hash, keyState(k.Disabled), k.CreatedAt.UTC().Format(time.RFC3339), k.Name)
	}
	return tw.Flush()
}

// keyState is how lists show whether a key is disabled.
func keyState(disabled bool) string {
	if disabled {
		return "disabled"
	}
	return "active"
}

// change disables, enables or deletes a management key. It finds the key
// among its organization's first: for its name, and to tell an unknown
// organization from an unknown key.
func (a *mgmtKeysArgs) change(ctx context.Context, store gatehouse.Store, stdout io.Writer) error {
	k, err := a.findKey(ctx, store)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("management key %s (%s) of organization %s", k.Hash, k.Name, a.org)
	if a.sub != "delete" && k.Disabled == (a.sub == "disable") {
		fmt.Fprintf(stdout, "The %s is %s already: nothing changed.\n", what, keyState(k.Disabled))
		return nil
	}
	if a.sub == "delete" {
		err = store.DeleteManagementKey(ctx, a.org, k.Hash)
	} else {
		_, err = store.SetManagementKeyDisabled(ctx, a.org, k.Hash, a.sub == "disable")
	}
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND { // deleted meanwhile
		return a.keyNotFound(ctx, store)
	} else if err != nil {
		return fmt.Errorf("%s: %s", a.action(), gatehouse.ErrorMessage(err))
	}
	fmt.Fprintln(stdout, a.done(what))
	return nil
}

// findKey returns the management key of the organization that KEY names.
func (a *mgmtKeysArgs) findKey(ctx context.Context, store gatehouse.Store) (*gatehouse.Key, error) {
	keys, err := a.orgKeys(ctx, store)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if k.Hash == a.hash {
			return k, nil
		}
	}
	return nil, a.keyNotFound(ctx, store)
}

// keyNotFound is the error for a KEY that is no management key of the
// organization, saying what it is when it is another key.
func (a *mgmtKeysArgs) keyNotFound(ctx context.Context, store gatehouse.Store) error {
	hint := ""
	if k, err := store.FindKeyByHash(ctx, a.hash); err == nil && k.Management {
		hint = fmt.Sprintf(" (it is a management key of organization %s)", k.OrganizationID)
	} else if err == nil {
		hint = " (it is a regular key: the keys API manages those)"
	}
	return fmt.Errorf("%s: management key %s not found in organization %s%s: pass a key or a hash that gatehouse mgmt-keys list --org %s shows",
		a.action(), a.hash, a.org, hint, a.org)
}

// done says what a change did, and when the servers on the database see
// it: this process writes around their key caches.
func (a *mgmtKeysArgs) done(what string) string {
	when := fmt.Sprintf("within %d seconds, when their cached copy of the key expires", int(keycache.DefaultTTL.Seconds())) // serve's TTL
	if a.cfg.isPostgres() {
		when = "within about a second: their key caches follow the database's change feed"
	}
	switch a.sub {
	case "disable":
		return fmt.Sprintf("Disabled %s; its console sessions ended. Servers running on this database stop accepting it %s.", what, when)
	case "enable":
		return fmt.Sprintf("Enabled %s; the console sessions that ended when it was disabled stay ended. Servers running on this database accept it again %s.", what, when)
	}
	return fmt.Sprintf("Deleted %s and its console sessions. Servers running on this database stop accepting it %s.", what, when)
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
