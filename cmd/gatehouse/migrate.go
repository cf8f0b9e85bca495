package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"gatehouse"
	"gatehouse/postgres"
	"gatehouse/sqlite"
	"gatehouse/sqlstore"
)

// migrateDataCommand runs `gatehouse migrate-data --from PATH --to URL`: it
// copies everything from a SQLite database into an empty PostgreSQL one, in
// one transaction (sqlstore.Copy). Destination secrets are copied sealed,
// so the target must be run with the same secret key.
func migrateDataCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	from, to, err := parseMigrateFlags(args, stderr)
	if err != nil {
		return err
	}
	// Opening the stores applies their migrations, so both schemas are current.
	box, err := gatehouse.NewSecretBox(make([]byte, 32)) // nothing is sealed or opened
	if err != nil {
		return err
	}
	// A server killed on the database left charges in its journal that
	// only a server writes (before it serves): the copy would lose them.
	journal, err := sqlstore.JournalFiles(sqlite.JournalPath(from))
	if err != nil {
		return fmt.Errorf("open --from %s: %w", from, err)
	}
	if len(journal) > 0 {
		return fmt.Errorf("%s holds charges that a server killed on %s delivered and did not write to it: start gatehouse serve on it once (it writes them before it serves) and stop it, then copy", journal[0], from)
	}
	src, err := sqlite.Open(ctx, from, box)
	if err != nil {
		return fmt.Errorf("open --from %s: %w", from, err)
	}
	defer src.Close()
	// A copy is one operation that takes as long as the data takes.
	dst, err := postgres.Open(ctx, to, box, postgres.Options{OpTimeout: 24 * time.Hour})
	if err != nil {
		return fmt.Errorf("open --to %s: %w", redactURL(to), err)
	}
	defer dst.Close()
	copied, err := sqlstore.Copy(ctx, src.Store, dst.Store)
	if err != nil {
		return err
	}
	for _, c := range copied {
		fmt.Fprintf(stdout, "%-20s %d rows\n", c.Table, c.Rows)
	}
	fmt.Fprintf(stdout, "Copied %s into %s. Run the servers with the same GATEHOUSE_SECRET_KEY as before, or destination secrets and BYOK keys cannot be read.\n",
		from, redactURL(to))
	return nil
}

// parseMigrateFlags returns the SQLite file to copy and the PostgreSQL URL
// to copy it to.
func parseMigrateFlags(args []string, stderr io.Writer) (from, to string, err error) {
	fs := flag.NewFlagSet("migrate-data", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&from, "from", "", "SQLite database to copy (required)")
	fs.StringVar(&to, "to", "", "postgres:// URL of the database to fill; it must hold no data yet (required)")
	if err := parseFlags(fs, args); err != nil {
		return "", "", err
	}
	if from == "" || to == "" {
		return "", "", usageError{"--from and --to are required: gatehouse migrate-data --from ./gatehouse.db --to postgres://..."}
	}
	if _, err := os.Stat(from); err != nil {
		return "", "", fmt.Errorf("--from %s: %w", from, err)
	}
	if target := (&Config{DatabaseURL: to}); !target.isPostgres() {
		return "", "", usageError{"--to must be a postgres:// URL"}
	}
	return from, to, nil
}
