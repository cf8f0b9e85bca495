// Package sqlstore is the store of Gatehouse written once: every service of
// gatehouse.Store over SQL, on any engine that can run a read, a write and
// a locking write with a Querier, in the Dialect it speaks. The sqlite and
// postgres packages are such engines: they open the database, migrate it,
// run transactions their own way, and embed a *Store.
//
// Queries are written with ? placeholders; an engine that numbers its
// parameters rebinds them (once per query text). Booleans are compared as
// column = TRUE and column = FALSE, never as a bare column or NOT column:
// SQLite stores them as 0 and 1 and reads TRUE and FALSE as those, but
// uses an index (or a partial index WHERE column = TRUE) only for an
// equality it can match; PostgreSQL reads both forms alike.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"math/bits"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gatehouse"
)

// Querier runs statements: a transaction, or a pool.
type Querier interface {
	// Exec runs a statement and returns the number of rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// QueryRow runs a query of one row; its Scan returns ErrNoRows when
	// there is none.
	QueryRow(ctx context.Context, query string, args ...any) Row
}

// Later is a Querier that can hold a write back, to send it with the
// transaction's next statement or its commit (PostgreSQL's pipeline: one
// round trip for all). Its error then fails that statement, or the
// commit, and so the transaction.
type Later interface {
	Later(ctx context.Context, query string, args ...any)
}

// later runs a write whose only answer needed is its error: now, or held
// back when the engine can (Later). Only a write whose failure fails the
// whole operation may go this way.
func (tx *Tx) later(ctx context.Context, query string, args ...any) error {
	if l, ok := tx.Querier.(Later); ok {
		l.Later(ctx, query, args...)
		return nil
	}
	_, err := tx.Exec(ctx, query, args...)
	return err
}

// Rows are the rows of a query.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Row is the first row of a query.
type Row interface {
	Scan(dest ...any) error
}

// ErrNoRows is what Row.Scan returns, on every engine, for no row.
var ErrNoRows = sql.ErrNoRows

// Engine runs work on one database.
type Engine interface {
	// View runs fn in a read-only transaction: one snapshot.
	View(ctx context.Context, fn func(q Querier) error) error
	// Read runs fn outside a transaction, each statement its own snapshot:
	// for the hottest reads of a single query.
	Read(ctx context.Context, fn func(q Querier) error) error
	// Update runs fn as a write that is all-or-nothing and serializable
	// with every other write. fn may run more than once (a retried
	// conflict), so it must not leak state between runs.
	Update(ctx context.Context, fn func(q Querier) error) error
	// Lock runs fn as a write that locks the rows it reads with
	// Dialect.ForUpdate: the metering path, where concurrent requests of
	// one key queue on its row instead of conflicting and retrying.
	Lock(ctx context.Context, fn func(q Querier) error) error
	// LockAsync is Lock for the metering writes: its commit is
	// acknowledged once a crash of this process can no longer undo it,
	// and reaches the disk within a bounded delay (SQLite: the WAL is
	// fsynced within 100 ms; PostgreSQL: synchronous_commit = off, within
	// three times the server's wal_writer_delay). A crash of the machine
	// may lose that delay's metering; never a management write.
	LockAsync(ctx context.Context, fn func(q Querier) error) error
	Dialect() Dialect
}

// Dialect is what differs in the SQL of an engine.
type Dialect interface {
	// ForUpdate is the clause that locks the rows a SELECT reads, or "".
	ForUpdate() string
	// In returns the condition that column is one of values, and its
	// arguments: IN (?, ?, …) or = ANY(?).
	In(column string, values []string) (string, []any)
	// FoldedKeyName is the expression of a key's name folded as
	// gatehouse.FoldKeyName does (ASCII letters to lower case, nothing
	// else), compared in byte order: what the indexes of the key search
	// hold (migration 0017_key_search.sql), written as they hold it.
	FoldedKeyName() string
	// IsUnique and IsForeignKey classify constraint violations.
	IsUnique(err error) bool
	IsForeignKey(err error) bool
	// Catalog returns the query with which Copy reads the schema: a row
	// (name, columns, boolean columns, parent tables) for every table that
	// holds data (not the engine's own, nor schema_migrations, which each
	// database keeps for itself, nor list_counts, which the target's
	// triggers fill as the rows are copied), in a stable order; each list holds names
	// separated by commas, the columns in the table's order, the parents
	// those that the table's foreign keys refer to.
	Catalog() string
	// BeforeAdmission is the statement that starts a batch of admissions,
	// or "": settings of the engine's planner for its sums of what is held.
	BeforeAdmission() string
	// DeletesInWith reports whether a WITH clause may hold a DELETE ...
	// RETURNING whose rows the main query reads (PostgreSQL): the ledger
	// then ends a batch's holds in one statement instead of three.
	DeletesInWith() bool
	// AfterCopy is the statement that makes a database that Copy filled
	// continue from the copied rows (its sequences past the copied ids),
	// or "".
	AfterCopy() string
}

