package main

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"gatehouse"
	"gatehouse/egress"
	"gatehouse/httpapi"
	"gatehouse/internal/jsonlog"
	"gatehouse/ratelimit"

	"github.com/redis/go-redis/v9"
)

// Config is every setting of the server. DefaultConfig holds the defaults;
// the environment overrides them and flags override the environment.
type Config struct {
	Addr          string
	DatabaseURL   string
	BootstrapKey  string
	SecretKey     string
	SecretKeyFile string
	// SecretKeyPrevious lists keys that may still open secrets sealed
	// before a rotation (comma-separated); they never seal.
	SecretKeyPrevious string
	RateLimit         ratelimit.Config
	LogLevel          string
	LogFormat         string
	ShutdownTimeout   time.Duration
	DBTimeout         time.Duration
	DBShareWait       time.Duration
	// AnalyticsTimeout bounds a read of the activity or analytics (408
	// past it).
	AnalyticsTimeout time.Duration
	// TraceLease is how long the outbox of observability deliveries holds
	// an instance's entries without a renewal: after a crash, its
	// deliveries go out once it runs out (GATEHOUSE_OBSERVABILITY_LEASE).
	TraceLease time.Duration
	RedisURL   string
	// ProvidersFile is the YAML file of the providers and models the
	// gateway serves (see provider.LoadProviders); empty serves no models.
	ProvidersFile string
	// PprofAddr is where to serve net/http/pprof; "" turns it off.
	PprofAddr string
	// TrustedProxies are the reverse proxies whose X-Forwarded-For and
	// Forwarded headers name the client (for rate limits and logs).
	TrustedProxies []netip.Prefix
	// Egress is where observability deliveries may connect: every
	// loopback, private, link-local and metadata address is refused unless
	// GATEHOUSE_EGRESS_ALLOW opens it.
	Egress *egress.Policy
	// MeteringCommit is "async" (metering commits are acknowledged once a
	// crash of this process cannot undo them, and reach the disk within a
	// bounded delay) or "sync" (they wait for the disk like every write).
	MeteringCommit string
	// MetricsAddr serves /metrics on a listener of its own (and not on the
	// API's); "" keeps it on the API's listener.
	MetricsAddr string
	// ContentRetention is how long the prompts and completions of
	// generations are kept (where workspaces log I/O); 0 keeps none.
	ContentRetention time.Duration
	// Retention is how long the ledger and the audit log keep their
	// entries (GATEHOUSE_LEDGER_RETENTION, GATEHOUSE_AUDIT_RETENTION);
	// zero keeps them.
	Retention gatehouse.Retention
	// PublicURL is where browsers reach this server, the base of the
	// console links it hands out (invitations, password resets); ""
	// derives it from the listen address (see publicURL).
	PublicURL string
}

// DefaultConfig returns the defaults of every setting.
func DefaultConfig() Config {
	return Config{
		Addr:             "127.0.0.1:8080",
		DatabaseURL:      "./gatehouse.db",
		RateLimit:        ratelimit.Config{RPS: 50, Burst: 100},
		LogLevel:         "info",
		LogFormat:        "auto",
		ShutdownTimeout:  10 * time.Second,
		DBTimeout:        5 * time.Second,
		DBShareWait:      gatehouse.DefaultShareWait,
		AnalyticsTimeout: httpapi.DefaultAnalyticsTimeout,
		Egress:           &egress.Policy{},
		MeteringCommit:   "async",
		ContentRetention: gatehouse.DefaultContentRetention,
	}
}

