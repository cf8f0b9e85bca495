package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// Migrator is what an engine does for Migrate: its own transactions and
// locks around the one table both engines keep, schema_migrations (name,
// applied_at), which records each migration applied by its file name
// ("migration/0001_init.sql").
type Migrator interface {
	// Applied returns the names schema_migrations records; exists is
	// false when there is no such table (a database Gatehouse never
	// migrated). It writes nothing.
	Applied(ctx context.Context) (names []string, exists bool, err error)
	// Apply creates schema_migrations if it is missing, then runs the
	// migration's statements and records its name, in one transaction; it
	// does nothing and returns false when the name is already recorded
	// (another process applied it meanwhile).
	Apply(ctx context.Context, name, body string) (bool, error)
}

// CreateSchemaMigrations is the statement that creates the table of
// applied migrations, on either engine.
const CreateSchemaMigrations = `CREATE TABLE IF NOT EXISTS schema_migrations (
	name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)`

// Schema is the version of a database's schema: which migrations it has.
type Schema struct {
	// Version is the name of its newest migration, without directory or
	// extension ("0013_leases"); the schema of a binary is the one its
	// newest migration makes.
	Version string
	// Migrations counts the migrations recorded.
	Migrations int
	// From is the version the database had before Open migrated it, ""
	// when it had none (a new database).
	From string
	// Applied lists the migrations this start applied, in order (none
	// when the database was up to date).
	Applied []string
}

// ErrSchemaNewer is the cause of Migrate's refusal of a database that a
// newer Gatehouse migrated.
var ErrSchemaNewer = errors.New("the database schema is newer than this binary")

// ErrNoSchema is the cause of Migrate's refusal, when told to migrate
// only an existing Gatehouse database, of one that Gatehouse never
// migrated.
var ErrNoSchema = errors.New("the database holds no Gatehouse schema")

// Migrate brings a database to the schema of the migrations in fsys
// (migration/*.sql, applied in name order, each in its own transaction),
// and returns its schema. It first refuses a database that records a
// migration fsys does not have: a newer Gatehouse migrated it, and this
// one would misread what the newer one writes; and, unless create is
// set, one that Gatehouse never migrated (an empty database, or someone
// else's). Nothing is written then.
func Migrate(ctx context.Context, m Migrator, fsys fs.FS, create bool) (Schema, error) {
	names, err := fs.Glob(fsys, "migration/*.sql")
	if err != nil {
		return Schema{}, err
	}
	if len(names) == 0 {
		return Schema{}, errors.New("no migrations embedded")
	}
	slices.Sort(names)
	applied, exists, err := m.Applied(ctx)
	if err != nil {
		return Schema{}, fmt.Errorf("read schema_migrations: %w", err)
	}
	if !exists && !create {
		return Schema{}, fmt.Errorf("%w (it has no schema_migrations table): name a database that gatehouse serve or "+
			"gatehouse orgs create made", ErrNoSchema)
	}
	if err := checkKnown(names, applied); err != nil {
		return Schema{}, err
	}
	schema := Schema{Version: version(names[len(names)-1]), Migrations: len(names)}
	for _, name := range names { // the newest migration it had
		if slices.Contains(applied, name) {
			schema.From = version(name)
		}
	}
	for _, name := range names {
		if slices.Contains(applied, name) {
			continue
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return Schema{}, err
		}
		done, err := m.Apply(ctx, name, string(body))
		if err != nil {
			return Schema{}, fmt.Errorf("%s: %w", name, err)
		}
		if done {
			schema.Applied = append(schema.Applied, version(name))
		}
	}
	return schema, nil
}

// Pending returns the migrations of fsys that applied (the names a
// database records) lacks, in order.
func Pending(fsys fs.FS, applied []string) ([]string, error) {
	names, err := fs.Glob(fsys, "migration/*.sql")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var pending []string
	for _, name := range names {
		if !slices.Contains(applied, name) {
			pending = append(pending, version(name))
		}
	}
	return pending, nil
}

// version is a migration's name without its directory and extension.
func version(name string) string {
	return strings.TrimSuffix(path.Base(name), ".sql")
}

// KnownMigrations refuses (ErrSchemaNewer) a database whose
// schema_migrations records applied, when it holds a migration that fsys
// (migration/*.sql) does not: a newer Gatehouse migrated it, and this one
// would misread what the newer one writes.
func KnownMigrations(fsys fs.FS, applied []string) error {
	names, err := fs.Glob(fsys, "migration/*.sql")
	if err != nil {
		return err
	}
	slices.Sort(names)
	return checkKnown(names, applied)
}

// checkKnown is KnownMigrations for the sorted names of the migrations.
func checkKnown(names, applied []string) error {
	var unknown []string
	for _, a := range applied {
		if !slices.Contains(names, a) {
			unknown = append(unknown, a)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fmt.Errorf("%w: it records migrations this binary does not know (%s; this binary's newest is %s): "+
		"a newer Gatehouse has migrated it. Run that version or a later one, or restore the backup taken before the upgrade",
		ErrSchemaNewer, strings.Join(unknown, ", "), version(names[len(names)-1]))
}