// Store implements gatehouse.Store over an Engine.
type Store struct {
	// Now is the clock of every operation; tests replace it.
	Now gatehouse.Clock

	engine Engine
	d      Dialect
	// syncMetering makes the metering writes wait for the disk like every
	// other write (SetSyncMetering).
	syncMetering bool
	box          *gatehouse.SecretBox
	// instance names this process in the reservations it writes, so that
	// others can charge them once it is gone (SetInstance).
	instance string
	// admitter batches reservations (BatchReserves); nil: each alone.
	admitter *admitter
	// ledger is the store's ledger, whose queued settles the admitter's
	// batches write too.
	ledger *Ledger
	// writes counts the writes this process committed (every management
	// change is one), and policies remembers the guardrails that govern
	// keys until the next write, for at most policyTTL.
	writes      atomic.Uint64
	policies    sync.Map // key hash -> *policy
	policyCount atomic.Int64
	// logging remembers which workspaces log I/O, for the content the
	// ledger stores, under the same rule as policies.
	logging loggingCache
	// byokKeys remembers the BYOK keys of workspaces for providers as
	// policies remembers guardrails (ProviderBYOKKeys).
	byokKeys  sync.Map // workspace id + " " + provider -> *byokEntry
	byokCount atomic.Int64
	// keyMarks remember where the pages of the keys API ended
	// (keylist.go).
	keyMarks keyMarks
	// pageWalk is the end from which pages are read (SetPageWalk).
	pageWalk PageWalk
	// ledgerWriters is the number of the ledger's batches in flight at
	// once (SetLedgerWriters).
	ledgerWriters int
}

// SetSyncMetering makes the metering writes (admission, the ledger) commit
// like every other write, waiting for the disk, when on: the setting
// GATEHOUSE_METERING_COMMIT=sync. Call it before serving.
func (s *Store) SetSyncMetering(on bool) { s.syncMetering = on }

// SetInstance names this process in the reservations it writes from now
// on; call it before serving.
func (s *Store) SetInstance(id string) { s.instance = id }

// New returns the store of an engine; box seals destination secrets and
// BYOK keys.
func New(e Engine, box *gatehouse.SecretBox) *Store {
	return &Store{Now: time.Now, engine: e, d: e.Dialect(), box: box}
}

// Tx is the work of one operation: its querier, and the one instant all of
// it is stamped with (UTC, to the millisecond, as stored).
type Tx struct {
	Querier
	d   Dialect
	box *gatehouse.SecretBox
	now time.Time
	// instance names this process in the reservations it writes.
	instance string
	// s is the store the Tx belongs to.
	s *Store
}

func (s *Store) tx(q Querier) *Tx {
	return &Tx{Querier: q, d: s.d, box: s.box, now: s.Now().UTC().Truncate(time.Millisecond), instance: s.instance, s: s}
}

