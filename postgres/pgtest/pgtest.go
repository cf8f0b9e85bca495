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
	return newDatabase(tb, "")
}

// NewDatabaseFrom creates a database as a copy of the template named
// template, which prepare (given the template's URL) fills the first
// time a test asks for it in this test binary, and returns the copy's
// URL; the copy is dropped when the test ends. prepare must close every
// connection it opens: PostgreSQL copies no database that is in use. The
// package's TestMain must run its tests through Run.
func NewDatabaseFrom(tb testing.TB, template string, prepare func(url string) error) string {
	tb.Helper()
	if !running.Load() {
		tb.Fatal("pgtest: NewDatabaseFrom needs the package's TestMain to run its tests through pgtest.Run, which drops the templates")
	}
	server := ServerURL(tb)
	templates.Lock()
	tpl := templates.m[template]
	if tpl == nil {
		tpl = &templateDB{}
		templates.m[template] = tpl
	}
	templates.Unlock()
	tpl.once.Do(func() {
		tpl.name = randomName("gatehouse_test_tpl_")
		if tpl.err = create(server, tpl.name, ""); tpl.err != nil {
			return
		}
		tpl.server = server
		if err := prepare(databaseURL(server, tpl.name)); err != nil {
			tpl.err = fmt.Errorf("prepare the template %s: %w", template, err)
		}
	})
	if tpl.err != nil {
		tb.Fatalf("pgtest: %v", tpl.err)
	}
	return newDatabase(tb, tpl.name)
}

// Run runs a package's tests (run is m.Run, or a function that calls it)
// and then drops the templates they made; TestMain exits with its code.
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
		if tpl.server != "" {
			if err := dropDatabase(tpl.server, tpl.name); err != nil {
				fmt.Fprintf(os.Stderr, "pgtest: drop the template %s: %v\n", tpl.name, err)
			}
		}
	}
	templates.m = map[string]*templateDB{}
}

// newDatabase creates a database with a random name, a copy of template
// ("": PostgreSQL's default), dropped when the test ends.
func newDatabase(tb testing.TB, template string) string {
	tb.Helper()
	server := ServerURL(tb)
	name := randomName("gatehouse_test_")
	if err := create(server, name, template); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() { drop(tb, server, name) })
	return databaseURL(server, name)
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

func dropDatabase(server, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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
