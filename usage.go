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
// periods are dropped before the amount is added.
func (c Counter) Add(now time.Time, amount Money) Counter {
	u := c.At(now)
	return Counter{
		Total:      u.Total + amount,
		Day:        u.Daily + amount,
		DayStart:   Daily.Start(now),
		Week:       u.Weekly + amount,
		WeekStart:  Weekly.Start(now),
		Month:      u.Monthly + amount,
		MonthStart: Monthly.Start(now),
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