// run runs fn with a Tx through one of the engine's ways and returns its
// value: each run of fn starts from nothing, so a retried run cannot see
// what an earlier one set.
func run[T any](ctx context.Context, s *Store, way func(context.Context, func(Querier) error) error, fn func(tx *Tx) (T, error)) (T, error) {
	var out T
	err := way(ctx, func(q Querier) error {
		v, err := fn(s.tx(q))
		out = v
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

func view[T any](ctx context.Context, s *Store, fn func(tx *Tx) (T, error)) (T, error) {
	return run(ctx, s, s.engine.View, fn)
}

func read[T any](ctx context.Context, s *Store, fn func(tx *Tx) (T, error)) (T, error) {
	return run(ctx, s, s.engine.Read, fn)
}

func update[T any](ctx context.Context, s *Store, fn func(tx *Tx) (T, error)) (T, error) {
	defer s.Wrote()
	return run(ctx, s, s.engine.Update, fn)
}

// Wrote records that a write was committed (or tried): what was read
// before it may have changed. An engine's own writes call it too.
func (s *Store) Wrote() { s.writes.Add(1) }

// Writes counts the writes this process committed: what was read before it
// changed may be stale (Leases retire their slices of limits when it does).
func (s *Store) Writes() uint64 { return s.writes.Load() }

func lock[T any](ctx context.Context, s *Store, fn func(tx *Tx) (T, error)) (T, error) {
	return run(ctx, s, s.engine.Lock, fn)
}

// meterTx is lock for the metering writes on the request path (admission,
// the ledger's batches): asynchronous commits unless SetSyncMetering.
func meterTx[T any](ctx context.Context, s *Store, fn func(tx *Tx) (T, error)) (T, error) {
	if s.syncMetering {
		return lock(ctx, s, fn)
	}
	return run(ctx, s, s.engine.LockAsync, fn)
}

// none is the value of an operation that returns only an error.
type none struct{}

// exec runs a write that returns nothing.
func (s *Store) exec(ctx context.Context, fn func(tx *Tx) error) error {
	return do(ctx, s, update, fn)
}

func do(ctx context.Context, s *Store, way func(context.Context, *Store, func(*Tx) (none, error)) (none, error), fn func(tx *Tx) error) error {
	_, err := way(ctx, s, func(tx *Tx) (none, error) { return none{}, fn(tx) })
	return err
}

// wrap names the operation in an error's log text, keeping the domain code
// and message the client sees (pkgsite's derrors.Wrap).
func wrap(err *error, op string) {
	if *err == nil {
		return
	}
	var e *gatehouse.Error
	if errors.As(*err, &e) {
		return // the client's error says all; its cause, if any, is kept inside
	}
	*err = fmt.Errorf("%s: %w", op, *err)
}

// Scanner is a row to scan: Row or Rows.
type Scanner interface {
	Scan(dest ...any) error
}

// collect scans every row with scan and closes rows.
func collect[T any](rows Rows, err error, scan func(Scanner) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// listing is one page of a list, and the number of all its items.
type listing[T any] struct {
	items []T
	total int
}

// unpack returns the items and total of a listing read by view.
func unpack[T any](l *listing[T], err error) ([]T, int, error) {
	if err != nil {
		return nil, 0, err
	}
	return l.items, l.total, nil
}

// findPage returns one page of `SELECT columns FROM from` (from carries the
// joins and the WHERE clause, filled in by args) ordered by order, with the
// number of all matching rows, both in the snapshot of tx. The last term
// of order is the row's key: unique in its table.
func findPage[T any](ctx context.Context, tx *Tx, columns, from, order string, args []any, page gatehouse.Page, scan func(Scanner) (T, error)) (*listing[T], error) {
	return findCountedPage(ctx, tx, columns, from, from, order, args, page, scan)
}

// findCountedPage is findPage counting the rows of counted, a FROM clause
// (with the same arguments) that has as many rows as from but reads fewer
// pages: from without a join that only adds columns to each row.
//
// The page is found in counted too, by its key alone, and only its rows
// are read whole: the rows the offset skips are skipped in the index that
// holds counted's filter and order (each list has one, and a test of its
// plan), never read from the table; and from the nearer end of the list
// (walkPage): the last page of a million rows walks no more of the index
// than the first, the middle one half of it, and none reads the table's
// pages for the rows skipped.
func findCountedPage[T any](ctx context.Context, tx *Tx, columns, from, counted, order string, args []any, page gatehouse.Page, scan func(Scanner) (T, error)) (*listing[T], error) {
	return countAndPage(ctx, tx, columns, from, counted, order, false, args, page, scan)
}

// findScopedPage is findCountedPage for a list whose key is unique only
// within the list's filter (a member's id, within the organization).
func findScopedPage[T any](ctx context.Context, tx *Tx, columns, from, counted, order string, args []any, page gatehouse.Page, scan func(Scanner) (T, error)) (*listing[T], error) {
	return countAndPage(ctx, tx, columns, from, counted, order, true, args, page, scan)
}

// findKeptCountPage is findCountedPage for a list whose rows triggers
// count and cut into blocks (migrations 0031, 0052, 0054): its count is
// list's of scope in list_counts, and a page deep in it is found by its
// blocks (blocks.go).
func findKeptCountPage[T any](ctx context.Context, tx *Tx, list, scope string, columns, from, counted, order string, scoped bool, args []any, page gatehouse.Page, scan func(Scanner) (T, error)) (*listing[T], error) {
	return countAndPage(ctx, tx, columns, from, counted, order, scoped, args, page, scan, list, scope)
}

// countAndPage reads a list's count (list_counts' for list and scope,
// when list is given), then its page, both in tx's snapshot (every caller
// reads in view: one snapshot on both engines, so the count says where the
// page is). The page is read from the nearer end of the list (walkPage):
// past the middle, in the reversed order, skipping the rows after it.
func countAndPage[T any](ctx context.Context, tx *Tx, columns, from, counted, order string, scoped bool, args []any, page gatehouse.Page, scan func(Scanner) (T, error), list ...string) (*listing[T], error) {
	var total int
	count, countArgs := `SELECT count(*) FROM `+counted, args
	if len(list) == 2 {
		count, countArgs = keptCountQuery(list[0], list[1])
	}
	if err := tx.QueryRow(ctx, count, countArgs...).Scan(&total); err != nil {
		return nil, err
	}
	return pageOfTotal(ctx, tx, total, columns, from, counted, order, scoped, args, page, scan, list...)
}

// keptCountQuery reads the kept count of a list (list_counts).
func keptCountQuery(list, scope string) (string, []any) {
	return `SELECT COALESCE(SUM(n), 0) FROM list_counts WHERE list = ? AND scope = ?`, []any{list, scope}
}

// pageOfTotal is countAndPage's page of a list of total rows.
func pageOfTotal[T any](ctx context.Context, tx *Tx, total int, columns, from, counted, order string, scoped bool, args []any, page gatehouse.Page, scan func(Scanner) (T, error), list ...string) (*listing[T], error) {
	w, ok := tx.s.walkPage(total, page)
	if !ok {
		return &listing[T]{[]T{}, total}, nil
	}
	var query string
	var qargs []any
	if len(list) == 2 && tx.s.byBlocks(w.page.Offset) { // a list whose count is kept has blocks
		var err error
		if query, qargs, err = tx.blockPageQuery(ctx, list[0], list[1], total, columns, from, counted, order, scoped, args, page); err != nil {
			return nil, err
		}
	}
	if query == "" {
		query, qargs = PageQuery(columns, from, counted, order, scoped, args, w.page, w.reversed)
	}
	rows, err := tx.Query(ctx, query, qargs...)
	items, err := collect(rows, err, scan)
	if err != nil {
		return nil, err
	}
	return &listing[T]{items, total}, nil
}

// PageWalk is the end of a list from which the store reads a page of it
// when it knows the list's length.
type PageWalk int

const (
	// WalkNearer reads each page from the nearer end of its list: the
	// default.
	WalkNearer PageWalk = iota
	// WalkForward reads every page from the list's start, as it is
	// ordered, and WalkBackward from its end, in the reversed order; both
	// read even a page that is empty. For tests: of the reversed queries'
	// plans, and that both ways find the same rows.
	WalkForward
	WalkBackward
	// WalkBlocks finds every page of a list that has blocks (the keys
	// API's, the audit log, the members: blocks.go) by its blocks, however
	// near an end, and fails if they do not add up. For tests.
	WalkBlocks
)

// SetPageWalk sets the end of a list from which its pages are read
// (WalkNearer unless told). Call it before using the store: tests only.
func (s *Store) SetPageWalk(w PageWalk) { s.pageWalk = w }

// pageWalk is the way a page is read: a page of the list as it is
// ordered, or of the list reversed (every ORDER BY term's direction
// flipped, the same index walked backwards) whose rows are then returned
// in the list's order.
type pageWalk struct {
	page     gatehouse.Page
	reversed bool
}

// walkPage returns the way to read page of a list of total rows (as read
// in the page's snapshot) that skips fewer rows in the index: forward,
// skipping the page's offset, or reversed, skipping the rows after the page
// (total - offset - limit; the last page skips none). The middle page is
// the worst: half the list is skipped. ok is false when the page is empty
// (past the end, or of no rows): nothing to read.
//
// Every list's order is total (its last term is a key unique in the list),
// so the reversed page holds exactly the rows of the forward one.
func (s *Store) walkPage(total int, page gatehouse.Page) (w pageWalk, ok bool) {
	offset, limit := max(page.Offset, 0), page.Limit
	after := total - offset - limit // the rows after the page
	rows := limit                   // the page's
	if after < 0 {
		rows, after = limit+after, 0
	}
	forward := pageWalk{page: gatehouse.Page{Offset: offset, Limit: limit}}
	backward := pageWalk{page: gatehouse.Page{Offset: after, Limit: max(rows, 0)}, reversed: true}
	return nearer(s.pageWalk, rows, forward, offset, backward, after)
}

// nearer chooses between the forward and the backward walk to a page of
// rows rows, which skip fwdSkip and backSkip index entries: the one that
// skips fewer (forward on a tie), unless mode forces one. ok is false when
// the page is empty and no mode forces a walk.
func nearer[W any](mode PageWalk, rows int, forward W, fwdSkip int, backward W, backSkip int) (w W, ok bool) {
	switch {
	case mode == WalkForward:
		return forward, true
	case mode == WalkBackward:
		return backward, true
	case rows <= 0:
		return w, false
	case backSkip < fwdSkip:
		return backward, true
	}
	return forward, true
}

// reverseOrder is an ORDER BY list with every term's direction flipped.
// The NULLs of a column go last in the reversed order where they went
// first, on both engines, so the reversed order is exactly the list's
// backwards.
func reverseOrder(order string) string {
	terms := strings.Split(order, ",")
	for i, t := range terms {
		t = strings.TrimSpace(t)
		switch {
		case strings.HasSuffix(t, " DESC"):
			t = strings.TrimSuffix(t, " DESC")
		case strings.HasSuffix(t, " ASC"):
			t = strings.TrimSuffix(t, " ASC") + " DESC"
		default:
			t += " DESC"
		}
		terms[i] = t
	}
	return strings.Join(terms, ", ")
}

// PageQuery is the query of one page of findCountedPage, and its
// arguments: the keys of the page's rows are found in counted (skipping the
// offset in its index), then each of those rows in from by its key (and
// from's filter when scoped: the key is unique only within it). When
// reversed, the keys are found in the reversed order (page is a page of
// the list reversed), and the rows returned in the list's.
func PageQuery(columns, from, counted, order string, scoped bool, args []any, page gatehouse.Page, reversed bool) (string, []any) {
	return pageQuery(columns, from, counted, order, scoped, args, args, page, reversed)
}

// pageQuery is PageQuery with counted's own arguments, countedArgs (args
// and more).
func pageQuery(columns, from, counted, order string, scoped bool, args, countedArgs []any, page gatehouse.Page, reversed bool) (string, []any) {
	terms := strings.Split(order, ",")
	key := strings.TrimSuffix(strings.TrimSpace(terms[len(terms)-1]), " DESC")
	qargs := append(append(make([]any, 0, len(args)+len(countedArgs)+2), countedArgs...), page.Limit, page.Offset)
	if scoped {
		qargs = append(qargs, args...)
	} else if i := strings.LastIndex(from, "WHERE"); i >= 0 {
		from = strings.TrimSpace(from[:i])
	}
	if reversed {
		order = reverseOrder(order)
	}
	return pageOf(columns, from, key, `SELECT `+key+` AS page_key FROM `+counted+` ORDER BY `+order+` LIMIT ? OFFSET ?`, reversed), qargs
}

// pageOf is the query of the rows of from whose keys the query keys
// returns (as page_key), in its order (reversed: in the reverse of it).
// The keys come first (CROSS JOIN: SQLite keeps the order of the tables),
// each row then found by its key, never by walking from's index and
// testing keys: a page's rows are read, no others. The rows are ordered by
// their rank among the keys (page_row), which no index of from holds, so
// that no engine walks one to skip the sort of a page.
func pageOf(columns, from, key, keys string, reversed bool) string {
	join := " WHERE "
	if strings.Contains(from, "WHERE") {
		join = " AND "
	}
	rank := ` ORDER BY page.page_row`
	if reversed {
		rank += ` DESC`
	}
	return `SELECT ` + columns + ` FROM (SELECT page_key, row_number() OVER () AS page_row FROM (` + keys + `) page_keys) page CROSS JOIN ` +
		from + join + key + ` = page.page_key` + rank
}

// placeholders returns "?, ?, ..." for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// insert inserts one row into table: args are the values of columns.
func (tx *Tx) insert(ctx context.Context, table, columns string, args []any) error {
	_, err := tx.Exec(ctx, `INSERT INTO `+table+` (`+columns+`) VALUES (`+placeholders(len(args))+`)`, args...)
	return err
}

// insertRows inserts rows (each the values of columns) in a few statements,
// each ending with then (an ON CONFLICT clause), and returns how many rows
// it wrote: a bulk call is a few round trips, not one a row (a bulk assign of
// 100 keys on PostgreSQL: 90/s a row at a time, 369/s in one statement).
// The rows go in the order given, which callers sort so that concurrent
// calls lock rows in one order.
//
// The rows go in statements of a power of two rows each, largest first:
// the engines keep the statements they prepare per query text (SQLite's
// writer up to 512), and a statement for every row count a batch can have
// would fill that cache with up to 500 statements of thousands of
// parameters (tens of MiB) where these are 9 at most.
func (tx *Tx) insertRows(ctx context.Context, table, columns string, rows [][]any, then string) (int, error) {
	total := 0
	for query, args := range inserts(table, columns, rows, then) {
		affected, err := tx.Exec(ctx, query, args...)
		if err != nil {
			return total, err
		}
		total += int(affected)
	}
	return total, nil
}

// insertLater is insertRows for rows whose count written is not needed:
// their statements may be held back (Tx.later).
func (tx *Tx) insertLater(ctx context.Context, table, columns string, rows [][]any, then string) error {
	for query, args := range inserts(table, columns, rows, then) {
		if err := tx.later(ctx, query, args...); err != nil {
			return err
		}
	}
	return nil
}

// inserts are the statements that insert rows into table: as few as a
// few statement texts allow (each a power of two of rows).
func inserts(table, columns string, rows [][]any, then string) iter.Seq2[string, []any] {
	return func(yield func(string, []any) bool) {
		for len(rows) > 0 {
			n := 1 << (bits.Len(uint(len(rows))) - 1)
			var values strings.Builder
			var args []any
			for i, r := range rows[:n] {
				if i > 0 {
					values.WriteString(", ")
				}
				values.WriteString("(" + placeholders(len(r)) + ")")
				args = append(args, r...)
			}
			if !yield(`INSERT INTO `+table+` (`+columns+`) VALUES `+values.String()+` `+then, args) {
				return
			}
			rows = rows[n:]
		}
	}
}

// prefixed qualifies every column of a comma-separated list.
func prefixed(prefix, columns string) string {
	parts := strings.Split(columns, ",")
	for i, p := range parts {
		parts[i] = prefix + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// nullIfEmpty stores "" as NULL.
func nullIfEmpty[T ~string](s T) any {
	if s == "" {
		return nil
	}
	return string(s)
}

// scanString scans a row of one text column.
func scanString(s Scanner) (string, error) {
	var v string
	return v, s.Scan(&v)
}

// in returns the condition that column is one of values, with the
// arguments of the statement up to it: before, then those of the list.
func (tx *Tx) in(column string, values []string, before ...any) (string, []any) {
	cond, args := tx.d.In(column, values)
	return cond, append(before, args...)
}
