// Command pgdb creates and drops the throwaway PostgreSQL databases of the
// benchmarks, so that bench/run.sh needs no psql:
//
//	pgdb create SERVER_URL PREFIX   prints the URL of a new empty database
//	pgdb drop DATABASE_URL          drops that database (and its connections)
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "pgdb:", err)
		os.Exit(1)
	}
}

var safeName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

func run(args []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	switch {
	case len(args) == 3 && args[0] == "create":
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		name := args[2] + "_" + hex.EncodeToString(b)
		if !safeName.MatchString(name) {
			return fmt.Errorf("prefix %q: want lower-case letters, digits and _", args[2])
		}
		if err := exec(ctx, args[1], `CREATE DATABASE `+name); err != nil {
			return err
		}
		u, err := url.Parse(args[1])
		if err != nil {
			return err
		}
		u.Path = "/" + name
		fmt.Println(u.String())
		return nil
	case len(args) == 2 && args[0] == "drop":
		u, err := url.Parse(args[1])
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(u.Path, "/")
		if !safeName.MatchString(name) {
			return fmt.Errorf("database name %q is not one pgdb makes", name)
		}
		u.Path = "/postgres"
		return exec(ctx, u.String(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
	}
	return errors.New("usage: pgdb create SERVER_URL PREFIX | pgdb drop DATABASE_URL")
}

func exec(ctx context.Context, server, sql string) error {
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}
