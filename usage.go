package gatehouse

import "time"

// Counter accumulates spend in one currency bucket (ordinary or BYOK) for
// all time and for the current day, week and month. Each period total is
// stored with the start of the period it belongs to; when that period has
// passed the total reads as zero, so periods reset exactly at their
// boundaries without any background job.
type Counter struct {
	Total      Money
	Day        Money
	DayStart   time.Time
	Week       Money
	WeekStart  time.Time
	Month      Money
	MonthStart time.Time
}

// Usage is a Counter read at one instant.
type Usage struct {
	Total, Daily, Weekly, Monthly Money
}

// At returns the counter's totals as seen at now.
func (c Counter) At(now time.Time) Usage {
	u := Usage{Total: c.Total}
	if c.DayStart.Equal(Daily.Start(now)) {
		u.Daily = c.Day
	}
	if c.WeekStart.Equal(Weekly.Start(now)) {
		u.Weekly = c.Week
	}
	if c.MonthStart.Equal(Monthly.Start(now)) {
		u.Monthly = c.Month
	}
	return u
}

// Add returns the counter after recording amount at now: totals of past
// periods are dropped before the amount is added. An amount recorded at an
// instant before a period the counter already holds (a charge written late,
// or by another instance whose clock is behind) belongs to an earlier,
// closed period: it is added to the total and to none of the newer
// periods, which it must not reset either. So the counters stay the sums
// of the ledger, whose entries carry the same instants.
func (c Counter) Add(now time.Time, amount Money) Counter {
	c.Total += amount
	c.Day, c.DayStart = addIn(Daily, c.Day, c.DayStart, now, amount)
	c.Week, c.WeekStart = addIn(Weekly, c.Week, c.WeekStart, now, amount)
	c.Month, c.MonthStart = addIn(Monthly, c.Month, c.MonthStart, now, amount)
	return c
}

// addIn records amount at now in one period's total, which holds the spend
// of the period that starts at start.
func addIn(i Interval, total Money, start, now time.Time, amount Money) (Money, time.Time) {
	switch at := i.Start(now); {
	case at.Equal(start):
		return total + amount, start
	case at.Before(start):
		return total, start // a closed period's spend
	default:
		return amount, at
	}
}

// In returns the spend of u in the period of kind i: the all-time total for
// NoReset.
func (u Usage) In(i Interval) Money {
	switch i {
	case Daily:
		return u.Daily
	case Weekly:
		return u.Weekly
	case Monthly:
		return u.Monthly
	}
	return u.Total
}
