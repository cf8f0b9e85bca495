package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gatehouse"
	"gatehouse/sqlstore"
)

// Backups. A backup is a plain SQLite file: VACUUM INTO copies the
// database as one read transaction sees it, so the copy is consistent
// while a server keeps writing (in WAL mode the read blocks no writer, and
// no writer blocks it), holds no -wal file of its own, and is compacted.
// Backup never migrates or otherwise writes the database it copies, and
// takes no lock that a server holds: it works beside a running server.

// Backup copies the database at path into a new file to, readable by its
// owner only, and checks the copy (CheckBackup, with box if not nil). The
// file appears whole or not at all: the copy is written beside it under a
// temporary name and renamed once checked and on disk. With replace false
// an existing to is refused.
func Backup(ctx context.Context, path, to string, replace bool, box *gatehouse.SecretBox) (*BackupInfo, error) {
	if err := isDatabase(path); err != nil {
		return nil, err
	}
	if same, err := sameFile(path, to); err != nil || same {
		return nil, errors.Join(err, fmt.Errorf("the backup %s would overwrite the database itself", to))
	}
	if !replace {
		if _, err := os.Lstat(to); err == nil {
			return nil, fmt.Errorf("%s already exists: choose a new file, or replace it with --force", to)
		}
	}
	tmp, err := privateTemp(to)
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp) // gone once renamed; else the partial copy goes
	src, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if _, err := src.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		return nil, fmt.Errorf("copy %s: %w", path, err)
	}
	info, err := CheckBackup(ctx, tmp, box)
	if err != nil {
		return nil, fmt.Errorf("the copy of %s does not read back: %w", path, err)
	}
	if err := syncFile(tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, to); err != nil {
		return nil, err
	}
	info.Path = to
	return info, syncDir(filepath.Dir(to))
}

// BackupInfo describes a backup (or any Gatehouse database file).
type BackupInfo struct {
	Path string
	// Tables are the tables of the database with their row counts, in
	// the order they were created.
	Tables []TableRows
	// Migrations is the number of schema migrations applied to it.
	Migrations int
	// Sealed is the number of sealed secrets checked (sqlstore.SealedSecrets:
	// destinations, BYOK keys, the newest stored content), and Unreadable
	// those the box given to CheckBackup cannot open, named by kind and id.
	Sealed     int
	Unreadable []string
}

// TableRows is a table and how many rows it holds.
type TableRows struct {
	Table string
	Rows  int
}

