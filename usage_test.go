package gatehouse_test

import (
	"testing"
	"time"

	"gatehouse"
)

// counterBoundary is the last instant of a period and the first of the next, with
// the counters that reset between them.
type counterBoundary struct {
	name             string
	before, after    time.Time
	day, week, month bool // which period counters reset at after
}

var counterBoundaries = []counterBoundary{
	{name: "midnight UTC", before: utcAt(2028, 2, 23, 23, 59, 59, 999), after: utcDay(2028, 2, 24), day: true},
	{name: "Monday", before: utcAt(2028, 2, 27, 23, 59, 59, 999), after: utcDay(2028, 2, 28), day: true, week: true},
	{name: "Jan 31 to Feb 1", before: utcAt(2028, 1, 31, 23, 59, 59, 999), after: utcDay(2028, 2, 1), day: true, month: true},
	{name: "Apr 30 to May 1", before: utcAt(2028, 4, 30, 23, 59, 59, 999), after: utcDay(2028, 5, 1), day: true, week: true, month: true},
	{name: "year end", before: utcAt(2027, 12, 31, 23, 59, 59, 999), after: utcDay(2028, 1, 1), day: true, month: true},
	{name: "week across new year ends", before: utcAt(2028, 1, 2, 23, 59, 59, 999), after: utcDay(2028, 1, 3), day: true, week: true},
	{name: "leap Feb 28 to 29", before: utcAt(2028, 2, 28, 23, 59, 59, 999), after: utcDay(2028, 2, 29), day: true},
	{name: "leap Feb 29 to Mar 1", before: utcAt(2028, 2, 29, 23, 59, 59, 999), after: utcDay(2028, 3, 1), day: true, month: true},
	{name: "common Feb 28 to Mar 1", before: utcAt(2027, 2, 28, 23, 59, 59, 999), after: utcDay(2027, 3, 1), day: true, week: true, month: true},
	{
		name:   "New York evening is the next UTC day",
		before: time.Date(2028, 2, 23, 18, 59, 59, 999e6, newYork), after: time.Date(2028, 2, 23, 19, 0, 0, 0, newYork),
		day: true,
	},
	{
		name:   "Kiritimati Monday morning is still Sunday in UTC",
		before: time.Date(2028, 1, 3, 13, 59, 59, 999e6, kiritimati), after: time.Date(2028, 1, 3, 14, 0, 0, 0, kiritimati),
		day: true, week: true,
	},
}

// usageOf builds the Usage a counter should read.
func usageOf(total, daily, weekly, monthly gatehouse.Money) gatehouse.Usage {
	return gatehouse.Usage{Total: total, Daily: daily, Weekly: weekly, Monthly: monthly}
}

// resetOr returns reset when the period resets, else kept.
func resetOr(resets bool, reset, kept gatehouse.Money) gatehouse.Money {
	if resets {
		return reset
	}
	return kept
}

func TestCounterBoundaries(t *testing.T) {
	a, b := gatehouse.Money(1_500_000_000), gatehouse.Money(250_000_000)
	for _, tc := range counterBoundaries {
		t.Run(tc.name, func(t *testing.T) {
			c := gatehouse.Counter{}.Add(tc.before, a)
			if got, want := c.At(tc.before), usageOf(a, a, a, a); got != want {
				t.Errorf("At(before) = %+v, want %+v", got, want)
			}
			// After the counterBoundary the reset periods read 0, the total stays.
			want := usageOf(a, resetOr(tc.day, 0, a), resetOr(tc.week, 0, a), resetOr(tc.month, 0, a))
			if got := c.At(tc.after); got != want {
				t.Errorf("At(after) = %+v, want %+v", got, want)
			}
			// Adding after the counterBoundary starts the new periods from the new amount.
			c = c.Add(tc.after, b)
			want = usageOf(a+b, resetOr(tc.day, b, a+b), resetOr(tc.week, b, a+b), resetOr(tc.month, b, a+b))
			if got := c.At(tc.after); got != want {
				t.Errorf("after Add: At(after) = %+v, want %+v", got, want)
			}
			if !c.DayStart.Equal(gatehouse.Daily.Start(tc.after)) || !c.WeekStart.Equal(gatehouse.Weekly.Start(tc.after)) ||
				!c.MonthStart.Equal(gatehouse.Monthly.Start(tc.after)) {
				t.Errorf("period starts %v %v %v", c.DayStart, c.WeekStart, c.MonthStart)
			}
			// One more counterBoundary later everything but the total is gone.
			later := gatehouse.Monthly.End(tc.after).Add(8 * 24 * time.Hour)
			if got, want := c.At(later), usageOf(a+b, 0, 0, 0); got != want {
				t.Errorf("At(a month later) = %+v, want %+v", got, want)
			}
		})
	}
}

