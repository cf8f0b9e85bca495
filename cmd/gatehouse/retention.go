package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"gatehouse"
	"gatehouse/keycache"
	"gatehouse/retention"

	"github.com/prometheus/client_golang/prometheus"
)

// parseRetention reads a retention setting: "keep" (or empty) keeps
// everything; otherwise a positive Go duration ("720h", "90m") or a number
// of days ("90d").
func parseRetention(name, v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "" || strings.EqualFold(v, "keep") {
		return 0, nil
	}
	bad := fmt.Errorf("%s=%q: want keep (the default: nothing is deleted), a number of days such as 90d, or a duration such as 720h", name, v)
	var d time.Duration
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n <= 0 || n > 100*365 {
			return 0, bad
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, bad
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s=%q: a retention must be positive; to keep everything, set keep", name, v)
	}
	if d < time.Second {
		return 0, fmt.Errorf("%s=%q: the shortest retention is 1s", name, v)
	}
	return d, nil
}

// startRetention starts pruning the ledger and the audit log as
// GATEHOUSE_LEDGER_RETENTION and GATEHOUSE_AUDIT_RETENTION say (nothing
// with the default, keep). The returned pruner's Stop must run before the
// store closes.
func startRetention(ctx context.Context, cfg Config, store gatehouse.Store, logger *slog.Logger, reg prometheus.Registerer) (*retention.Pruner, error) {
	if c, ok := store.(*keycache.Cache); ok {
		store = c.Store
	}
	pruner, ok := store.(gatehouse.LogPruner)
	if !ok {
		return nil, fmt.Errorf("the store %T cannot prune its logs", store)
	}
	return retention.Start(ctx, pruner, cfg.Retention, logger, retention.Options{Registerer: reg}), nil
}
