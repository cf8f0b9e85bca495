// Package pgtest gives tests a PostgreSQL database of their own: a fresh
// database with a random name on the server of GATEHOUSE_TEST_POSTGRES_URL,
// dropped when the test ends. Without that variable the tests skip.
//
// A package whose tests each need a migrated database can copy one
// instead of migrating each (NewDatabaseFrom: a copy costs what an empty
// database does, and migrating one as much again); its TestMain runs its
// tests through Run, which drops the templates at the end.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// EnvURL names the variable holding the URL of a PostgreSQL server whose
// user may create databases.
const EnvURL = "GATEHOUSE_TEST_POSTGRES_URL"

// ServerURL returns the test server's URL, or skips the test when none is
// configured.
func ServerURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		tb.Skipf("%s is not set: skipping the PostgreSQL tests (set it to e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)", EnvURL)
	}
	return u
}

// NewDatabase creates an empty database and returns its URL; the database
// is dropped (with any connections left) when the test ends.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	server := ServerURL(tb)
	name := randomName("gatehouse_test_")
	if err := create(server, name, ""); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() { drop(tb, server, name) })
	return databaseURL(server, name)
}

// NewDatabaseFrom returns the URL of a database holding what the template
// named template holds, for the test alone: prepare (given the template's
// URL) fills the template the first time a test asks for it in this test
// binary, and each test gets a copy of it. When the test ends its copy is
// emptied (every table truncated but schema_migrations) and given to a
// later test, unless the test changed its schema or left a connection
// open: then it is dropped. (An empty copy costs a TRUNCATE, a new one a
// CREATE DATABASE and a DROP, several times as much.) prepare must close
// every connection it opens: PostgreSQL copies no database that is in use.
// The package's TestMain must run its tests through Run, which drops the
// templates and their copies.
func NewDatabaseFrom(tb testing.TB, template string, prepare func(url string) error) string {
	tb.Helper()
	if !running.Load() {
		tb.Fatal("pgtest: NewDatabaseFrom needs the package's TestMain to run its tests through pgtest.Run, which drops the templates")
	}
	server := ServerURL(tb)
	templates.Lock()
	tpl := templates.m[template]
	if tpl == nil {
		tpl = &templateDB{copies: map[string]bool{}}
		templates.m[template] = tpl
	}
	templates.Unlock()
	tpl.once.Do(func() { tpl.err = tpl.prepare(server, template, prepare) })
	if tpl.err != nil {
		tb.Fatalf("pgtest: %v", tpl.err)
	}
	name := tpl.take()
	if name == "" {
		name = randomName("gatehouse_test_")
		if err := create(server, name, tpl.name); err != nil {
			tb.Fatalf("pgtest: %v", err)
		}
		tpl.mu.Lock()
		tpl.copies[name] = true
		tpl.mu.Unlock()
	}
	tb.Cleanup(func() { tpl.giveBack(tb, name) })
	return databaseURL(server, name)
}

// Run runs a package's tests (run is m.Run, or a function that calls it)
// and then drops the templates they made and their copies; TestMain exits
// with its code.
func Run(run func() int) int {
	running.Store(true)
	defer dropTemplates()
	return run()
}

type templateDB struct {
	once   sync.Once
	server string
	name   string
	err    error
	shape  string // the template's schema (see shapeOf)

	mu     sync.Mutex
	free   []string        // emptied copies, for the next tests
	copies map[string]bool // every copy not dropped yet
}

