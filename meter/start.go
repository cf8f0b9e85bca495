package meter

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"gatehouse"
)

// Engine is what metering off the request path needs of a store: both
// engines' stores are one.
type Engine interface {
	gatehouse.UsageService
	CounterLoader
	// SetSyncMetering makes the metering writes commit synchronously
	// (GATEHOUSE_METERING_COMMIT=sync) rather than be flushed behind.
	SetSyncMetering(on bool)
}

// Owned is an engine whose database this process alone serves (SQLite,
// under its serve lock): it admits in memory, and journals the charges of
// whole answers beside the database.
type Owned interface {
	Engine
	// JournalPath is where the charges journal lives.
	JournalPath() string
}

// Shared is an engine that several instances share (PostgreSQL): the
// database admits, in batches, and each instance holds a lock that says
// it is alive, so that the others charge what it left open once it is
// gone.
type Shared interface {
	Engine
	HoldInstance(ctx context.Context) (release func(), err error)
	BatchReserves() (stop func())
	ChargeGoneInstances(ctx context.Context) (int, error)
}

// Writer is the ledger that writes metering behind the request path
// (sqlstore.Ledger is one).
type Writer interface {
	Ledger
	// LingerSettles has settles wait a moment for company before they
	// are written.
	LingerSettles()
	// UseJournal journals whole answers' charges at path, first writing
	// those a crash of the last process left there; it returns how many.
	UseJournal(ctx context.Context, path string) (int, error)
	Close(ctx context.Context) error
}

// Config is what Start needs.
type Config struct {
	Engine Engine
	// NewWriter makes the ledger; written hears which keys' usage a
	// write changed.
	NewWriter func(written func(keyHashes []string)) Writer
	// UsageChanged hears of a key whose usage was written (a cache of
	// keys drops it).
	UsageChanged func(keyHash string)
	// SyncCommit commits each metering write before it is acknowledged.
	SyncCommit bool
	Logger     *slog.Logger
}

// Plane is metering running off the request path: the ledger, and what
// admits requests in memory (the accountant on an owned database, leases
// on a shared one).
type Plane struct {
	Ledger   Ledger
	Accounts *Accountant
	Leases   *Leases
	close    func()
}

// Start starts the metering of this process. On an owned database (see
// Owned) it charges what a crash of the last process left open, writes the
// charges it journalled, and admits in memory. On a shared one the
// database admits (instances share it), the reservations of concurrent
// requests in one transaction a batch; this instance holds its instance
// lock, and charges the reservations of instances that are gone as soon
// as it sees them (and any reservation once it expires). Close writes
// what is queued, then stops.
func Start(ctx context.Context, c Config) (*Plane, error) {
	c.Engine.SetSyncMetering(c.SyncCommit)
	p := &Plane{}
	release, stopBatching := func() {}, func() {}
	shared, isShared := c.Engine.(Shared)
	if isShared {
		var err error
		if release, err = shared.HoldInstance(ctx); err != nil {
			return nil, fmt.Errorf("take this instance's lock: %w", err)
		}
		stopBatching = shared.BatchReserves()
		n, err := shared.ChargeGoneInstances(ctx)
		logCharged(ctx, c.Logger, n, err, "left open by a stopped instance")
	} else {
		n, err := c.Engine.ChargeOpen(ctx, time.Time{})
		if err != nil {
			return nil, fmt.Errorf("charge the reservations left open by the last run: %w", err)
		}
		logCharged(ctx, c.Logger, n, nil, "left open by the last run (it stopped without settling them)")
		p.Accounts = NewAccountant(c.Engine, nil)
	}
	ledger := c.NewWriter(func(hashes []string) {
		for _, h := range hashes {
			c.UsageChanged(h)
		}
	})
	// Settles wait a moment for company: on SQLite the next hold, on
	// PostgreSQL the next batch of admissions, which writes them too.
	ledger.LingerSettles()
	p.Ledger = ledger
	if owned, ok := c.Engine.(Owned); ok && !isShared {
		// This process owns the database: whole answers' charges go to a
		// journal beside it, and the ledger writes them behind.
		n, err := ledger.UseJournal(ctx, owned.JournalPath())
		if err != nil {
			ledger.Close(ctx)
			release()
			return nil, fmt.Errorf("write the charges journalled by the last run: %w", err)
		}
		if n > 0 {
			c.Logger.Warn("wrote the charges of answers the last run delivered and had not yet written to the ledger", "charges", n)
		}
	}
	sweepCtx, stopSweeping := context.WithCancel(ctx)
	if isShared {
		p.Leases = NewLeases(shared, ledger, nil)
		go sweep(sweepCtx, shared, p.Leases, c.Logger)
	}
	p.close = func() {
		stopSweeping()
		if p.Leases != nil {
			p.Leases.Close() // the ledger drops them as it closes
		}
		stopBatching() // no admission batch takes settles from the ledger any more
		closeCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := ledger.Close(closeCtx); err != nil {
			c.Logger.Error(err.Error())
		}
		release()
	}
	return p, nil
}

// Close writes what is queued, then stops metering.
func (p *Plane) Close() { p.close() }

// sweep retires this instance's leases whose life is over, every half
// lease life; charges, every second, the reservations of instances that are
// gone (and drops their leases), and every ten seconds those that expired
// open.
func sweep(ctx context.Context, db Shared, leases *Leases, logger *slog.Logger) {
	t := time.NewTicker(LeaseLife / 2)
	defer t.Stop()
	for i := 1; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		leases.Retire()
		if i%2 != 0 {
			continue
		}
		n, err := db.ChargeGoneInstances(ctx)
		logCharged(ctx, logger, n, err, "left open by a stopped instance")
		if i%20 == 0 {
			n, err := db.ChargeOpen(ctx, time.Now())
			logCharged(ctx, logger, n, err, "that expired open (their instance stopped without settling them)")
		}
	}
}

// logCharged logs the reservations a sweep charged at what they reserved,
// or why it failed (it is tried again).
func logCharged(ctx context.Context, logger *slog.Logger, n int, err error, which string) {
	if err != nil && ctx.Err() == nil {
		logger.Warn("charging reservations "+which+" failed; retrying", "error", err.Error())
	}
	if n > 0 {
		logger.Warn("charged reservations "+which+" at what they reserved", "reservations", n)
	}
}
