package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"gatehouse"
	"gatehouse/sqlite"
	"gatehouse/sqlstore"
)

// backupCommand runs `gatehouse backup --to FILE`: a consistent copy of a
// SQLite database, taken while a server may be serving it, in FILE, and
// the secret key that reads its destination secrets in FILE.key (both
// readable by their owner only). The copy is checked: it reads back whole,
// and the key opens every sealed secret in it.
func backupCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := DefaultConfig()
	if err := cfg.fromEnv(getenv); err != nil {
		return err
	}
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	databaseFlag(fs, &cfg)
	to := fs.String("to", "", "the backup file to write (required); the secret key goes to FILE.key")
	force := fs.Bool("force", false, "replace FILE and FILE.key if they exist")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *to == "" {
		return usageError{"--to is required: gatehouse backup --to FILE"}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.isPostgres() {
		return usageError{"gatehouse backup copies a SQLite database; back up PostgreSQL with pg_dump, and keep GATEHOUSE_SECRET_KEY with it (see the README's Backup and restore)"}
	}
	release, err := lockUnlessServed(cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer release()
	keyFile := *to + ".key"
	if !*force {
		for _, f := range []string{*to, keyFile} {
			if _, err := os.Lstat(f); err == nil {
				return fmt.Errorf("%s already exists: choose a new name, or replace it with --force", f)
			}
		}
	}
	key, err := currentSecretKey(cfg)
	if err != nil {
		return err
	}
	box, err := gatehouse.NewSecretBox(key)
	if err != nil {
		return err
	}
	info, err := sqlite.Backup(ctx, cfg.DatabaseURL, *to, *force, box)
	if err != nil {
		return fmt.Errorf("backup of %s: %w", cfg.DatabaseURL, err)
	}
	if err := writeKeyFile(keyFile, key); err != nil {
		return fmt.Errorf("the database is backed up in %s, but its secret key could not be written: %w", *to, err)
	}
	printTables(stdout, info)
	if len(info.Unreadable) > 0 {
		return fmt.Errorf("backed up %s into %s with its key in %s, but %d sealed secrets (%s) do not open with that key: "+
			"a secret key rotation is not finished (GATEHOUSE_SECRET_KEY_PREVIOUS); run gatehouse rotate-secret-key once more, then back up again",
			cfg.DatabaseURL, *to, keyFile, len(info.Unreadable), strings.Join(info.Unreadable, ", "))
	}
	fmt.Fprintf(stdout, "Backed up %s into %s, and the secret key that reads its sealed secrets (%d checked) into %s.\n"+
		"Both files are readable by their owner only. Anyone who holds both can read those secrets: store the key apart if you can.\n",
		cfg.DatabaseURL, *to, info.Sealed, keyFile)
	return nil
}

// restoreCommand runs `gatehouse restore --from FILE`: it puts a backup in
// place of the configured SQLite database, with the secret key that reads
// it, once it has checked both. It refuses while a server serves the
// database, and keeps the database it replaces.
func restoreCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := DefaultConfig()
	if err := cfg.fromEnv(getenv); err != nil {
		return err
	}
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	databaseFlag(fs, &cfg)
	from := fs.String("from", "", "the backup file to restore (required)")
	keyFrom := fs.String("key-from", "", "the backup's secret key file (default: FILE.key)")
	force := fs.Bool("force", false, "replace an existing database (it is kept under another name)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *from == "" {
		return usageError{"--from is required: gatehouse restore --from FILE [--database PATH]"}
	}
	if *keyFrom == "" {
		*keyFrom = *from + ".key"
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.isPostgres() {
		return usageError{"gatehouse restore restores a SQLite database; restore PostgreSQL with pg_restore (see the README's Backup and restore)"}
	}
	key, install, err := restoreKey(ctx, cfg, *from, *keyFrom)
	if err != nil {
		return err
	}
	if install != "" && fileExistsAt(install) && !fileExistsAt(cfg.DatabaseURL) {
		if old, err := loadKeyFile(install); err != nil || string(old) != string(key) {
			return fmt.Errorf("%s already holds another secret key, which some database may need: move it away first (nothing was restored)", install)
		}
	}
	release, holder, err := sqlite.Lock(cfg.DatabaseURL, "gatehouse restore")
	if errors.Is(err, sqlite.ErrLocked) {
		return fmt.Errorf("restore refused: %s is %s; a restore replaces the database file, so nothing may be serving "+
			"or rotating it meanwhile: stop that process first (nothing was restored)", cfg.DatabaseURL, holder)
	}
	if err != nil {
		return fmt.Errorf("restore refused: %w", err)
	}
	defer release()
	kept, err := sqlite.Restore(ctx, *from, cfg.DatabaseURL, *force)
	if err != nil {
		return fmt.Errorf("restore %s into %s: %w", *from, cfg.DatabaseURL, err)
	}
	keyNote := "its secret key is GATEHOUSE_SECRET_KEY, which reads its secrets"
	if install != "" {
		if err := installKey(install, key, kept); err != nil {
			return fmt.Errorf("restored %s into %s, but could not install its secret key in %s: %w (copy %s there by hand)", *from, cfg.DatabaseURL, install, err, *keyFrom)
		}
		keyNote = "its secret key is in " + install
	}
	ownLikeDir(cfg.DatabaseURL, install)
	info, err := sqlite.CheckBackup(ctx, cfg.DatabaseURL, nil)
	if err != nil {
		return err
	}
	printTables(stdout, info)
	if kept != "" {
		fmt.Fprintf(stdout, "The database it replaced is kept as %s.\n", kept)
	}
	fmt.Fprintf(stdout, "Restored %s into %s; %s. Start the server on it: gatehouse serve --database %s\n",
		*from, cfg.DatabaseURL, keyNote, cfg.DatabaseURL)
	return nil
}

// restoreKey finds the key that the restored database will be read with,
// and checks that it opens every sealed secret of the backup: the
// configured GATEHOUSE_SECRET_KEY if set (nothing to install), else the
// backup's key file (to install as the database's key file), else a key
// file already in place. install is where the key must be written, or "".
func restoreKey(ctx context.Context, cfg Config, from, keyFrom string) (key []byte, install string, err error) {
	source := "GATEHOUSE_SECRET_KEY"
	switch {
	case cfg.SecretKey != "":
		if key, err = decodeSecretKey(cfg.SecretKey); err != nil {
			return nil, "", fmt.Errorf("GATEHOUSE_SECRET_KEY: %w", err)
		}
	case fileExistsAt(keyFrom):
		if key, err = loadKeyFile(keyFrom); err != nil {
			return nil, "", err
		}
		source, install = keyFrom, keyFilePath(cfg)
	case fileExistsAt(keyFilePath(cfg)):
		if key, err = loadKeyFile(keyFilePath(cfg)); err != nil {
			return nil, "", err
		}
		source = keyFilePath(cfg)
	}
	var box *gatehouse.SecretBox
	if key != nil {
		if box, err = gatehouse.NewSecretBox(key); err != nil {
			return nil, "", err
		}
	} else if box, err = gatehouse.NewSecretBox(gatehouse.NewSecretKey()); err != nil {
		return nil, "", err
	}
	info, err := sqlite.CheckBackup(ctx, from, box)
	if err != nil {
		return nil, "", fmt.Errorf("--from %s: %w", from, err)
	}
	if key == nil && info.Sealed > 0 {
		return nil, "", fmt.Errorf("no secret key for the %d sealed secrets of %s (destinations, BYOK keys, stored content): %s is missing; give the backup's key file with --key-from, or set GATEHOUSE_SECRET_KEY",
			info.Sealed, from, keyFrom)
	}
	if len(info.Unreadable) > 0 {
		return nil, "", fmt.Errorf("the key of %s does not open %d sealed secrets of %s (%s): nothing was restored; give the key that was in use when the backup was taken (--key-from or GATEHOUSE_SECRET_KEY)",
			source, len(info.Unreadable), from, strings.Join(info.Unreadable, ", "))
	}
	return key, install, nil
}

// currentSecretKey returns the key the database's secrets are sealed
// with: GATEHOUSE_SECRET_KEY, else the key file, which must exist (a
// backup never makes one up).
func currentSecretKey(cfg Config) ([]byte, error) {
	if cfg.SecretKey != "" {
		key, err := decodeSecretKey(cfg.SecretKey)
		if err != nil {
			return nil, fmt.Errorf("GATEHOUSE_SECRET_KEY: %w", err)
		}
		return key, nil
	}
	path := keyFilePath(cfg)
	if !fileExistsAt(path) {
		return nil, fmt.Errorf("no secret key file at %s: set GATEHOUSE_SECRET_KEY_FILE (or GATEHOUSE_SECRET_KEY) to the key the server uses", path)
	}
	return loadKeyFile(path)
}

// keyFilePath is where the database's key file is: GATEHOUSE_SECRET_KEY_FILE
// or the database path + ".key".
func keyFilePath(cfg Config) string {
	if cfg.SecretKeyFile != "" {
		return cfg.SecretKeyFile
	}
	return cfg.DatabaseURL + ".key"
}

func loadKeyFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read secret key file: %w", err)
	}
	key, err := decodeSecretKey(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("secret key file %s: %w", path, err)
	}
	return key, nil
}