// fromEnv overrides the defaults with the GATEHOUSE_* environment.
func (c *Config) fromEnv(getenv func(string) string) error {
	str := func(name string, dst *string) {
		if v := getenv(name); v != "" {
			*dst = v
		}
	}
	str("GATEHOUSE_ADDR", &c.Addr)
	str("GATEHOUSE_DATABASE_URL", &c.DatabaseURL)
	str("GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY", &c.BootstrapKey)
	str("GATEHOUSE_SECRET_KEY", &c.SecretKey)
	str("GATEHOUSE_SECRET_KEY_FILE", &c.SecretKeyFile)
	str("GATEHOUSE_SECRET_KEY_PREVIOUS", &c.SecretKeyPrevious)
	str("GATEHOUSE_LOG_LEVEL", &c.LogLevel)
	str("GATEHOUSE_LOG_FORMAT", &c.LogFormat)
	str("GATEHOUSE_REDIS_URL", &c.RedisURL)
	str("GATEHOUSE_PPROF_ADDR", &c.PprofAddr)
	str("GATEHOUSE_METRICS_ADDR", &c.MetricsAddr)
	str("GATEHOUSE_METERING_COMMIT", &c.MeteringCommit)
	str("GATEHOUSE_PUBLIC_URL", &c.PublicURL)
	if v := getenv("GATEHOUSE_EGRESS_ALLOW"); v != "" {
		p, err := egress.Parse(v)
		if err != nil {
			return fmt.Errorf("GATEHOUSE_EGRESS_ALLOW: %w", err)
		}
		c.Egress = p
	}
	str("GATEHOUSE_PROVIDERS_FILE", &c.ProvidersFile)
	if v := getenv("GATEHOUSE_RATE_LIMIT_RPS"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("GATEHOUSE_RATE_LIMIT_RPS=%q: want a number of requests per second, such as 50 (0 disables limiting)", v)
		}
		c.RateLimit.RPS = f
	}
	if v := getenv("GATEHOUSE_RATE_LIMIT_BURST"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("GATEHOUSE_RATE_LIMIT_BURST=%q: want a whole number of requests, such as 100", v)
		}
		c.RateLimit.Burst = n
	}
	if v := getenv("GATEHOUSE_TRUSTED_PROXIES"); v != "" {
		for _, f := range strings.Split(v, ",") {
			f = strings.TrimSpace(f)
			p, err := netip.ParsePrefix(f)
			if err != nil {
				a, aerr := netip.ParseAddr(f)
				if aerr != nil {
					return fmt.Errorf("GATEHOUSE_TRUSTED_PROXIES: %q is not a CIDR such as 10.0.0.0/8 or an address", f)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			c.TrustedProxies = append(c.TrustedProxies, p.Masked())
		}
	}
	if v := getenv("GATEHOUSE_DB_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("GATEHOUSE_DB_TIMEOUT=%q: want a positive duration such as 5s", v)
		}
		c.DBTimeout = d
	}
	if v := getenv("GATEHOUSE_DB_SHARE_WAIT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("GATEHOUSE_DB_SHARE_WAIT=%q: want a positive duration such as 2s", v)
		}
		c.DBShareWait = d
	}
	if v := getenv("GATEHOUSE_CONTENT_RETENTION"); v != "" {
		d, err := gatehouse.ParseRetention(v)
		if err != nil {
			return fmt.Errorf("GATEHOUSE_CONTENT_RETENTION=%q: %w", v, err)
		}
		c.ContentRetention = d
	}
	var err error
	if c.Retention.Ledger, err = parseRetention("GATEHOUSE_LEDGER_RETENTION", getenv("GATEHOUSE_LEDGER_RETENTION")); err != nil {
		return err
	}
	if c.Retention.Audit, err = parseRetention("GATEHOUSE_AUDIT_RETENTION", getenv("GATEHOUSE_AUDIT_RETENTION")); err != nil {
		return err
	}
	if v := getenv("GATEHOUSE_ANALYTICS_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("GATEHOUSE_ANALYTICS_TIMEOUT=%q: want a positive duration such as 10s", v)
		}
		c.AnalyticsTimeout = d
	}
	if v := getenv("GATEHOUSE_OBSERVABILITY_LEASE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > time.Hour {
			return fmt.Errorf("GATEHOUSE_OBSERVABILITY_LEASE=%q: want a duration from 1s to 1h such as 30s", v)
		}
		c.TraceLease = d
	}
	if v := getenv("GATEHOUSE_SHUTDOWN_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("GATEHOUSE_SHUTDOWN_TIMEOUT=%q: want a duration such as 10s", v)
		}
		c.ShutdownTimeout = d
	}
	return nil
}