// CheckBackup opens a database file read-only and checks that it is a
// whole Gatehouse database: SQLite's integrity check passes and it has
// been migrated. With a box it also tries to open every sealed
// destination secret. Nothing in the file changes.
func CheckBackup(ctx context.Context, file string, box *gatehouse.SecretBox) (*BackupInfo, error) {
	if err := isDatabase(file); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", "file:"+file+"?mode=ro&_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var integrity string
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check(1)`).Scan(&integrity); err != nil {
		return nil, fmt.Errorf("%s is not a SQLite database: %w", file, err)
	}
	if integrity != "ok" {
		return nil, fmt.Errorf("%s is damaged: SQLite's integrity check says %q", file, integrity)
	}
	info := &BackupInfo{Path: file}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&info.Migrations); err != nil || info.Migrations == 0 {
		return nil, fmt.Errorf("%s is not a Gatehouse database (it has no schema migrations)", file)
	}
	if err := knownMigrations(ctx, db, file); err != nil {
		return nil, err
	}
	if info.Tables, err = tableRows(ctx, db); err != nil {
		return nil, err
	}
	if box != nil {
		has := func(table string) bool {
			return slices.ContainsFunc(info.Tables, func(t TableRows) bool { return t.Table == table })
		}
		if info.Sealed, info.Unreadable, err = sqlstore.SealedSecrets(ctx, querier{db}, box, has); err != nil {
			return nil, fmt.Errorf("%s: read destination secrets: %w", file, err)
		}
	}
	return info, nil
}

// knownMigrations refuses a database that a newer Gatehouse migrated: this
// binary would refuse to open it once restored (sqlstore.ErrSchemaNewer).
func knownMigrations(ctx context.Context, db *sql.DB, file string) error {
	rows, err := db.QueryContext(ctx, `SELECT name FROM schema_migrations`)
	names, err := collectNames(rows, err)
	if err != nil {
		return err
	}
	if err := sqlstore.KnownMigrations(migrations, names); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

// collectNames reads the rows of a query of one text column, and closes
// them.
func collectNames(rows *sql.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

// tableRows counts the rows of every table but SQLite's own.
func tableRows(ctx context.Context, db *sql.DB) ([]TableRows, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY rowid`)
	names, err := collectNames(rows, err)
	if err != nil {
		return nil, err
	}
	out := make([]TableRows, 0, len(names))
	for _, n := range names {
		t := TableRows{Table: n}
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM "`+strings.ReplaceAll(n, `"`, `""`)+`"`).Scan(&t.Rows); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// Restore puts the backup from in place of the database at path: the
// backup is copied beside it under a temporary name, synced, and renamed
// over it, so the database is the old one or the new one, never a mix.
// The old database, if any, is kept: its file and its -wal file are
// renamed to the returned name (and name-wal, and its charge journal's
// segments), and its -shm file removed, so that the old log is never
// replayed into the new file. With replace
// false an existing database is refused.
//
// The caller must make sure nothing uses the database meanwhile: hold its
// ServeLock, so that no server serves it (and none starts), and run no
// other command on it.
func Restore(ctx context.Context, from, path string, replace bool) (kept string, err error) {
	if same, err := sameFile(from, path); err != nil || same {
		return "", errors.Join(err, fmt.Errorf("the backup %s is the database itself", from))
	}
	exists := false
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		exists = true
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if exists && !replace {
		return "", fmt.Errorf("%s already exists: restore into a new path (--database), or replace it with --force (it is then kept under another name)", path)
	}
	tmp, err := privateTemp(path)
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	if err := copyFile(ctx, from, tmp); err != nil {
		return "", fmt.Errorf("copy %s: %w", from, err)
	}
	if exists {
		kept = fmt.Sprintf("%s.replaced-%s", path, time.Now().UTC().Format("20060102T150405Z"))
		if err := os.Rename(path, kept); err != nil {
			return "", err
		}
		if err := os.Rename(path+"-wal", kept+"-wal"); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	}
	// A -wal or -shm file left without its database (a crash, or the old
	// one's) must not be applied to the restored file, nor the charges its
	// server journalled and did not write (they go with it).
	journal, err := sqlstore.JournalFiles(JournalPath(path))
	if err != nil {
		return kept, err
	}
	for _, seg := range journal {
		if kept != "" {
			err = os.Rename(seg, JournalPath(kept)+strings.TrimPrefix(seg, JournalPath(path)))
		} else {
			err = os.Remove(seg)
		}
		if err != nil {
			return kept, err
		}
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return kept, err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return kept, err
	}
	return kept, syncDir(filepath.Dir(path))
}

// isDatabase checks that path is an existing regular file (opening a
// missing one would create it).
func isDatabase(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a file", path)
	}
	return nil
}

// sameFile reports whether a and b name one existing file.
func sameFile(a, b string) (bool, error) {
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

// privateTemp creates an empty file readable by its owner only, beside
// path (so that a rename moves it into place).
func privateTemp(path string) (string, error) {
	suffix := make([]byte, 6)
	if _, err := rand.Read(suffix); err != nil {
		return "", err
	}
	name := path + ".tmp-" + hex.EncodeToString(suffix)
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	return name, f.Close()
}

// copyFile copies from into the existing file to and syncs it.
func copyFile(ctx context.Context, from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, readerWithContext{ctx, in})
	if err == nil {
		err = out.Sync()
	}
	return errors.Join(err, out.Close())
}

// readerWithContext stops a copy once ctx ends.
type readerWithContext struct {
	ctx context.Context
	r   io.Reader
}

func (r readerWithContext) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
