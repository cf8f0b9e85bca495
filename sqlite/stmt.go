package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"gatehouse/sqlstore"
)

// Prepared statements. SQLite compiles every statement it runs, and neither
// database/sql nor the driver keeps compiled statements between calls, so
// repeating the same read recompiled it each time: a fifth of the CPU of a
// key lookup. The read pool keeps its statements here, prepared once per
// query text (database/sql then prepares them once per connection).

// maxStmts bounds the cache; queries past it run unprepared. The store's
// queries are a fixed set, but list queries with IN (?, ?, …) vary in length.
const maxStmts = 512

// stmtCache holds the prepared statements of one connection pool.
//
// Preparing takes a connection of the pool, so it never happens while the
// cache's lock is held, nor while the caller holds a connection of the same
// pool (a read transaction): with every connection held by a transaction
// waiting for another to prepare, the pool would deadlock. A transaction
// that misses the cache runs its query unprepared and has the statement
// prepared in the background for the next caller.
type stmtCache struct {
	pool    *sql.DB
	mu      sync.RWMutex
	stmts   map[string]*sql.Stmt
	pending map[string]bool // being prepared in the background
	closed  bool
	// preparing counts the background preparations, which close waits
	// for: one still holding a connection when the pool closes would
	// touch the database's files after the store is closed.
	preparing sync.WaitGroup
}

func newStmtCache(pool *sql.DB) *stmtCache {
	return &stmtCache{pool: pool, stmts: map[string]*sql.Stmt{}, pending: map[string]bool{}}
}

// lookup returns the cached statement of query, or nil.
func (c *stmtCache) lookup(query string) *sql.Stmt {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.stmts[query]
}

// get returns the prepared statement of query, preparing it on a
// connection of the pool if needed, or nil when the cache is full (the
// caller then runs the query unprepared). The caller must hold no
// connection of the pool.
func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	if s := c.lookup(query); s != nil {
		return s, nil
	}
	if c.full() {
		return nil, nil
	}
	s, err := c.pool.PrepareContext(context.WithoutCancel(ctx), query)
	if err != nil {
		return nil, err
	}
	return c.store(query, s), nil
}

// prepareLater prepares query in the background, once.
func (c *stmtCache) prepareLater(query string) {
	c.mu.Lock()
	if c.closed || c.pending[query] || c.stmts[query] != nil || len(c.stmts)+len(c.pending) >= maxStmts {
		c.mu.Unlock()
		return
	}
	c.pending[query] = true
	c.preparing.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.preparing.Done()
		s, err := c.pool.Prepare(query)
		c.mu.Lock()
		delete(c.pending, query)
		c.mu.Unlock()
		if err == nil {
			c.store(query, s)
		}
	}()
}

func (c *stmtCache) full() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.stmts) >= maxStmts
}

// store caches s as query's statement and returns the cached one: s, or
// one another caller stored first (s is then closed), or nil when the
// cache is full or closed.
func (c *stmtCache) store(query string, s *sql.Stmt) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.stmts[query]; old != nil {
		_ = s.Close()
		return old
	}
	if c.closed || len(c.stmts) >= maxStmts {
		_ = s.Close()
		return nil
	}
	c.stmts[query] = s
	return s
}

// close waits for the background preparations and closes every statement.
func (c *stmtCache) close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.preparing.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, s := range c.stmts {
		errs = append(errs, s.Close())
	}
	clear(c.stmts)
	return errors.Join(errs...)
}

// preparedQuerier runs statements prepared through a cache, on the pool or
// inside a read transaction of it.
type preparedQuerier struct {
	cache *stmtCache
	tx    *sql.Tx // nil: the pool itself
}

func (p preparedQuerier) stmt(ctx context.Context, query string) *sql.Stmt {
	if sqlstore.IsAdHoc(ctx) {
		return nil // built for one request: it would only fill the cache
	}
	if p.tx != nil {
		s := p.cache.lookup(query)
		if s == nil {
			p.cache.prepareLater(query)
			return nil
		}
		return p.tx.StmtContext(ctx, s)
	}
	s, err := p.cache.get(ctx, query)
	if err != nil {
		return nil
	}
	return s
}

func (p preparedQuerier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := p.stmt(ctx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return p.fallback().ExecContext(ctx, query, args...)
}

func (p preparedQuerier) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := p.stmt(ctx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return p.fallback().QueryContext(ctx, query, args...)
}

func (p preparedQuerier) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := p.stmt(ctx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return p.fallback().QueryRowContext(ctx, query, args...)
}

// fallback is where an unprepared query runs.
func (p preparedQuerier) fallback() sqlRunner {
	if p.tx != nil {
		return p.tx
	}
	return p.cache.pool
}
