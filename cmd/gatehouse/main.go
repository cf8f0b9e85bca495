// Command gatehouse runs the Gatehouse management API and administers its
// database. See `gatehouse --help`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"gatehouse"
)

// gcPercent is the garbage collector's target unless GOGC is set: the
// default, 100, spent about a tenth of the CPU of a read on collection,
// while the heap stays small (tens of MiB, key cache included).
const gcPercent = 200

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "gatehouse:", err)
		}
		os.Exit(exitCode(err))
	}
}

func exitCode(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

// isVersion reports whether arg asks for the version.
func isVersion(arg string) bool { return arg == "-version" || arg == "--version" }

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg + " (run gatehouse --help)" }

const usage = `Gatehouse: a model gateway and its management API.

Usage:
  gatehouse [serve] [--addr ADDR] [--database URL] [--providers FILE] [--public-url URL]
      Serve the API and the gateway. The default command.
  gatehouse orgs create --name NAME [--database URL]
      Create an organization; prints its id as the last line.
  gatehouse orgs list [--database URL]
      List every organization, oldest first: id, creation time, name.
  gatehouse mgmt-keys create --org ID [--name NAME] [--database URL]
      Create a management key for an organization; prints the key as the last line.
      With orgs list, it recovers access to a database whose key was lost.
  gatehouse mgmt-keys list --org ID [--database URL]
      List an organization's management keys, oldest first: hash, state (active or
      disabled), creation time, name.
  gatehouse mgmt-keys disable|enable|delete --org ID KEY [--database URL]
      Disable a management key (its console sessions end), enable it again, or delete
      it. KEY is the key or its hash, as mgmt-keys list shows it. Servers on the
      database stop accepting a disabled or deleted key within 10 seconds (PostgreSQL:
      about a second).
  gatehouse credits grant --org ID --amount USD [--database URL]
      Add credits to an organization (a negative amount takes them back); the
      gateway refuses its requests with 402 once its spend reaches them. Prints
      the new total as the last line.
  gatehouse credits show --org ID [--database URL]
      Show an organization's credits, what it spent against them, and its grants.
  gatehouse members invite --org ID --email EMAIL [--role admin|member] [--public-url URL] [--database URL]
      Invite someone to the web console: prints the link (valid once, for 7 days) as the
      last line, where they set their password. No server or mail server is needed.
  gatehouse members list --org ID [--database URL]
      List an organization's members: id, role, whether they have a console password, email.
  gatehouse migrate-data --from SQLITE_PATH --to POSTGRES_URL
      Copy every row of a SQLite database into an empty PostgreSQL database.
  gatehouse rotate-secret-key [--new-key KEY] [--skip-unreadable] [--database URL]
      Re-encrypt every destination secret and BYOK key with a new key (see the README).
      Refuses while a server serves the SQLite database, and names the secrets no key opens.
  gatehouse backup --to FILE [--force] [--database PATH]
      Copy a SQLite database, even while it is served, into FILE, and its secret key into FILE.key.
  gatehouse restore --from FILE [--key-from KEYFILE] [--force] [--database PATH]
      Put a backup in place of a SQLite database that no server is serving, with its secret key.
  gatehouse healthcheck [--addr ADDR] [--ready]
      Exit 0 if the server on ADDR answers GET /healthz (--ready: /readyz) with 200, else 1.
  gatehouse bench-seed [--keys N] [--guardrails N] [--members N] [--workspaces N]
                       [--workspace-members N] [--manifest FILE] [--database URL]
      Fill a new organization with many rows for the benchmarks of bench/.
  gatehouse version (or --version)
      Print the module version and the commit this binary was built from.

Environment (flags override):
  GATEHOUSE_ADDR                      listen address (default 127.0.0.1:8080)
  GATEHOUSE_PUBLIC_URL                URL where browsers reach the server, the base of console links
                                      (default http:// and the listen address, 0.0.0.0 read as 127.0.0.1)
  GATEHOUSE_DATABASE_URL              SQLite file path or postgres:// URL (default ./gatehouse.db); no other scheme
  GATEHOUSE_DB_TIMEOUT                bound on each database operation (PostgreSQL; SQLite: each read; default 5s)
  GATEHOUSE_DB_SHARE_WAIT             wait for an organization's share of the database's connections (default 2s)
  GATEHOUSE_REDIS_URL                 redis:// URL: rate limits shared by every instance
  GATEHOUSE_METERING_COMMIT           async (default) or sync: whether metering commits wait for the disk
  GATEHOUSE_PROVIDERS_FILE            YAML file of the providers and models to serve (default empty: no models)
  GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY  ensure this management key exists for the first organization
  GATEHOUSE_SECRET_KEY                32-byte key (base64 or hex) encrypting destination secrets and BYOK keys
  GATEHOUSE_SECRET_KEY_FILE           file holding that key (default: the database path + ".key")
  GATEHOUSE_SECRET_KEY_PREVIOUS       older keys that may still decrypt (comma-separated), during a rotation
  GATEHOUSE_RATE_LIMIT_RPS            requests per second per credential (default 50; 0 disables)
  GATEHOUSE_RATE_LIMIT_BURST          burst per credential (default 100)
  GATEHOUSE_LOG_LEVEL                 debug, info, warn or error (default info)
  GATEHOUSE_LOG_FORMAT                json, text or auto (default auto: json unless stderr is a terminal)
  GATEHOUSE_PPROF_ADDR                serve the Go profiler (net/http/pprof) on this separate address, e.g. 127.0.0.1:6060
  GATEHOUSE_SHUTDOWN_TIMEOUT          grace period for in-flight requests on SIGTERM (default 10s)
  GATEHOUSE_LEDGER_RETENTION          how long the usage ledger keeps completed requests: keep (default), 90d, 720h...
  GATEHOUSE_AUDIT_RETENTION           how long the audit log keeps its entries: keep (default), 365d...
  GOGC                                Go's garbage-collection target (default here 200)
`

// run is the whole program: main only supplies the process environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (len(args[0]) > 0 && args[0][0] == '-' && !isHelp(args[0]) && !isVersion(args[0])) {
		return serve(ctx, args, getenv, stderr)
	}
	switch cmd := args[0]; cmd {
	case "-h", "--help", "-help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "-version", "--version", "version":
		if len(args) > 1 {
			return usageError{fmt.Sprintf("%s takes no arguments", cmd)}
		}
		fmt.Fprintln(stdout, gatehouse.Build())
		return nil
	case "serve":
		return serve(ctx, args[1:], getenv, stderr)
	case "orgs":
		return orgsCommand(ctx, args[1:], getenv, stdout, stderr)
	case "mgmt-keys":
		return mgmtKeysCommand(ctx, args[1:], getenv, stdout, stderr)
	case "credits":
		return creditsCommand(ctx, args[1:], getenv, stdout, stderr)
	case "members":
		return membersCommand(ctx, args[1:], getenv, stdout, stderr)
	case "migrate-data":
		return migrateDataCommand(ctx, args[1:], getenv, stdout, stderr)
	case "rotate-secret-key":
		return rotateSecretKeyCommand(ctx, args[1:], getenv, stdout, stderr)
	case "bench-seed":
		return benchSeedCommand(ctx, args[1:], getenv, stdout, stderr)
	case "backup":
		return backupCommand(ctx, args[1:], getenv, stdout, stderr)
	case "restore":
		return restoreCommand(ctx, args[1:], getenv, stdout, stderr)
	case "healthcheck":
		return healthcheckCommand(ctx, args[1:], getenv, stdout, stderr)
	default:
		return usageError{fmt.Sprintf("unknown command %q", cmd)}
	}
}
