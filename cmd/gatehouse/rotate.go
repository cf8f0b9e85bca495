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
// every destination secret and BYOK key with a new key in one transaction,
// then the stored content of generations in batches. The old key is the
// configured one (GATEHOUSE_SECRET_KEY or the key file); the new one is
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
		if err := writeKeyFile(pending, newKey); err != nil { // synced: it reaches the disk first
			return fmt.Errorf("write the new key to %s: %w", pending, err)
		}
	}
	n, contentErr, err := reseal(ctx, cfg, box, stdout, logger, *skip)
	if err != nil {
		if pending != "" {
			os.Remove(pending)
		}
		return err
	}
	if file == "" {
		reportSkipped(stdout, n.Skipped)
		fmt.Fprintf(stdout, "Re-sealed %s with the new key below.\n"+
			"Set GATEHOUSE_SECRET_KEY to it on every instance; until all of them run it, keep the old key in\n"+
			"GATEHOUSE_SECRET_KEY_PREVIOUS, and run this command again (with --new-key) before removing it.\n%s\n", counted(n), encoded)
		return contentStopped(contentErr, "the old key")
	}
	if contentErr != nil {
		// Some content is still sealed with the old key, which the key file
		// is about to lose: it is kept beside it first.
		old := file + ".previous"
		if err := writeKeyFile(old, oldKey); err != nil {
			return fmt.Errorf("re-sealed %s, but re-sealing the stored content stopped (%v), and the old key could not be kept in %s: %w; "+
				"the key file %s still holds the old key and %s the new one: keep both", counted(n), contentErr, old, err, file, pending)
		}
	}
	if err := os.Rename(pending, file); err != nil {
		return fmt.Errorf("re-sealed %s, but could not move the new key from %s to %s: %w (move it by hand; the secrets now need it)", counted(n), pending, file, err)
	}
	fmt.Fprintf(stdout, "Re-sealed %s with a new key, now in %s.\n", counted(n), file)
	reportSkipped(stdout, n.Skipped)
	return contentStopped(contentErr, "the old key, kept in "+file+".previous,")
}

// contentStopped is the error of a rotation whose re-sealing of stored
// content stopped: the destinations and BYOK keys have the new key, and
// the rest of the content still needs oldKey (where it is kept) in
// GATEHOUSE_SECRET_KEY_PREVIOUS until the command runs again to the end.
func contentStopped(err error, oldKey string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("re-sealing the stored content of generations stopped: %w. The secrets have the new key; the content not "+
		"re-sealed yet stays readable only with %s in GATEHOUSE_SECRET_KEY_PREVIOUS: set it there and run this command again to finish", err, oldKey)
}

// counted says what a rotation re-sealed.
func counted(n gatehouse.Resealed) string {
	return fmt.Sprintf("the secrets of %d destinations and %d BYOK keys, and the client secrets of %d identity providers",
		n.Destinations, n.BYOKKeys, n.SSOProviders)
}

// reseal opens the store with box and re-seals every secret at rest
// (destination secrets and BYOK keys), then the stored content of
// generations (saying how many on stdout, and how many no key opens).
// Secrets that no key given opens refuse it, naming them, unless skip; an
// error of the content's re-sealing comes apart (contentErr), once the
// secrets have the new key.
func reseal(ctx context.Context, cfg Config, box *gatehouse.SecretBox, stdout io.Writer, logger *slog.Logger, skip bool) (_ gatehouse.Resealed, contentErr, err error) {
	store, err := openStoreWith(ctx, cfg, box, logger, true)
	if err != nil {
		return gatehouse.Resealed{}, nil, err
	}
	defer store.Close()
	n, err := store.ResealSecrets(ctx, skip)
	if gatehouse.ErrorCode(err) == gatehouse.ECONFLICT {
		return n, nil, errors.New("re-seal the secrets: " + gatehouse.ErrorMessage(err) + "; nothing was changed. " +
			"Is GATEHOUSE_SECRET_KEY (or the key file) the key the server runs with? Give keys those secrets may have been " +
			"sealed with in GATEHOUSE_SECRET_KEY_PREVIOUS; if none is left, send them again (a destination: PATCH " +
			"/observability/destinations/{id} with its config; a BYOK key: replace it) or delete them, or rotate with " +
			"--skip-unreadable to leave them unreadable")
	}
	if err != nil {
		return n, nil, errors.New("re-seal the secrets: " + gatehouse.ErrorMessage(err) + " (nothing was changed; is the current key right?)")
	}
	// The content of generations is many rows: it is re-sealed in batches,
	// once the destinations (which need the new key from now on) are done.
	contents, contentErr := gatehouse.ResealContent(ctx, store, 200)
	if contents.Resealed > 0 {
		fmt.Fprintf(stdout, "Re-sealed the stored content of %d generations.\n", contents.Resealed)
	}
	if contents.Unreadable > 0 {
		fmt.Fprintf(stdout, "Left the stored content of %d generations that no key given opens as it was: it stays unreadable, "+
			"and goes with GATEHOUSE_CONTENT_RETENTION.\n", contents.Unreadable)
	}
	return n, contentErr, nil
}

// reportSkipped names the secrets a rotation with --skip-unreadable left
// as they were.
func reportSkipped(stdout io.Writer, skipped []gatehouse.UnreadableSecret) {
	if len(skipped) == 0 {
		return
	}
	fmt.Fprintf(stdout, "Left %d secrets that no key opens as they were; they stay unusable (a destination receives "+
		"nothing) until they are sent again or deleted:\n", len(skipped))
	for _, u := range skipped {
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
