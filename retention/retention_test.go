package retention

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"gatehouse"

	"github.com/prometheus/client_golang/prometheus"
)

// fakeLogs holds entry times of two logs and records each call.
type fakeLogs struct {
	mu          sync.Mutex
	generations []time.Time
	audit       []time.Time
	calls       []call
	fail        int // fail this many calls first
}

type call struct {
	log    string
	before time.Time
	limit  int
	at     time.Time
}

func (f *fakeLogs) delete(name string, entries *[]time.Time, before time.Time, limit int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{name, before, limit, time.Now()})
	if f.fail > 0 {
		f.fail--
		return 0, errors.New("database is busy")
	}
	kept, n := (*entries)[:0], 0
	for _, t := range *entries {
		if t.Before(before) && n < limit {
			n++
			continue
		}
		kept = append(kept, t)
	}
	*entries = kept
	return n, nil
}

func (f *fakeLogs) PruneGenerations(_ context.Context, before time.Time, limit int) (int, error) {
	return f.delete("generations", &f.generations, before, limit)
}

func (f *fakeLogs) PruneAuditLog(_ context.Context, before time.Time, limit int) (int, error) {
	return f.delete("audit_log", &f.audit, before, limit)
}

func (f *fakeLogs) snapshot() ([]time.Time, []time.Time, []call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.generations...), append([]time.Time(nil), f.audit...), append([]call(nil), f.calls...)
}

var now = time.Date(2027, 5, 10, 12, 0, 0, 0, time.UTC)

// entries returns n times, one a minute, ending at last.
func entries(n int, last time.Time) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = last.Add(-time.Duration(n-1-i) * time.Minute)
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPrunesInBatchesWithPauses: a backlog is deleted a batch at a time,
// each batch followed by a pause, up to each log's own cutoff; what is
// younger stays; the metric counts what went.
func TestPrunesInBatchesWithPauses(t *testing.T) {
	f := &fakeLogs{
		generations: entries(23, now.Add(-31*24*time.Hour)), // all older than 30 days
		audit:       append(entries(7, now.Add(-91*24*time.Hour)), entries(3, now)...),
	}
	f.generations = append(f.generations, entries(4, now)...) // recent: kept
	reg := prometheus.NewRegistry()
	p := Start(context.Background(), f, gatehouse.Retention{Ledger: 30 * 24 * time.Hour, Audit: 90 * 24 * time.Hour},
		slog.New(slog.NewTextHandler(io.Discard, nil)),
		Options{Batch: 5, MinPause: 20 * time.Millisecond, Now: func() time.Time { return now }, Registerer: reg})
	waitFor(t, "the first pass", func() bool {
		g, a, _ := f.snapshot()
		return len(g) == 4 && len(a) == 3
	})
	p.Stop()
	_, _, calls := f.snapshot()
	var gens []call
	for _, c := range calls {
		if c.limit != 5 {
			t.Errorf("a call with limit %d, want the batch, 5", c.limit)
		}
		want := now.Add(-30 * 24 * time.Hour)
		if c.log == "audit_log" {
			want = now.Add(-90 * 24 * time.Hour)
		}
		if !c.before.Equal(want) {
			t.Errorf("%s pruned before %v, want %v", c.log, c.before, want)
		}
		if c.log == "generations" {
			gens = append(gens, c)
		}
	}
	// 23 old entries in batches of 5: 5 5 5 5 3, the last short batch ends it.
	if len(gens) != 5 {
		t.Fatalf("%d batches of generations, want 5", len(gens))
	}
	for i := 1; i < len(gens); i++ {
		if gap := gens[i].at.Sub(gens[i-1].at); gap < 20*time.Millisecond {
			t.Errorf("batch %d came %v after the one before, want a pause of at least 20ms", i, gap)
		}
	}
	if got := deletedTotal(t, reg, "generations"); got != 23 {
		t.Errorf("gatehouse_retention_deleted_total{log=generations} = %v, want 23", got)
	}
	if got := deletedTotal(t, reg, "audit_log"); got != 7 {
		t.Errorf("gatehouse_retention_deleted_total{log=audit_log} = %v, want 7", got)
	}
}

// TestKeepPrunesNothing: the default policy starts no pass at all, and a
// log whose retention is zero is left alone while the other is pruned.
func TestKeepPrunesNothing(t *testing.T) {
	f := &fakeLogs{generations: entries(10, now.Add(-1000*time.Hour)), audit: entries(10, now.Add(-1000*time.Hour))}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	p := Start(context.Background(), f, gatehouse.Retention{}, logger, Options{Now: func() time.Time { return now }})
	time.Sleep(50 * time.Millisecond)
	p.Stop()
	if _, _, calls := f.snapshot(); len(calls) != 0 {
		t.Fatalf("the keep policy made %d calls, want none", len(calls))
	}

	p = Start(context.Background(), f, gatehouse.Retention{Audit: time.Hour}, logger, Options{Now: func() time.Time { return now }})
	waitFor(t, "the audit log pruned", func() bool { _, a, _ := f.snapshot(); return len(a) == 0 })
	p.Stop()
	g, _, calls := f.snapshot()
	if len(g) != 10 {
		t.Errorf("%d generations left, want all 10 (ledger retention: keep)", len(g))
	}
	for _, c := range calls {
		if c.log != "audit_log" {
			t.Errorf("a call on %s, whose retention is keep", c.log)
		}
	}
}

// TestFailureRetriedNextPass: a failed batch ends the pass; the next pass
// (an interval later) finishes the work.
func TestFailureRetriedNextPass(t *testing.T) {
	f := &fakeLogs{generations: entries(3, now.Add(-48*time.Hour)), fail: 1}
	p := Start(context.Background(), f, gatehouse.Retention{Ledger: 24 * time.Hour},
		slog.New(slog.NewTextHandler(io.Discard, nil)),
		Options{Interval: 30 * time.Millisecond, Now: func() time.Time { return now }})
	defer p.Stop()
	waitFor(t, "the retried pass", func() bool { g, _, _ := f.snapshot(); return len(g) == 0 })
	_, _, calls := f.snapshot()
	if len(calls) < 2 {
		t.Errorf("%d calls, want the failed one and a later one", len(calls))
	}
}

// TestDefaultInterval: a pass a minute, or a quarter of a shorter
// retention (at least a second).
func TestDefaultInterval(t *testing.T) {
	for _, tc := range []struct {
		policy gatehouse.Retention
		want   time.Duration
	}{
		{gatehouse.Retention{Ledger: 90 * 24 * time.Hour}, time.Minute},
		{gatehouse.Retention{Ledger: 90 * 24 * time.Hour, Audit: 2 * time.Minute}, 30 * time.Second},
		{gatehouse.Retention{Audit: time.Second}, time.Second},
	} {
		if got := withDefaults(Options{}, tc.policy).Interval; got != tc.want {
			t.Errorf("interval for %+v = %v, want %v", tc.policy, got, tc.want)
		}
	}
}

// deletedTotal reads gatehouse_retention_deleted_total{log} from reg.
func deletedTotal(t *testing.T, reg *prometheus.Registry, log string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "gatehouse_retention_deleted_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "log" && l.GetValue() == log {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
