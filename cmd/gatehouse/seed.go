package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base32"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"strings"
	"time"

	"gatehouse"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// seedOptions are the flags of `gatehouse bench-seed`.
type seedOptions struct {
	keys, guardrails, members, workspaces int
	// workspaceMembers is the number of members of each workspace other
	// than the default one (which holds every member without rows).
	workspaceMembers int
	samples          int
	orgName          string
	manifest         string
}

// benchSeedCommand runs `gatehouse bench-seed`: it creates one organization
// through the store, then fills it with rows written in bulk (multi-row
// INSERTs in large transactions on SQLite, COPY on PostgreSQL), for the
// scale benchmarks of bench/. The rows are those the store itself would
// write; the ids and key plaintexts derive from a random secret of the run.
func benchSeedCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := DefaultConfig()
	if err := cfg.fromEnv(getenv); err != nil {
		return err
	}
	opts, err := parseSeedFlags(args, &cfg, stderr)
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	start := time.Now()
	org, mgmtKey, defaultWS, err := seedOrganization(ctx, cfg, opts.orgName)
	if err != nil {
		return err
	}
	plan := newSeedPlan(opts, org, defaultWS, time.Now())
	bulk, err := openBulk(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer bulk.close()
	for _, t := range plan.tables() {
		tableStart := time.Now()
		n, err := bulk.insert(ctx, t, func(done int) {
			fmt.Fprintf(stderr, "  %s: %d rows (%s)\n", t.name, done, time.Since(tableStart).Round(100*time.Millisecond))
		})
		if err != nil {
			return fmt.Errorf("seed %s: %w", t.name, err)
		}
		fmt.Fprintf(stderr, "seeded %-18s %9d rows in %s\n", t.name, n, time.Since(tableStart).Round(10*time.Millisecond))
	}
	if err := bulk.finish(ctx); err != nil {
		return err
	}
	if opts.manifest != "" {
		if err := writeManifest(opts.manifest, plan.manifest(mgmtKey)); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "Seeded organization %q: %d keys, %d guardrails, %d members, %d workspaces in %s.\n%s\n%s\n",
		opts.orgName, opts.keys, opts.guardrails, opts.members, opts.workspaces,
		time.Since(start).Round(10*time.Millisecond), org, mgmtKey)
	return nil
}

