package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// Checkpoints. In WAL mode a commit appends pages to the write-ahead log,
// and a checkpoint copies them back into the database file, with an fsync
// of the file. SQLite by default checkpoints inside the commit that takes
// the log past 1,000 pages, so one request in a few paid for copying the
// pages of the others: a bulk remove of 100 memberships took 7 ms at the
// median and over 30 ms at the 90th percentile. Here the writer connection
// never checkpoints (wal_autocheckpoint=0); a goroutine on a connection of
// its own runs passive checkpoints, which never block the writer or the
// readers, shortly after writes.

// checkpointDelay gathers the commits of a burst into one checkpoint.
const checkpointDelay = 50 * time.Millisecond

type checkpointer struct {
	conn *sql.DB
	wake chan struct{}
	stop chan struct{}
	done sync.WaitGroup
	once sync.Once
}

func newCheckpointer(conn *sql.DB) *checkpointer {
	c := &checkpointer{conn: conn, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	c.done.Add(1)
	go c.loop()
	return c
}

// written tells the checkpointer that a commit added to the log.
func (c *checkpointer) written() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *checkpointer) loop() {
	defer c.done.Done()
	for {
		select {
		case <-c.wake:
		case <-c.stop:
			return
		}
		select {
		case <-time.After(checkpointDelay):
		case <-c.stop:
			return
		}
		// A failed checkpoint loses nothing: the pages stay in the log,
		// and the next one copies them.
		var busy, logPages, copied int
		_ = c.conn.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logPages, &copied)
	}
}

// close stops the checkpointer and closes its connection. What the log
// still holds is copied by SQLite itself when the last connection to the
// file closes.
func (c *checkpointer) close() error {
	c.once.Do(func() { close(c.stop) })
	c.done.Wait()
	return c.conn.Close()
}
