package sqlstore

import (
	"context"
	"sync"
)

// QueryLog is an Engine that records the statements its reads run (View and
// Read), with their arguments, and runs them on the engine it wraps: the
// plan tests of the engines read the plans of the queries the store runs,
// not copies of them.
type QueryLog struct {
	Engine
	mu      sync.Mutex
	queries []LoggedQuery
}

// LoggedQuery is a statement a read ran.
type LoggedQuery struct {
	Query string
	Args  []any
}

// Take returns the statements recorded since the last Take.
func (l *QueryLog) Take() []LoggedQuery {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queries
	l.queries = nil
	return q
}

func (l *QueryLog) View(ctx context.Context, fn func(q Querier) error) error {
	return l.Engine.View(ctx, func(q Querier) error { return fn(logged{q, l}) })
}

func (l *QueryLog) Read(ctx context.Context, fn func(q Querier) error) error {
	return l.Engine.Read(ctx, func(q Querier) error { return fn(logged{q, l}) })
}

type logged struct {
	Querier
	l *QueryLog
}

func (q logged) record(query string, args []any) {
	q.l.mu.Lock()
	q.l.queries = append(q.l.queries, LoggedQuery{query, append([]any(nil), args...)})
	q.l.mu.Unlock()
}

func (q logged) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	q.record(query, args)
	return q.Querier.Query(ctx, query, args...)
}

func (q logged) QueryRow(ctx context.Context, query string, args ...any) Row {
	q.record(query, args)
	return q.Querier.QueryRow(ctx, query, args...)
}
