package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"gatehouse"
	"gatehouse/sqlite"
)

// rotateSecretKeyCommand runs `gatehouse rotate-secret-key`: it re-encrypts
// every destination secret with a new key in one transaction. The old key is
// the configured one (GATEHOUSE_SECRET_KEY or the key file); the new one is
// --new-key, or a fresh random key. A key file is replaced by the new key;
// a key from the environment is printed, for the operator to deploy.
func rotateSecretKeyCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := DefaultConfig()
	if err := cfg.fromEnv(getenv); err != nil {
		return err
	}
	fs := flag.NewFlagSet("rotate-secret-key", flag.ContinueOnError)
	fs.SetOutput(stderr)
	databaseFlag(fs, &cfg)
	newKeyText := fs.String("new-key", "", "the new key, 32 bytes as base64 or hex (default: a fresh random key)")
	skip := fs.Bool("skip-unreadable", false, "re-seal what the keys open and leave as they are the secrets none opens (default: refuse, naming those destinations)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if !cfg.isPostgres() {
		if _, err := os.Stat(cfg.DatabaseURL); errors.Is(err, os.ErrNotExist) {
			return errNoDatabase(cfg.DatabaseURL)
		}
	}
	if cfg.SecretKey == "" && !cfg.keyFileExists() {
		return fmt.Errorf("no secret key to rotate: %s does not exist (set GATEHOUSE_SECRET_KEY or GATEHOUSE_SECRET_KEY_FILE to the current key)", cfg.keyFile())
	}
	if !cfg.isPostgres() {
		release, err := lockForRotation(cfg.DatabaseURL)
		if err != nil {
			return err
		}
		defer release()
	}
	oldKey, file, _, err := cfg.secretKey()
	if err != nil {
		return err
	}
	newKey := gatehouse.NewSecretKey()
	if *newKeyText != "" {
		if newKey, err = decodeSecretKey(*newKeyText); err != nil {
			return fmt.Errorf("--new-key: %w", err)
		}
	}
	previous, err := cfg.previousKeys()
	if err != nil {
		return err
	}
	box, err := gatehouse.NewSecretBox(newKey, append([][]byte{oldKey}, previous...)...)
	if err != nil {
		return err
	}
	encoded := base64.StdEncoding.EncodeToString(newKey)
	// The new key reaches the disk before any secret is sealed with it, so
	// that a crash can never leave secrets sealed with a key kept nowhere.
	pending := ""
	if file != "" {
		pending = file + ".new"
		if err := os.WriteFile(pending, []byte(encoded+"\n"), 0o600); err != nil {
			return fmt.Errorf("write the new key to %s: %w", pending, err)
		}
	}
	n, unreadable, err := reseal(ctx, cfg, box, logger, *skip)
	if err != nil {
		if pending != "" {
			os.Remove(pending)
		}
		return err
	}
	if file != "" {
		if err := os.Rename(pending, file); err != nil {
			return fmt.Errorf("re-sealed %d destinations, but could not move the new key from %s to %s: %w (move it by hand; the secrets now need it)", n, pending, file, err)
		}
		fmt.Fprintf(stdout, "Re-sealed the secrets of %d destinations with a new key, now in %s.\n", n, file)
		reportSkipped(stdout, unreadable)
		return nil
	}
	reportSkipped(stdout, unreadable)
	fmt.Fprintf(stdout, "Re-sealed the secrets of %d destinations with the new key below.\n"+
		"Set GATEHOUSE_SECRET_KEY to it on every instance; until all of them run it, keep the old key in\n"+
		"GATEHOUSE_SECRET_KEY_PREVIOUS, and run this command again (with --new-key) before removing it.\n%s\n", n, encoded)
	return nil
}

// reseal opens the store with box and re-seals every destination secret.
func reseal(ctx context.Context, cfg Config, box *gatehouse.SecretBox, logger *slog.Logger, skip bool) (int, []gatehouse.UnreadableDestination, error) {
	store, err := openStoreWith(ctx, cfg, box, logger, true)
	if err != nil {
		return 0, nil, err
	}
	defer store.Close()
	n, unreadable, err := store.ResealSecrets(ctx, skip)
	if gatehouse.ErrorCode(err) == gatehouse.ECONFLICT {
		return 0, nil, errors.New("re-seal destination secrets: " + gatehouse.ErrorMessage(err) + "; nothing was changed. " +
			"Is GATEHOUSE_SECRET_KEY (or the key file) the key the server runs with? Give keys those secrets may have been " +
			"sealed with in GATEHOUSE_SECRET_KEY_PREVIOUS; if none is left, send those destinations' secrets again " +
			"(PATCH /observability/destinations/{id} with their config) or delete them, or rotate with --skip-unreadable " +
			"to leave them unreadable")
	}
	if err != nil {
		return 0, nil, errors.New("re-seal destination secrets: " + gatehouse.ErrorMessage(err) + " (nothing was changed)")
	}
	return n, unreadable, nil
}

// reportSkipped names the destinations a rotation with --skip-unreadable
// left as they were.
func reportSkipped(stdout io.Writer, unreadable []gatehouse.UnreadableDestination) {
	if len(unreadable) == 0 {
		return
	}
	fmt.Fprintf(stdout, "Left %d destinations whose secrets no key opens as they were; they receive nothing until their "+
		"secrets are sent again (PATCH /observability/destinations/{id} with their config) or they are deleted:\n", len(unreadable))
	for _, u := range unreadable {
		fmt.Fprintf(stdout, "  %s\n", u)
	}
}

// lockForRotation takes the SQLite database's serve lock for the whole
// rotation: a server holds the current key in memory and would go on
// sealing new secrets with it, which the rotation discards, and would
// fail to open the secrets it re-seals. So rotation refuses while a server
// runs, and no server starts until it is done.
func lockForRotation(path string) (func(), error) {
	release, holder, err := sqlite.Lock(path, "gatehouse rotate-secret-key")
	if errors.Is(err, sqlite.ErrLocked) {
		return nil, fmt.Errorf("database %s is %s: stop the server before rotating the secret key (it keeps the current key in memory: "+
			"it would seal new secrets with the key the rotation replaces, and could not open the secrets the rotation re-seals); "+
			"nothing was changed", path, holder)
	}
	return release, err
}