func parseSeedFlags(args []string, cfg *Config, stderr io.Writer) (seedOptions, error) {
	var o seedOptions
	fs := flag.NewFlagSet("bench-seed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	databaseFlag(fs, cfg)
	fs.IntVar(&o.keys, "keys", 1000, "regular API keys")
	fs.IntVar(&o.guardrails, "guardrails", 100, "guardrails")
	fs.IntVar(&o.members, "members", 100, "organization members")
	fs.IntVar(&o.workspaces, "workspaces", 10, "workspaces, the default one included")
	fs.IntVar(&o.workspaceMembers, "workspace-members", 0, "members of each workspace other than the default (at most --members)")
	fs.IntVar(&o.samples, "samples", 1000, "how many ids of each kind the manifest samples")
	fs.StringVar(&o.orgName, "org-name", "Bench organization", "name of the organization")
	fs.StringVar(&o.manifest, "manifest", "", "write a JSON file of ids for the benchmarks (sampled keys, guardrails, workspaces and their members)")
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	switch {
	case o.keys < 0 || o.guardrails < 0 || o.members < 0 || o.workspaceMembers < 0 || o.samples < 0:
		return o, usageError{"bench-seed: counts must not be negative"}
	case o.workspaces < 1:
		return o, usageError{"bench-seed: --workspaces counts the default workspace, so it must be at least 1"}
	case o.workspaceMembers > o.members:
		return o, usageError{"bench-seed: --workspace-members must not exceed --members"}
	}
	return o, nil
}

// seedOrganization creates the organization through the store, so that it
// and its default workspace are exactly what the server makes, and returns
// a management key for it: GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY when set, else
// a new one.
func seedOrganization(ctx context.Context, cfg Config, name string) (orgID, mgmtKey, defaultWS string, err error) {
	cfg.SecretKey = throwawayKey // nothing is sealed: the box only has to exist
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := openStore(ctx, cfg, logger)
	if err != nil {
		return "", "", "", err
	}
	defer store.Close()
	org, err := store.CreateOrganization(ctx, name)
	if err != nil {
		return "", "", "", fmt.Errorf("create organization: %s", gatehouse.ErrorMessage(err))
	}
	if cfg.BootstrapKey != "" {
		if _, err := store.EnsureManagementKey(ctx, org.ID, cfg.BootstrapKey, "Bootstrap management key"); err != nil {
			return "", "", "", fmt.Errorf("GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY: %s", gatehouse.ErrorMessage(err))
		}
		mgmtKey = cfg.BootstrapKey
	} else if _, mgmtKey, err = store.CreateManagementKey(ctx, org.ID, "Bench management key"); err != nil {
		return "", "", "", fmt.Errorf("create management key: %s", gatehouse.ErrorMessage(err))
	}
	w, err := store.FindWorkspace(ctx, org.ID, "")
	if err != nil {
		return "", "", "", fmt.Errorf("find default workspace: %s", gatehouse.ErrorMessage(err))
	}
	return org.ID, mgmtKey, w.ID, nil
}

// seedTable is the rows of one table: row fills dst with the values of the
// i-th candidate row (in cols order) and reports whether it is a row at all.
type seedTable struct {
	name string
	cols []string
	n    int
	row  func(i int, dst []any) bool
}

// seedPlan derives every seeded row from its index, so that nothing of a
// million rows has to be held in memory.
type seedPlan struct {
	opts      seedOptions
	secret    [32]byte
	orgID     string
	defaultWS string
	base      int64 // created_at of row 0, Unix ms
	// The first regular keys of the default workspace have no limit, no
	// creator and no guardrail: their plaintexts are for benchmarks that
	// authenticate or call models. The next assignPool keys of the default
	// workspace are left unassigned for the bulk-assign benchmark.
	regular, assignPool int
	// keysDefault and guardrailsDefault are how many of each sit in the
	// default workspace; the rest spread over the others.
	keysDefault, guardrailsDefault int
}

const seedRegularKeys = 10

func newSeedPlan(o seedOptions, orgID, defaultWS string, now time.Time) *seedPlan {
	p := &seedPlan{opts: o, orgID: orgID, defaultWS: defaultWS, base: now.Add(-2 * time.Hour).UnixMilli()}
	_, _ = rand.Read(p.secret[:])
	p.keysDefault, p.guardrailsDefault = defaultShare(o.keys, o.workspaces, 10_000), defaultShare(o.guardrails, o.workspaces, 1_000)
	p.regular = min(seedRegularKeys, p.keysDefault)
	p.assignPool = min(p.keysDefault-p.regular, 10_000)
	return p
}

// defaultShare is how many of n rows go to the default workspace: a tenth,
// at least floor (so that its lists and bulk operations have room), all of
// them when it is the only workspace.
func defaultShare(n, workspaces, floor int) int {
	if workspaces == 1 {
		return n
	}
	return min(n, max(n/10, floor))
}

// sum returns a digest unique to (kind, i) and secret to this run.
func (p *seedPlan) sum(kind byte, i int) [32]byte {
	var buf [41]byte
	copy(buf[:32], p.secret[:])
	buf[32] = kind
	binary.BigEndian.PutUint64(buf[33:], uint64(i))
	return sha256.Sum256(buf[:])
}

// uuid returns a version-4-shaped UUID for (kind, i).
func (p *seedPlan) uuid(kind byte, i int) string {
	s := p.sum(kind, i)
	s[6] = s[6]&0x0f | 0x40
	s[8] = s[8]&0x3f | 0x80
	return uuid.UUID(s[:16]).String()
}

var userIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// memberID has the shape of gatehouse.NewUserID.
func (p *seedPlan) memberID(i int) string {
	s := p.sum('u', i)
	return "user_" + userIDEncoding.EncodeToString(s[:12])
}

// keyPlaintext has the shape of gatehouse.NewKeySecret.
func (p *seedPlan) keyPlaintext(i int) string {
	s := p.sum('k', i)
	return gatehouse.KeyPrefix + hex.EncodeToString(s[:])
}

func (p *seedPlan) keyHash(i int) string { return gatehouse.HashKey(p.keyPlaintext(i)) }

// workspaceID returns the id of workspace j; 0 is the default one.
func (p *seedPlan) workspaceID(j int) string {
	if j == 0 {
		return p.defaultWS
	}
	return p.uuid('w', j)
}

func (p *seedPlan) guardrailID(g int) string { return p.uuid('g', g) }

// spread returns the workspace of the i-th of n rows of which the first
// inDefault sit in the default workspace.
func (p *seedPlan) spread(i, inDefault int) int {
	if i < inDefault || p.opts.workspaces == 1 {
		return 0
	}
	return 1 + (i-inDefault)%(p.opts.workspaces-1)
}

// firstGuardrailOf returns the first guardrail of workspace j, or -1.
func (p *seedPlan) firstGuardrailOf(j int) int {
	if j == 0 {
		return min(0, p.guardrailsDefault-1)
	}
	if g := p.guardrailsDefault + j - 1; g < p.opts.guardrails {
		return g
	}
	return -1
}

func (p *seedPlan) tables() []seedTable {
	return []seedTable{p.workspaceTable(), p.memberTable(), p.workspaceMemberTable(), p.guardrailTable(),
		p.keyTable(), p.keyAssignmentTable(), p.memberAssignmentTable()}
}

func (p *seedPlan) workspaceTable() seedTable {
	return seedTable{name: "workspaces", n: p.opts.workspaces - 1,
		cols: []string{"id", "organization_id", "name", "slug", "description", "io_logging_sampling_rate",
			"is_data_discount_logging_enabled", "is_observability_broadcast_enabled", "is_observability_io_logging_enabled",
			"include_byok_in_budgets", "is_default", "default_guardrail_id", "created_at"},
		row: func(i int, d []any) bool {
			j := i + 1
			id := p.workspaceID(j)
			var desc any
			if j%2 == 0 {
				desc = fmt.Sprintf("Benchmark workspace number %d", j)
			}
			fill(d, id, p.orgID, fmt.Sprintf("Bench workspace %d", j), fmt.Sprintf("bench-%d", j), desc, 1.0,
				j%3 == 0, false, false, false, false, gatehouse.DefaultGuardrailID(id), p.base+int64(j))
			return true
		}}
}

func (p *seedPlan) memberTable() seedTable {
	return seedTable{name: "members", n: p.opts.members,
		cols: []string{"organization_id", "id", "email", "first_name", "last_name", "role", "created_at"},
		row: func(i int, d []any) bool {
			role := gatehouse.RoleMember
			if i%100 == 0 {
				role = gatehouse.RoleAdmin
			}
			fill(d, p.orgID, p.memberID(i), fmt.Sprintf("bench-member-%d@example.com", i), "Member", fmt.Sprint(i), role, p.base+int64(i))
			return true
		}}
}

func (p *seedPlan) workspaceMemberTable() seedTable {
	per, others := p.opts.workspaceMembers, p.opts.workspaces-1
	return seedTable{name: "workspace_members", n: per * others,
		cols: []string{"id", "organization_id", "workspace_id", "user_id", "created_at"},
		row: func(i int, d []any) bool {
			j, t := 1+i/per, i%per
			fill(d, p.uuid('m', i), p.orgID, p.workspaceID(j), p.memberID(p.workspaceMember(j, t)), p.base+int64(t))
			return true
		}}
}

// workspaceMember returns the member index of the t-th member of workspace j.
func (p *seedPlan) workspaceMember(j, t int) int {
	return ((j-1)*p.opts.workspaceMembers + t) % p.opts.members
}

func (p *seedPlan) guardrailTable() seedTable {
	return seedTable{name: "guardrails", n: p.opts.guardrails,
		cols: []string{"id", "organization_id", "workspace_id", "name", "description", "allowed_providers",
			"ignored_models", "limit_nanos", "reset_interval", "include_byok_in_budgets", "created_at", "updated_at"},
		row: func(g int, d []any) bool {
			var desc, providers, ignored, limit, reset any
			switch g % 4 {
			case 0:
				providers = `["openai","anthropic"]`
			case 1:
				limit, reset = int64(50*gatehouse.NanosPerUSD), "monthly"
			case 2:
				ignored, desc = `["openai/o1-pro"]`, "No frontier models"
			}
			at := p.base + int64(g)
			fill(d, p.guardrailID(g), p.orgID, p.workspaceID(p.spread(g, p.guardrailsDefault)), fmt.Sprintf("bench-guardrail-%d", g),
				desc, providers, ignored, limit, reset, false, at, at)
			return true
		}}
}

func (p *seedPlan) keyTable() seedTable {
	return seedTable{name: "api_keys", n: p.opts.keys,
		cols: []string{"hash", "organization_id", "workspace_id", "management", "name", "disabled", "limit_nanos",
			"limit_reset", "include_byok_in_limit", "creator_user_id", "created_at"},
		row: func(k int, d []any) bool {
			j := p.spread(k, p.keysDefault)
			var limit, reset, creator any
			if k >= p.regular && k%3 == 0 {
				limit, reset = int64(10*gatehouse.NanosPerUSD), "monthly"
			}
			// Creators only in the default workspace, so that members can
			// be removed from the others.
			if j == 0 && k >= p.regular && k%5 == 0 && p.opts.members > 0 {
				creator = p.memberID(k % p.opts.members)
			}
			fill(d, p.keyHash(k), p.orgID, p.workspaceID(j), false, fmt.Sprintf("bench-key-%d", k), false,
				limit, reset, false, creator, p.base+int64(k))
			return true
		}}
}

// keyAssignmentTable assigns every tenth key (outside the reserved ones)
// to the first guardrail of its workspace.
func (p *seedPlan) keyAssignmentTable() seedTable {
	return seedTable{name: "key_assignments", n: p.opts.keys,
		cols: []string{"id", "organization_id", "guardrail_id", "key_hash", "created_at"},
		row: func(k int, d []any) bool {
			if k%10 != 0 || k < p.regular+p.assignPool {
				return false
			}
			g := p.firstGuardrailOf(p.spread(k, p.keysDefault))
			if g < 0 {
				return false
			}
			fill(d, p.uuid('a', k), p.orgID, p.guardrailID(g), p.keyHash(k), p.base+int64(k))
			return true
		}}
}

// memberAssignmentTable assigns every tenth member to a guardrail of the
// default workspace.
func (p *seedPlan) memberAssignmentTable() seedTable {
	return seedTable{name: "member_assignments", n: p.opts.members,
		cols: []string{"id", "organization_id", "guardrail_id", "user_id", "created_at"},
		row: func(i int, d []any) bool {
			if i%10 != 0 || p.guardrailsDefault == 0 {
				return false
			}
			fill(d, p.uuid('b', i), p.orgID, p.guardrailID((i/10)%p.guardrailsDefault), p.memberID(i), p.base+int64(i))
			return true
		}}
}

func fill(dst []any, vals ...any) { copy(dst, vals) }

// seedManifest lists ids for the benchmarks to request.
type seedManifest struct {
	OrganizationID     string `json:"organization_id"`
	ManagementKey      string `json:"management_key"`
	DefaultWorkspaceID string `json:"default_workspace_id"`
	// RegularKeys are plaintexts of keys of the default workspace with no
	// limit, creator or guardrail.
	RegularKeys []string `json:"regular_keys"`
	// KeyHashes, GuardrailIDs and MemberIDs are random samples.
	KeyHashes    []string `json:"key_hashes"`
	GuardrailIDs []string `json:"guardrail_ids"`
	MemberIDs    []string `json:"member_ids"`
	// AssignGuardrailIDs are guardrails of the default workspace without
	// rules, and AssignKeyHashes unassigned keys of that workspace.
	AssignGuardrailIDs []string `json:"assign_guardrail_ids"`
	AssignKeyHashes    []string `json:"assign_key_hashes"`
	// Workspaces are the workspaces other than the default, with their
	// members.
	Workspaces []seedWorkspace `json:"workspaces"`
	Counts     map[string]int  `json:"counts"`
}

type seedWorkspace struct {
	ID      string   `json:"id"`
	UserIDs []string `json:"user_ids"`
}

func (p *seedPlan) manifest(mgmtKey string) *seedManifest {
	o := p.opts
	rnd := mrand.New(mrand.NewPCG(binary.BigEndian.Uint64(p.secret[:8]), 1))
	m := &seedManifest{OrganizationID: p.orgID, ManagementKey: mgmtKey, DefaultWorkspaceID: p.defaultWS,
		Counts: map[string]int{"keys": o.keys, "guardrails": o.guardrails, "members": o.members, "workspaces": o.workspaces,
			"workspace_members": o.workspaceMembers}}
	for k := range p.regular {
		m.RegularKeys = append(m.RegularKeys, p.keyPlaintext(k))
	}
	m.KeyHashes = sample(rnd, o.keys, o.samples, p.keyHash)
	m.GuardrailIDs = sample(rnd, o.guardrails, o.samples, p.guardrailID)
	m.MemberIDs = sample(rnd, o.members, o.samples, p.memberID)
	for g := 3; g < p.guardrailsDefault && len(m.AssignGuardrailIDs) < 2; g += 4 { // g%4 == 3: no rules
		m.AssignGuardrailIDs = append(m.AssignGuardrailIDs, p.guardrailID(g))
	}
	for k := p.regular; k < p.regular+p.assignPool; k++ {
		m.AssignKeyHashes = append(m.AssignKeyHashes, p.keyHash(k))
	}
	for j := 1; j < o.workspaces; j++ {
		w := seedWorkspace{ID: p.workspaceID(j), UserIDs: []string{}}
		for t := range o.workspaceMembers {
			w.UserIDs = append(w.UserIDs, p.memberID(p.workspaceMember(j, t)))
		}
		m.Workspaces = append(m.Workspaces, w)
	}
	return m
}

// sample returns up to k distinct ids out of n, at random.
func sample(rnd *mrand.Rand, n, k int, id func(int) string) []string {
	out := []string{}
	if k >= n {
		for i := range n {
			out = append(out, id(i))
		}
		return out
	}
	seen := map[int]bool{}
	for len(out) < k {
		if i := rnd.IntN(n); !seen[i] {
			seen[i] = true
			out = append(out, id(i))
		}
	}
	return out
}

func writeManifest(path string, m *seedManifest) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600) // it holds key plaintexts
}

