package console

import (
	"context"
	"fmt"
	"sync"
	"time"

	"gatehouse"
)

// pastCache keeps the answers of the analytics queries over the completed
// days of the window, which no longer change (but for a call settled
// after midnight, or the ledger's retention): the overview and a key's
// page read the ledger of those days once a day per query, and only
// today's calls on every render. An organization with a million calls a
// month then pays the sum of its month once a day, not on every page.
//
// It lives in the process: each instance fills its own. Its entries are
// dropped at the turn of the UTC day; it holds at most maxPastEntries, and
// no answer of more than maxPastRows rows (read afresh each time).
type pastCache struct {
	mu      sync.Mutex
	day     time.Time // the today of the entries
	entries map[string]*gatehouse.AnalyticsResult
	order   []string // the keys, oldest first, for eviction
}

// Bounds of the cache of past days: 512 answers of at most 4,000 rows
// (31 days of 100 keys) each is at most a few tens of MB.
const (
	maxPastEntries = 512
	maxPastRows    = 4000
)

func newPastCache() *pastCache { return &pastCache{entries: map[string]*gatehouse.AnalyticsResult{}} }

// get returns the answer of q (resolved, over days before today) for the
// organization: cached, or read with query and cached.
func (c *pastCache) get(ctx context.Context, orgID string, today time.Time, q *gatehouse.AnalyticsQuery,
	query func(context.Context, string, *gatehouse.AnalyticsQuery) (*gatehouse.AnalyticsResult, error)) (*gatehouse.AnalyticsResult, error) {
	key := fmt.Sprintf("%s|%v|%v|%s|%d|%d|%v|%s|%v|%d|%d", orgID, q.Metrics, q.Dimensions, q.Granularity,
		q.Start.UnixMilli(), q.End.UnixMilli(), q.Filters, q.OrderBy, q.Descending, q.Limit, q.GroupLimit)
	c.mu.Lock()
	if !c.day.Equal(today) {
		c.day, c.entries, c.order = today, map[string]*gatehouse.AnalyticsResult{}, nil
	}
	res, ok := c.entries[key]
	c.mu.Unlock()
	if ok {
		return res, nil
	}
	res, err := query(ctx, orgID, q)
	if err != nil || len(res.Rows) > maxPastRows {
		return res, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.day.Equal(today) {
		if _, ok := c.entries[key]; !ok {
			c.entries[key], c.order = res, append(c.order, key)
		}
		for len(c.order) > maxPastEntries {
			delete(c.entries, c.order[0])
			c.order = c.order[1:]
		}
	}
	return res, nil
}
