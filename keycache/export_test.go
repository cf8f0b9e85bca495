package keycache

import "time"

// SetClock replaces the clock of c, for tests that move time.
func SetClock(c *Cache, now func() time.Time) { c.now = now }