// bulkWriter writes seeded rows fast.
type bulkWriter interface {
	// insert writes the rows of t and returns how many; progress is called
	// now and then with the count so far.
	insert(ctx context.Context, t seedTable, progress func(done int)) (int, error)
	// finish makes the rows durable and the database ready to serve.
	finish(ctx context.Context) error
	close()
}

const seedProgressEvery = 250_000

// openBulk opens the database for bulk writing.
func openBulk(ctx context.Context, databaseURL string) (bulkWriter, error) {
	if (&Config{DatabaseURL: databaseURL}).isPostgres() {
		conn, err := pgx.Connect(ctx, databaseURL)
		if err != nil {
			return nil, fmt.Errorf("connect to %s: %w", redactURL(databaseURL), err)
		}
		return &pgBulk{conn: conn}, nil
	}
	// One connection, no fsync until the end and no foreign key checks:
	// the rows are consistent by construction, and the seed test checks
	// them with PRAGMA foreign_key_check.
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(0)")
	q.Add("_pragma", "synchronous(OFF)")
	q.Add("_pragma", "cache_size(-262144)") // 256 MiB
	db, err := sql.Open("sqlite", "file:"+databaseURL+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return &sqliteBulk{db: db}, nil
}

// sqliteBulk writes multi-row INSERTs, many rows to a statement and many
// statements to a transaction.
type sqliteBulk struct{ db *sql.DB }

const (
	sqliteMaxVars  = 32766 // SQLITE_MAX_VARIABLE_NUMBER
	sqliteTxRows   = 200_000
	sqliteStmtRows = 500
)

func (b *sqliteBulk) insert(ctx context.Context, t seedTable, progress func(int)) (int, error) {
	perStmt := min(sqliteStmtRows, sqliteMaxVars/len(t.cols))
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	full, err := tx.PrepareContext(ctx, insertSQL(t, perStmt))
	if err != nil {
		return 0, err
	}
	args := make([]any, 0, perStmt*len(t.cols))
	row := make([]any, len(t.cols))
	done, inTx := 0, 0
	flush := func(stmt *sql.Stmt, rows int) error {
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return err
		}
		args, done, inTx = args[:0], done+rows, inTx+rows
		if done%seedProgressEvery < rows {
			progress(done)
		}
		if inTx < sqliteTxRows {
			return nil
		}
		// A new transaction keeps the WAL from growing without bound.
		if err := tx.Commit(); err != nil {
			return err
		}
		if tx, err = b.db.BeginTx(ctx, nil); err != nil {
			return err
		}
		full, err = tx.PrepareContext(ctx, insertSQL(t, perStmt))
		inTx = 0
		return err
	}
	for i := range t.n {
		if !t.row(i, row) {
			continue
		}
		args = append(args, row...)
		if len(args) == cap(args) {
			if err := flush(full, perStmt); err != nil {
				return done, err
			}
		}
	}
	if rest := len(args) / len(t.cols); rest > 0 {
		last, err := tx.PrepareContext(ctx, insertSQL(t, rest))
		if err != nil {
			return done, err
		}
		if err := flush(last, rest); err != nil {
			return done, err
		}
	}
	return done, tx.Commit()
}