// prepare creates and fills the template, and notes its schema.
func (tpl *templateDB) prepare(server, template string, prepare func(url string) error) error {
	tpl.name = randomName("gatehouse_test_tpl_")
	if err := create(server, tpl.name, ""); err != nil {
		return err
	}
	tpl.server = server
	url := databaseURL(server, tpl.name)
	if err := prepare(url); err != nil {
		return fmt.Errorf("prepare the template %s: %w", template, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	tpl.shape, err = shapeOf(ctx, conn)
	return err
}

func (tpl *templateDB) take() string {
	tpl.mu.Lock()
	defer tpl.mu.Unlock()
	if n := len(tpl.free); n > 0 {
		name := tpl.free[n-1]
		tpl.free = tpl.free[:n-1]
		return name
	}
	return ""
}

// giveBack empties a test's copy for the next test, or drops it.
func (tpl *templateDB) giveBack(tb testing.TB, name string) {
	if err := tpl.empty(name); err == nil {
		tpl.mu.Lock()
		tpl.free = append(tpl.free, name)
		tpl.mu.Unlock()
		return
	}
	tpl.mu.Lock()
	delete(tpl.copies, name)
	tpl.mu.Unlock()
	drop(tb, tpl.server, name)
}

// empty truncates a copy's tables when nothing is connected to it any
// more and its schema is the template's.
func (tpl *templateDB) empty(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, databaseURL(tpl.server, name))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for wait := 0; ; wait++ {
		var others int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&others); err != nil {
			return err
		}
		if others == 0 {
			break
		}
		if wait == 50 {
			return errors.New("the test left connections open")
		}
		time.Sleep(10 * time.Millisecond) // closed connections take a moment to end
	}
	shape, err := shapeOf(ctx, conn)
	if err != nil {
		return err
	}
	if shape != tpl.shape {
		return errors.New("the test changed the schema")
	}
	// Every table but schema_migrations is emptied by DELETE, with the
	// triggers (foreign keys' too) off, and the sequences restarted: a
	// test leaves a few rows, and a TRUNCATE of the schema's 87 tables
	// makes new files for each (0.5-0.8 s; the DELETEs 0.2 s). A server
	// that refuses session_replication_role (not a superuser) gets the
	// TRUNCATE.
	var tables, deletes, sequences string
	err = conn.QueryRow(ctx, `SELECT coalesce(string_agg(format('%I', relname), ', '), ''),
			coalesce(string_agg(format('DELETE FROM %I;', relname), ' '), '')
		FROM pg_class
		WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') AND relname <> 'schema_migrations'`).Scan(&tables, &deletes)
	if err != nil || tables == "" {
		return err
	}
	err = conn.QueryRow(ctx, `SELECT coalesce(string_agg(format('ALTER SEQUENCE %I RESTART;', s.relname), ' '), '')
		FROM pg_class s JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = s.oid AND d.deptype IN ('a', 'i')
		JOIN pg_class t ON t.oid = d.refobjid
		WHERE s.relkind = 'S' AND s.relnamespace = 'public'::regnamespace AND t.relname <> 'schema_migrations'`).Scan(&sequences)
	if err != nil {
		return err
	}
	if _, err = conn.Exec(ctx, `BEGIN; SET LOCAL session_replication_role = replica; `+deletes+` `+sequences+` COMMIT`); err == nil {
		return nil
	}
	_, _ = conn.Exec(ctx, `ROLLBACK`)
	_, err = conn.Exec(ctx, `TRUNCATE `+tables+` RESTART IDENTITY CASCADE`)
	return err
}

// shapeOf fingerprints a database's schema: its relations and their
// columns, constraints, triggers, functions, applied migrations and
// settings.
func shapeOf(ctx context.Context, conn *pgx.Conn) (string, error) {
	var shape string
	err := conn.QueryRow(ctx, `SELECT md5(concat_ws('|',
		(SELECT string_agg(c.relname || ':' || c.relkind::text || ':' || coalesce((SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull::text || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), ''), ';' ORDER BY a.attnum)
			FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), ''), ',' ORDER BY c.relname)
			FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace),
		(SELECT string_agg(conname || ' ' || pg_get_constraintdef(oid), ',' ORDER BY conname) FROM pg_constraint WHERE connamespace = 'public'::regnamespace),
		(SELECT string_agg(pg_get_triggerdef(t.oid), ',' ORDER BY t.tgname) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = 'public'::regnamespace),
		(SELECT string_agg(p.proname || md5(p.prosrc), ',' ORDER BY p.proname) FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace),
		(SELECT string_agg(name, ',' ORDER BY name) FROM schema_migrations),
		(SELECT string_agg(array_to_string(setconfig, ','), ';') FROM pg_db_role_setting WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database()))
	))`).Scan(&shape)
	return shape, err
}

var (
	running   atomic.Bool
	templates = struct {
		sync.Mutex
		m map[string]*templateDB
	}{m: map[string]*templateDB{}}
)

func dropTemplates() {
	templates.Lock()
	defer templates.Unlock()
	for _, tpl := range templates.m {
		if tpl.server == "" {
			continue
		}
		for name := range tpl.copies {
			if err := dropDatabase(tpl.server, name); err != nil {
				fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
			}
		}
		if err := dropDatabase(tpl.server, tpl.name); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: drop the template: %v\n", err)
		}
	}
	templates.m = map[string]*templateDB{}
}

func randomName(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// create creates the database name, a copy of template unless it is "".
// A template whose last connection is still closing refuses to be copied
// for a moment: that is tried again.
func create(server, name, template string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", EnvURL, err)
	}
	defer conn.Close(context.Background())
	stmt := `CREATE DATABASE ` + name
	if template != "" {
		stmt += ` TEMPLATE ` + template
	}
	for {
		_, err := conn.Exec(ctx, stmt)
		var pgErr *pgconn.PgError
		if err != nil && errors.As(err, &pgErr) && pgErr.Code == "55006" && ctx.Err() == nil { // object_in_use
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if err != nil {
			return fmt.Errorf("create database: %w", err)
		}
		return nil
	}
}

func databaseURL(server, name string) string {
	u, err := url.Parse(server)
	if err != nil {
		panic(fmt.Sprintf("pgtest: %s is not a URL: %v", EnvURL, err)) // pgx.Connect parsed it first
	}
	u.Path = "/" + name
	return u.String()
}

func drop(tb testing.TB, server, name string) {
	if err := dropDatabase(server, name); err != nil {
		tb.Errorf("pgtest: %v", err)
	}
}

// dropDatabase drops a test's database. The drop waits for a checkpoint,
// which on a machine busy with other tests' writes (CI runs the container
// tests beside these) took more than 30 s once: it is given 3 minutes.
func dropDatabase(server, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return fmt.Errorf("connect to drop %s: %w", name, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
		return fmt.Errorf("drop %s: %w", name, err)
	}
	return nil
}