// lockUnlessServed takes the database's serve lock for a backup when no
// server holds it, and then refuses a database whose charge journal holds
// charges: a server killed on it delivered them and did not write them,
// and only a server writes them (before it serves), so the copy would lose
// them. A running server writes its journal behind within milliseconds:
// the backup goes ahead beside it, holding nothing.
func lockUnlessServed(path string) (release func(), err error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, errNoDatabase(path)
	}
	release, _, err = sqlite.Lock(path, "gatehouse backup")
	if errors.Is(err, sqlite.ErrLocked) {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	journal, err := sqlstore.JournalFiles(sqlite.JournalPath(path))
	if err == nil && len(journal) > 0 {
		err = fmt.Errorf("%s holds charges that a server killed on %s delivered and did not write to it: start gatehouse serve on it once "+
			"(it writes them before it serves), then back up, beside it or after stopping it; nothing was written", journal[0], path)
	}
	if err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// writeKeyFile writes key as the server's key files hold it, readable by
// its owner only, replacing path whole (a temporary file renamed).
func writeKeyFile(path string, key []byte) error {
	tmp := path + ".tmp"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// installKey writes the restored database's key file; a different key
// already there is kept beside the replaced database (kept.key), or, with
// no database replaced, refused.
func installKey(path string, key []byte, kept string) error {
	if old, err := loadKeyFile(path); err == nil {
		if string(old) == string(key) {
			return nil
		}
		if kept == "" {
			return fmt.Errorf("%s already holds another key, which a database may need: move it away first", path)
		}
		if err := os.Rename(path, kept+".key"); err != nil {
			return err
		}
	}
	return writeKeyFile(path, key)
}

// ownLikeDir gives restored files the owner of the directory they are
// in, when run as root: restoring as root into the data directory of a
// service user leaves files that the service can open.
func ownLikeDir(paths ...string) {
	if os.Geteuid() != 0 {
		return
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		fi, err := os.Stat(filepath.Dir(p))
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			_ = os.Lchown(p, int(st.Uid), int(st.Gid))
		}
	}
}

func fileExistsAt(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// printTables lists the tables of a database and their rows.
func printTables(w io.Writer, info *sqlite.BackupInfo) {
	for _, t := range info.Tables {
		fmt.Fprintf(w, "%-28s %d rows\n", t.Table, t.Rows)
	}
}
