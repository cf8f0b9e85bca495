package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"
)

// copyTables lists every table of the schema, parents before children, so
// that rows can be copied with foreign keys enforced.
var copyTables = []string{
	"organizations", "members", "workspaces", "workspace_members", "api_keys", "oauth_apps",
	"auth_codes", "guardrails", "key_assignments", "member_assignments", "destinations", "audit_log",
}

// migrateDataCommand runs `gatehouse migrate-data --from PATH --to URL`: it
// copies everything from a SQLite database into an empty PostgreSQL one, in
// one transaction. Destination secrets are copied sealed, so the target
// must be run with the same secret key.
func migrateDataCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate-data", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "SQLite database to copy (required)")
	to := fs.String("to", "", "postgres:// URL of the database to fill; it must hold no organization yet (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *from == "" || *to == "" {
		return usageError{"--from and --to are required: gatehouse migrate-data --from ./gatehouse.db --to postgres://..."}
	}
	if _, err := os.Stat(*from); err != nil {
		return fmt.Errorf("--from %s: %w", *from, err)
	}
	if target := (&Config{DatabaseURL: *to}); !target.isPostgres() {
		return usageError{"--to must be a postgres:// URL"}
	}
	// Opening the stores applies their migrations, so both schemas are current.
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for _, url := range []string{*from, *to} {
		store, err := openStore(ctx, Config{DatabaseURL: url, SecretKey: throwawayKey, DBTimeout: DefaultConfig().DBTimeout}, logger)
		if err != nil {
			return err
		}
		store.Close()
	}
	counts, err := copyData(ctx, *from, *to)
	if err != nil {
		return err
	}
	for _, t := range copyTables {
		fmt.Fprintf(stdout, "%-20s %d rows\n", t, counts[t])
	}
	fmt.Fprintf(stdout, "Copied %s into %s. Run the servers with the same GATEHOUSE_SECRET_KEY as before, or destination secrets cannot be read.\n",
		*from, redactURL(*to))
	return nil
}

// throwawayKey satisfies the stores' need for a secret box while opening
// them only to migrate their schemas: nothing is sealed or opened.
const throwawayKey = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="

// copyData copies every row of every table from the SQLite file to the
// PostgreSQL database in one transaction, and returns the row counts.
func copyData(ctx context.Context, from, to string) (map[string]int, error) {
	src, err := sql.Open("sqlite", "file:"+from+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, err := pgx.Connect(ctx, to)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", redactURL(to), err)
	}
	defer dst.Close(context.WithoutCancel(ctx))
	counts := map[string]int{}
	err = pgx.BeginFunc(ctx, dst, func(tx pgx.Tx) error {
		var orgs int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM organizations`).Scan(&orgs); err != nil {
			return err
		}
		if orgs > 0 {
			return errors.New("the target database already holds data; migrate into an empty database")
		}
		for _, table := range copyTables {
			n, err := copyTable(ctx, src, tx, table)
			if err != nil {
				return fmt.Errorf("copy %s: %w", table, err)
			}
			counts[table] = n
		}
		// Identity columns continue after the copied ids.
		_, err := tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence('oauth_apps', 'id'), COALESCE(MAX(id), 0) + 1, false) FROM oauth_apps`)
		return err
	})
	return counts, err
}

// copyTable copies one table, converting SQLite's 0/1 integers into the
// booleans of PostgreSQL's boolean columns.
func copyTable(ctx context.Context, src *sql.DB, dst pgx.Tx, table string) (int, error) {
	boolean, err := booleanColumns(ctx, dst, table)
	if err != nil {
		return 0, err
	}
	rows, err := src.QueryContext(ctx, `SELECT * FROM "`+table+`"`)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	var data [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return 0, err
		}
		for i, c := range cols {
			if n, ok := vals[i].(int64); ok && boolean[c] {
				vals[i] = n != 0
			}
		}
		data = append(data, vals)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	n, err := dst.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(data))
	return int(n), err
}

// booleanColumns returns the boolean columns of a PostgreSQL table.
func booleanColumns(ctx context.Context, tx pgx.Tx, table string) (map[string]bool, error) {
	rows, err := tx.Query(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1 AND data_type = 'boolean'`, table)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	out := map[string]bool{}
	for _, n := range names {
		out[strings.ToLower(n)] = true
	}
	return out, err
}
