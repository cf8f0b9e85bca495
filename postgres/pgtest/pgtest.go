// Package pgtest gives tests a PostgreSQL database of their own: a fresh
// database with a random name on the server of GATEHOUSE_TEST_POSTGRES_URL,
// dropped when the test ends. Without that variable the tests skip.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	name := "gatehouse_test_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		tb.Fatalf("pgtest: connect to %s: %v", EnvURL, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	tb.Cleanup(func() { drop(tb, server, name) })
	u, err := url.Parse(server)
	if err != nil {
		tb.Fatalf("pgtest: parse %s: %v", EnvURL, err)
	}
	u.Path = "/" + name
	return u.String()
}

func drop(tb testing.TB, server, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		tb.Errorf("pgtest: connect to drop %s: %v", name, err)
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
		tb.Errorf("pgtest: drop %s: %v", name, err)
	}
}