func TestCounterAccumulates(t *testing.T) {
	// A week spanning the new year: Monday 2027-12-27 .. Sunday 2028-01-02.
	var c gatehouse.Counter
	steps := []struct {
		t    time.Time
		add  gatehouse.Money
		want gatehouse.Usage
	}{
		{utcAt(2027, 12, 27, 0, 0, 0, 0), 1, usageOf(1, 1, 1, 1)},
		{utcAt(2027, 12, 27, 23, 59, 59, 999), 2, usageOf(3, 3, 3, 3)},
		{utcAt(2027, 12, 28, 0, 0, 0, 0), 4, usageOf(7, 4, 7, 7)},
		{utcAt(2027, 12, 31, 23, 59, 59, 999), 8, usageOf(15, 8, 15, 15)},
		{utcAt(2028, 1, 1, 0, 0, 0, 0), 16, usageOf(31, 16, 31, 16)},
		{utcAt(2028, 1, 2, 23, 59, 59, 999), 32, usageOf(63, 32, 63, 48)},
		{utcAt(2028, 1, 3, 0, 0, 0, 0), 64, usageOf(127, 64, 64, 112)},
		{utcAt(2028, 1, 3, 0, 0, 0, 0), 0, usageOf(127, 64, 64, 112)},
		{utcAt(2028, 2, 29, 12, 0, 0, 0), 128, usageOf(255, 128, 128, 128)},
	}
	for i, s := range steps {
		c = c.Add(s.t, s.add)
		if got := c.At(s.t); got != s.want {
			t.Fatalf("step %d (%v, +%d): %+v, want %+v", i, s.t, s.add, got, s.want)
		}
	}
	var zero gatehouse.Counter
	if got := zero.At(utcAt(2028, 2, 23, 0, 0, 0, 0)); got != (gatehouse.Usage{}) {
		t.Errorf("zero counter reads %+v", got)
	}
}

// TestCounterLateCharge: a charge recorded at an instant before the periods
// the counter holds (written late, or by an instance whose clock is behind)
// counts in the total and in the periods it shares with them, and resets
// none of the newer ones: the counters stay the sums of the ledger.
func TestCounterLateCharge(t *testing.T) {
	var c gatehouse.Counter
	now := utcAt(2026, 11, 30, 0, 0, 0, 1) // a Monday, November's last day
	c = c.Add(now, 5)
	for i, s := range []struct {
		at   time.Time
		add  gatehouse.Money
		want gatehouse.Usage // read at now
	}{
		{utcAt(2026, 11, 29, 23, 59, 59, 999), 1, usageOf(6, 5, 5, 6)}, // Sunday: last week, same month
		{utcAt(2026, 10, 31, 23, 0, 0, 0), 2, usageOf(8, 5, 5, 6)},     // last month
		{now, 4, usageOf(12, 9, 9, 10)},                                // the periods still count on
	} {
		c = c.Add(s.at, s.add)
		if got := c.At(now); got != s.want {
			t.Fatalf("step %d (%v, +%d): %+v, want %+v", i, s.at, s.add, got, s.want)
		}
	}
	// Tuesday, December 1st: the day and the month start again, the week goes on.
	dec := utcAt(2026, 12, 1, 0, 0, 0, 0)
	if got, want := c.Add(dec, 8).At(dec), usageOf(20, 8, 17, 8); got != want {
		t.Fatalf("December 1st: %+v, want %+v", got, want)
	}
}

func TestUsageIn(t *testing.T) {
	u := usageOf(1, 2, 3, 4)
	for i, want := range map[gatehouse.Interval]gatehouse.Money{
		gatehouse.NoReset: 1, gatehouse.Daily: 2, gatehouse.Weekly: 3, gatehouse.Monthly: 4,
	} {
		if got := u.In(i); got != want {
			t.Errorf("In(%q) = %d, want %d", i, got, want)
		}
	}
}