// insertSQL returns an INSERT of rows rows of t.
func insertSQL(t seedTable, rows int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(t.cols)), ", ") + ")"
	return "INSERT INTO " + t.name + " (" + strings.Join(t.cols, ", ") + ") VALUES " +
		strings.TrimSuffix(strings.Repeat(one+", ", rows), ", ")
}

func (b *sqliteBulk) finish(ctx context.Context) error {
	_, err := b.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	return err
}

func (b *sqliteBulk) close() { b.db.Close() }

// pgBulk writes with COPY, one table at a time.
type pgBulk struct{ conn *pgx.Conn }

func (b *pgBulk) insert(ctx context.Context, t seedTable, progress func(int)) (int, error) {
	row := make([]any, len(t.cols))
	i, done := 0, 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		for ; i < t.n; i++ {
			if t.row(i, row) {
				i++
				if done++; done%seedProgressEvery == 0 {
					progress(done)
				}
				return row, nil
			}
		}
		return nil, nil
	})
	n, err := b.conn.CopyFrom(ctx, pgx.Identifier{t.name}, t.cols, src)
	return int(n), err
}

// finish gathers the planner's statistics, as autovacuum would soon after
// such inserts, so that the benchmarks run on the plans of a settled
// database.
func (b *pgBulk) finish(ctx context.Context) error {
	_, err := b.conn.Exec(ctx, "ANALYZE")
	return err
}

func (b *pgBulk) close() { b.conn.Close(context.Background()) }