// Validate checks the settings before anything starts.
func (c *Config) Validate() error {
	if c.Addr == "" {
		return errors.New("the listen address is empty: set GATEHOUSE_ADDR or --addr, such as 127.0.0.1:8080")
	}
	if c.DatabaseURL == "" {
		return errors.New("the database is empty: set GATEHOUSE_DATABASE_URL or --database, such as ./gatehouse.db")
	}
	if scheme, _, ok := strings.Cut(c.DatabaseURL, "://"); ok && !c.isPostgres() && scheme != "file" {
		return fmt.Errorf("database %s (GATEHOUSE_DATABASE_URL or --database): unsupported scheme %q: give a SQLite file path "+
			"(such as ./gatehouse.db or /var/lib/gatehouse/gatehouse.db) or a postgres:// URL", redactURL(c.DatabaseURL), scheme)
	}
	if k := c.BootstrapKey; k != "" && (!strings.HasPrefix(k, gatehouse.ManagementKeyPrefix) || len(k) < 40) {
		return fmt.Errorf("GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY must start with %s and be at least 40 characters", gatehouse.ManagementKeyPrefix)
	}
	if c.RedisURL != "" {
		if _, err := redis.ParseURL(c.RedisURL); err != nil {
			return fmt.Errorf("GATEHOUSE_REDIS_URL: %v (want e.g. redis://127.0.0.1:6379/0)", err)
		}
	}
	if err := c.RateLimit.Validate(); err != nil {
		return fmt.Errorf("rate limit (GATEHOUSE_RATE_LIMIT_RPS, GATEHOUSE_RATE_LIMIT_BURST): %w", err)
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return err
	}
	if c.MeteringCommit != "async" && c.MeteringCommit != "sync" {
		return fmt.Errorf("GATEHOUSE_METERING_COMMIT=%q: want async (the default: metering survives a crash of Gatehouse at once, of the machine after at most 100 ms on SQLite) or sync (every metering commit waits for the disk)", c.MeteringCommit)
	}
	switch c.LogFormat {
	case "auto", "json", "text":
	default:
		return fmt.Errorf("GATEHOUSE_LOG_FORMAT=%q: want json, text or auto", c.LogFormat)
	}
	return checkPublicURL(c.PublicURL)
}

// checkPublicURL accepts "" (derived) or an absolute http(s) URL without a
// query or fragment, such as https://gatehouse.example.com or
// https://example.com/gatehouse.
func checkPublicURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "#") {
		return fmt.Errorf("GATEHOUSE_PUBLIC_URL=%q: want the http:// or https:// URL where browsers reach this server, "+
			"such as https://gatehouse.example.com (no query, fragment or user)", s)
	}
	return nil
}

// publicURL returns the configured public URL without a trailing slash,
// or the one derived from the address the server listens on: http:// and
// that address, with a wildcard host (0.0.0.0, ::, none) read as
// 127.0.0.1, as a browser on this machine reaches it.
func (c *Config) publicURL(listening string) string {
	if c.PublicURL != "" {
		return strings.TrimRight(c.PublicURL, "/")
	}
	host, port, err := net.SplitHostPort(listening)
	if err != nil {
		return httpapi.DefaultPublicURL
	}
	if ip, err := netip.ParseAddr(host); host == "" || err == nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// isPostgres reports whether the database URL selects PostgreSQL.
func (c *Config) isPostgres() bool {
	return strings.HasPrefix(c.DatabaseURL, "postgres://") || strings.HasPrefix(c.DatabaseURL, "postgresql://")
}

// publicURLFlag adds --public-url to a flag set.
func publicURLFlag(fs *flag.FlagSet, c *Config) {
	fs.StringVar(&c.PublicURL, "public-url", c.PublicURL, "URL where browsers reach the server, the base of console links (env GATEHOUSE_PUBLIC_URL; default from --addr)")
}

// databaseFlag adds --database to a flag set.
func databaseFlag(fs *flag.FlagSet, c *Config) {
	fs.StringVar(&c.DatabaseURL, "database", c.DatabaseURL, "SQLite path or postgres:// URL (env GATEHOUSE_DATABASE_URL)")
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("GATEHOUSE_LOG_LEVEL=%q: want debug, info, warn or error", s)
	}
	return l, nil
}

// newLogger returns the structured logger: JSON unless the output is a
// terminal (or the format says otherwise).
func newLogger(c Config, w io.Writer) *slog.Logger {
	level, _ := parseLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	if logFormat(c, w) == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(jsonlog.New(w, opts))
}