func TestKeyLimitRemaining(t *testing.T) {
	now := utcAt(2028, 2, 23, 12, 0, 0, 0) // Wednesday
	var spend, byok gatehouse.Counter
	for _, r := range []struct {
		t      time.Time
		amount gatehouse.Money
		byok   bool
	}{
		{utcAt(2027, 12, 1, 0, 0, 0, 0), gatehouse.USD(32), true}, // an earlier month
		{utcAt(2028, 1, 31, 12, 0, 0, 0), gatehouse.USD(1), false},
		{utcAt(2028, 2, 15, 12, 0, 0, 0), gatehouse.USD(8), false}, // this month, last week
		{utcAt(2028, 2, 15, 12, 0, 0, 0), gatehouse.USD(64), true},
		{utcAt(2028, 2, 21, 10, 0, 0, 0), gatehouse.USD(2), false}, // this week, Monday
		{utcAt(2028, 2, 23, 9, 0, 0, 0), gatehouse.USD(4), false},  // today
		{utcAt(2028, 2, 23, 9, 0, 0, 0), gatehouse.USD(16), true},
	} {
		if r.byok {
			byok = byok.Add(r.t, r.amount)
		} else {
			spend = spend.Add(r.t, r.amount)
		}
	}
	// Spend: total 15, month 14, week 6, day 4. BYOK: total 112, month 80, week 16, day 16.
	if got, want := spend.At(now), usageOf(gatehouse.USD(15), gatehouse.USD(4), gatehouse.USD(6), gatehouse.USD(14)); got != want {
		t.Fatalf("spend = %+v, want %+v", got, want)
	}
	if got, want := byok.At(now), usageOf(gatehouse.USD(112), gatehouse.USD(16), gatehouse.USD(16), gatehouse.USD(80)); got != want {
		t.Fatalf("byok = %+v, want %+v", got, want)
	}
	lim := func(d int64) *gatehouse.Money { m := gatehouse.USD(d); return &m }
	for _, tc := range []struct {
		name  string
		limit *gatehouse.Money
		reset gatehouse.Interval
		byok  bool
		want  *gatehouse.Money // nil: no limit
	}{
		{"no limit", nil, gatehouse.NoReset, false, nil},
		{"no limit daily byok", nil, gatehouse.Daily, true, nil},
		{"all time", lim(1000), gatehouse.NoReset, false, lim(985)},
		{"all time byok", lim(1000), gatehouse.NoReset, true, lim(873)},
		{"daily", lim(1000), gatehouse.Daily, false, lim(996)},
		{"daily byok", lim(1000), gatehouse.Daily, true, lim(980)},
		{"weekly", lim(1000), gatehouse.Weekly, false, lim(994)},
		{"weekly byok", lim(1000), gatehouse.Weekly, true, lim(978)},
		{"monthly", lim(1000), gatehouse.Monthly, false, lim(986)},
		{"monthly byok", lim(1000), gatehouse.Monthly, true, lim(906)},
		{"all time exhausted", lim(10), gatehouse.NoReset, false, lim(0)},
		{"exactly spent", lim(20), gatehouse.Daily, true, lim(0)},
		{"byok pushes below zero", lim(21), gatehouse.Weekly, true, lim(0)},
		{"byok excluded keeps room", lim(21), gatehouse.Weekly, false, lim(15)},
		{"zero limit", lim(0), gatehouse.Monthly, false, lim(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &gatehouse.Key{Limit: tc.limit, LimitReset: tc.reset, IncludeBYOKInLimit: tc.byok, Usage: spend, BYOKUsage: byok}
			got := k.LimitRemaining(now)
			switch {
			case tc.want == nil && got != nil:
				t.Errorf("LimitRemaining = %s, want nil", *got)
			case tc.want != nil && got == nil:
				t.Errorf("LimitRemaining = nil, want %s", *tc.want)
			case tc.want != nil && *got != *tc.want:
				t.Errorf("LimitRemaining = %s, want %s", *got, *tc.want)
			}
		})
	}

	// A period limit comes back whole at the next counterBoundary.
	k := &gatehouse.Key{Limit: lim(10), LimitReset: gatehouse.Daily, IncludeBYOKInLimit: true, Usage: spend, BYOKUsage: byok}
	if got := k.LimitRemaining(now); *got != 0 {
		t.Errorf("today: %s, want 0", *got)
	}
	if got := k.LimitRemaining(utcDay(2028, 2, 24)); *got != gatehouse.USD(10) {
		t.Errorf("tomorrow: %s, want 10", *got)
	}
	if got := k.LimitRemaining(utcDay(2028, 2, 24).Add(-time.Millisecond)); *got != 0 {
		t.Errorf("last ms of today: %s, want 0", *got)
	}
}

func TestKeyActive(t *testing.T) {
	now := utcAt(2028, 2, 23, 12, 0, 0, 0)
	past, future := now.Add(-time.Millisecond), now.Add(time.Millisecond)
	for _, tc := range []struct {
		name     string
		k        gatehouse.Key
		expired  bool
		isActive bool
	}{
		{"plain", gatehouse.Key{}, false, true},
		{"disabled", gatehouse.Key{Disabled: true}, false, false},
		{"expires later", gatehouse.Key{ExpiresAt: &future}, false, true},
		{"expires now", gatehouse.Key{ExpiresAt: &now}, true, false},
		{"expired", gatehouse.Key{ExpiresAt: &past}, true, false},
	} {
		if got := tc.k.Expired(now); got != tc.expired {
			t.Errorf("%s: Expired = %v", tc.name, got)
		}
		if got := tc.k.Active(now); got != tc.isActive {
			t.Errorf("%s: Active = %v", tc.name, got)
		}
	}
}
