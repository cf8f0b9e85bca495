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
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if cfg.SecretKey == "" && !cfg.isPostgres() {
		path := cfg.SecretKeyFile
		if path == "" {
			path = cfg.DatabaseURL + ".key"
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("no secret key to rotate: %w (set GATEHOUSE_SECRET_KEY or GATEHOUSE_SECRET_KEY_FILE to the current key)", err)
		}
	}
	oldKey, file, err := cfg.secretKey(logger)
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
	n, err := reseal(ctx, cfg, box, stdout, logger)
	if err != nil {
		if pending != "" {
			os.Remove(pending)
		}
		return err
	}
	if file != "" {
		if err := os.Rename(pending, file); err != nil {
			return fmt.Errorf("re-sealed %s, but could not move the new key from %s to %s: %w (move it by hand; the secrets now need it)", counted(n), pending, file, err)
		}
		fmt.Fprintf(stdout, "Re-sealed %s with a new key, now in %s.\n", counted(n), file)
		return nil
	}
	fmt.Fprintf(stdout, "Re-sealed %s with the new key below.\n"+
		"Set GATEHOUSE_SECRET_KEY to it on every instance; until all of them run it, keep the old key in\n"+
		"GATEHOUSE_SECRET_KEY_PREVIOUS, and run this command again (with --new-key) before removing it.\n%s\n", counted(n), encoded)
	return nil
}

// counted says what a rotation re-sealed.
func counted(n gatehouse.Resealed) string {
	return fmt.Sprintf("the secrets of %d destinations and %d BYOK keys", n.Destinations, n.BYOKKeys)
}

// reseal opens the store with box and re-seals every secret at rest
// (destination secrets and BYOK keys), then the stored content of
// generations (saying how many on stdout).
func reseal(ctx context.Context, cfg Config, box *gatehouse.SecretBox, stdout io.Writer, logger *slog.Logger) (gatehouse.Resealed, error) {
	store, err := openStoreWith(ctx, cfg, box, logger)
	if err != nil {
		return gatehouse.Resealed{}, err
	}
	defer store.Close()
	n, err := store.ResealSecrets(ctx)
	if err != nil {
		return n, errors.New("re-seal the secrets: " + gatehouse.ErrorMessage(err) + " (nothing was changed; is the current key right?)")
	}
	// The content of generations is many rows: it is re-sealed in batches,
	// once the destinations (which need the new key from now on) are done.
	// What a failure leaves is readable while the old key stays in
	// GATEHOUSE_SECRET_KEY_PREVIOUS, and expires with the retention.
	contents, err := gatehouse.ResealContent(ctx, store, 200)
	if err != nil {
		logger.Warn("re-sealing the stored content of generations stopped: the rest stays readable only while the old key is in GATEHOUSE_SECRET_KEY_PREVIOUS (it expires with GATEHOUSE_CONTENT_RETENTION); run the command again to finish",
			"resealed", contents, "error", err.Error())
	}
	if contents > 0 {
		fmt.Fprintf(stdout, "Re-sealed the stored content of %d generations.\n", contents)
	}
	return n, nil
}