// logFormat resolves the "auto" format: text on a terminal, else JSON.
func logFormat(c Config, w io.Writer) string {
	if c.LogFormat != "auto" {
		return c.LogFormat
	}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return "text"
		}
	}
	return "json"
}

// openBox returns the cipher of secrets at rest (destination secrets,
// BYOK keys): it seals with the
// current key (see secretKey) and also opens with the keys of
// GATEHOUSE_SECRET_KEY_PREVIOUS, during a rotation. created is the key
// file it created, or "". Without secrets (a command that touches no
// secret), no key file is created: the configured key is used when there
// is one, else a random key that nothing is sealed with.
func (c *Config) openBox(secrets bool) (box *gatehouse.SecretBox, created string, err error) {
	var key []byte
	if !secrets && c.SecretKey == "" && !c.keyFileExists() {
		key = gatehouse.NewSecretKey()
	} else if key, _, created, err = c.secretKey(); err != nil {
		return nil, "", err
	}
	previous, err := c.previousKeys()
	if err == nil {
		box, err = gatehouse.NewSecretBox(key, previous...)
	}
	if err != nil && created != "" {
		os.Remove(created)
	}
	return box, created, err
}

// keyFile is the path of the key file: GATEHOUSE_SECRET_KEY_FILE, else
// beside a SQLite database, else "" (PostgreSQL has no default).
func (c *Config) keyFile() string {
	switch {
	case c.SecretKeyFile != "":
		return c.SecretKeyFile
	case c.isPostgres():
		return ""
	}
	return c.DatabaseURL + ".key"
}

// keyFileExists reports whether there is a key file to read.
func (c *Config) keyFileExists() bool {
	path := c.keyFile()
	if path == "" {
		return false
	}
	_, err := os.Stat(path)
	return err == nil
}

// secretKey returns the current key: GATEHOUSE_SECRET_KEY, else the key
// file, which is created (mode 0600) with a fresh random key when it does
// not exist; file is the key file's path, or "" when the key came from the
// environment, and created the file's path when this call created it.
func (c *Config) secretKey() (key []byte, file, created string, err error) {
	if c.SecretKey != "" {
		key, err := decodeSecretKey(c.SecretKey)
		if err != nil {
			return nil, "", "", fmt.Errorf("GATEHOUSE_SECRET_KEY: %w", err)
		}
		return key, "", "", nil
	}
	path := c.keyFile()
	if path == "" {
		// Instances on one PostgreSQL database must share the key; a file
		// made up by each of them would not be shared.
		return nil, "", "", errors.New("with PostgreSQL, set GATEHOUSE_SECRET_KEY (the same value on every instance; e.g. the output of: openssl rand -base64 32) or GATEHOUSE_SECRET_KEY_FILE")
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		key := gatehouse.NewSecretKey()
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			_, err = f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
			err = errors.Join(err, f.Close())
		}
		if errors.Is(err, os.ErrExist) { // another process created it first
			return c.secretKey()
		}
		if err != nil {
			return nil, "", "", fmt.Errorf("create secret key file %s: %w", path, err)
		}
		return key, path, path, nil
	}
	if err != nil {
		return nil, "", "", fmt.Errorf("read secret key file %s: %w", path, err)
	}
	key, err = decodeSecretKey(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, "", "", fmt.Errorf("secret key file %s: %w", path, err)
	}
	return key, path, "", nil
}

// previousKeys returns the keys of GATEHOUSE_SECRET_KEY_PREVIOUS.
func (c *Config) previousKeys() ([][]byte, error) {
	var keys [][]byte
	for _, s := range strings.Split(c.SecretKeyPrevious, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		k, err := decodeSecretKey(s)
		if err != nil {
			return nil, fmt.Errorf("GATEHOUSE_SECRET_KEY_PREVIOUS: %w", err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// decodeSecretKey accepts 32 bytes as base64 (standard or URL) or hex.
func decodeSecretKey(s string) ([]byte, error) {
	for _, dec := range []func(string) ([]byte, error){
		base64.StdEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
		base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString, hex.DecodeString,
	} {
		if b, err := dec(s); err == nil && len(b) == gatehouse.SecretKeySize {
			return b, nil
		}
	}
	return nil, errors.New("want 32 bytes encoded as base64 or hex (e.g. the output of: openssl rand -base64 32)")
}
