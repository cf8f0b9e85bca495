package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"gatehouse"
)

// testUsage checks RecordUsage and the usage periods of keys read back.
func testUsage(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"Boundaries", testUsageBoundaries},
		{"SpendAcrossAWeek", testUsageSpendAcrossAWeek},
		{"BYOKSeparate", testUsageBYOKSeparate},
		{"LimitRemaining", testUsageLimitRemaining},
		{"Invalid", testUsageInvalid},
		{"Concurrent", testUsageConcurrent},
	})
}

// usageBoundary is the last instant of a period and the first of the next,
// with the period counters that reset between them.
type usageBoundary struct {
	name             string
	before, after    time.Time
	day, week, month bool
}

// lastMilli returns the last millisecond of a UTC day.
func lastMilli(y int, m time.Month, d int) time.Time {
	return time.Date(y, m, d, 23, 59, 59, 999e6, time.UTC)
}

// midnight returns the first instant of a UTC day.
func midnight(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

var utcMinus5 = time.FixedZone("UTC-5", -5*60*60)

var usageBoundaries = []usageBoundary{
	{"midnight UTC", lastMilli(2028, 2, 23), midnight(2028, 2, 24), true, false, false},
	{"Monday", lastMilli(2028, 2, 27), midnight(2028, 2, 28), true, true, false},
	{"month end Jan 31", lastMilli(2028, 1, 31), midnight(2028, 2, 1), true, false, true},
	{"month end Apr 30", lastMilli(2028, 4, 30), midnight(2028, 5, 1), true, true, true},
	{"year end", lastMilli(2027, 12, 31), midnight(2028, 1, 1), true, false, true},
	{"week spanning the new year ends", lastMilli(2028, 1, 2), midnight(2028, 1, 3), true, true, false},
	{"leap day starts", lastMilli(2028, 2, 28), midnight(2028, 2, 29), true, false, false},
	{"leap day ends", lastMilli(2028, 2, 29), midnight(2028, 3, 1), true, false, true},
	{"common February ends", lastMilli(2027, 2, 28), midnight(2027, 3, 1), true, true, true},
	{"clock in another zone", time.Date(2028, 2, 23, 18, 59, 59, 999e6, utcMinus5), time.Date(2028, 2, 23, 19, 0, 0, 0, utcMinus5), true, false, false},
}

// testUsageBoundaries records spend just before and just after each
// boundary and reads the key back.
func testUsageBoundaries(t *testing.T, open Opener) {
	for _, b := range usageBoundaries {
		t.Run(b.name, func(t *testing.T) { testUsageBoundary(t, open, b) })
	}
}

func testUsageBoundary(t *testing.T, open Opener, b usageBoundary) {
	f := newFixture(t, open)
	f.clock.Set(b.before.Add(-time.Hour))
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	a, ab := gatehouse.Money(1_500_000_000), gatehouse.Money(700_000_001)
	f.clock.Set(b.before)
	got, err := f.store.RecordUsage(f.ctx, k.Hash, a, false)
	ok(t, err)
	wantUsage(t, "RecordUsage before", got.Usage.At(b.before), a, a, a, a)
	_, err = f.store.RecordUsage(f.ctx, k.Hash, ab, true)
	ok(t, err)
	found := f.readKey(t, k.Hash)
	wantUsage(t, "before", found.Usage.At(b.before), a, a, a, a)
	wantUsage(t, "byok before", found.BYOKUsage.At(b.before), ab, ab, ab, ab)

	// At the boundary the reset periods read 0; totals stay.
	f.clock.Set(b.after)
	found = f.readKey(t, k.Hash)
	wantUsage(t, "after", found.Usage.At(b.after), a, keepIf(b.day, 0, a), keepIf(b.week, 0, a), keepIf(b.month, 0, a))
	wantUsage(t, "byok after", found.BYOKUsage.At(b.after), ab, keepIf(b.day, 0, ab), keepIf(b.week, 0, ab), keepIf(b.month, 0, ab))

	// Spend after the boundary starts the new periods from it.
	c, cb := gatehouse.Money(250_000_000), gatehouse.Money(3)
	got, err = f.store.RecordUsage(f.ctx, k.Hash, c, false)
	ok(t, err)
	wantUsage(t, "RecordUsage after", got.Usage.At(b.after), a+c, keepIf(b.day, c, a+c), keepIf(b.week, c, a+c), keepIf(b.month, c, a+c))
	got, err = f.store.RecordUsage(f.ctx, k.Hash, cb, true)
	ok(t, err)
	wantUsage(t, "RecordUsage byok after", got.BYOKUsage.At(b.after), ab+cb, keepIf(b.day, cb, ab+cb), keepIf(b.week, cb, ab+cb), keepIf(b.month, cb, ab+cb))
	found = f.readKey(t, k.Hash)
	wantUsage(t, "after new spend", found.Usage.At(b.after), a+c, keepIf(b.day, c, a+c), keepIf(b.week, c, a+c), keepIf(b.month, c, a+c))
	wantUsage(t, "byok after new spend", found.BYOKUsage.At(b.after), ab+cb, keepIf(b.day, cb, ab+cb), keepIf(b.week, cb, ab+cb), keepIf(b.month, cb, ab+cb))

	// Much later only the totals remain.
	later := b.after.AddDate(0, 2, 0)
	f.clock.Set(later)
	found = f.readKey(t, k.Hash)
	wantUsage(t, "two months later", found.Usage.At(later), a+c, 0, 0, 0)
	wantUsage(t, "byok two months later", found.BYOKUsage.At(later), ab+cb, 0, 0, 0)
}

func testUsageSpendAcrossAWeek(t *testing.T, open Opener) {
	// Monday 2027-12-27 .. Sunday 2028-01-02 spans the new year.
	f := newFixture(t, open)
	f.clock.Set(midnight(2027, 12, 27))
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	for _, s := range []struct {
		at                            time.Time
		add                           gatehouse.Money
		total, daily, weekly, monthly gatehouse.Money
	}{
		{midnight(2027, 12, 27), 1, 1, 1, 1, 1},
		{lastMilli(2027, 12, 27), 2, 3, 3, 3, 3},
		{midnight(2027, 12, 28), 4, 7, 4, 7, 7},
		{lastMilli(2027, 12, 31), 8, 15, 8, 15, 15},
		{midnight(2028, 1, 1), 16, 31, 16, 31, 16},
		{lastMilli(2028, 1, 2), 32, 63, 32, 63, 48},
		{midnight(2028, 1, 3), 64, 127, 64, 64, 112},
	} {
		f.clock.Set(s.at)
		_, err := f.store.RecordUsage(f.ctx, k.Hash, s.add, false)
		ok(t, err)
		wantUsage(t, s.at.String(), f.readKey(t, k.Hash).Usage.At(s.at), s.total, s.daily, s.weekly, s.monthly)
	}
}

func testUsageBYOKSeparate(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	_, err := f.store.RecordUsage(f.ctx, k.Hash, gatehouse.USD(1), false)
	ok(t, err)
	_, err = f.store.RecordUsage(f.ctx, k.Hash, gatehouse.USD(2), true)
	ok(t, err)
	_, err = f.store.RecordUsage(f.ctx, k.Hash, 0, true)
	ok(t, err)
	found := f.readKey(t, k.Hash)
	now := f.clock.Now()
	wantUsage(t, "usage", found.Usage.At(now), gatehouse.USD(1), gatehouse.USD(1), gatehouse.USD(1), gatehouse.USD(1))
	wantUsage(t, "byok", found.BYOKUsage.At(now), gatehouse.USD(2), gatehouse.USD(2), gatehouse.USD(2), gatehouse.USD(2))
	// The management view and the authentication view agree.
	byHash, err := f.store.FindKeyByHash(f.ctx, k.Hash)
	ok(t, err)
	sameKey(t, "FindKeyByHash", byHash, found, now)
}

func testUsageLimitRemaining(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Limit: new(gatehouse.USD(10)), LimitReset: gatehouse.Daily})
	_, err := f.store.RecordUsage(f.ctx, k.Hash, gatehouse.USD(3), false)
	ok(t, err)
	got, err := f.store.RecordUsage(f.ctx, k.Hash, gatehouse.USD(4), true)
	ok(t, err)
	remaining := func(want gatehouse.Money) {
		t.Helper()
		found := f.readKey(t, k.Hash)
		if r := found.LimitRemaining(f.clock.Now()); r == nil || *r != want {
			t.Errorf("LimitRemaining = %v, want %s", r, want)
		}
	}
	if r := got.LimitRemaining(f.clock.Now()); r == nil || *r != gatehouse.USD(7) {
		t.Errorf("RecordUsage: LimitRemaining = %v, want 7", r)
	}
	remaining(gatehouse.USD(7)) // BYOK not counted
	_, err = f.store.UpdateKey(f.ctx, f.org.ID, k.Hash, gatehouse.KeyUpdate{IncludeBYOKInLimit: gatehouse.Val(true)})
	ok(t, err)
	remaining(gatehouse.USD(3))
	_, err = f.store.RecordUsage(f.ctx, k.Hash, gatehouse.USD(5), true)
	ok(t, err)
	remaining(0) // never below zero
	f.clock.Set(time.Date(2028, 2, 24, 0, 0, 0, 0, time.UTC))
	remaining(gatehouse.USD(10)) // a new day
	_, err = f.store.UpdateKey(f.ctx, f.org.ID, k.Hash, gatehouse.KeyUpdate{LimitReset: gatehouse.Val(gatehouse.Monthly)})
	ok(t, err)
	remaining(0) // 10 − 3 − 9 this month
	_, err = f.store.UpdateKey(f.ctx, f.org.ID, k.Hash, gatehouse.KeyUpdate{
		IncludeBYOKInLimit: gatehouse.Val(false), LimitReset: gatehouse.Null[gatehouse.Interval]()})
	ok(t, err)
	remaining(gatehouse.USD(7)) // all time, without BYOK
	_, err = f.store.UpdateKey(f.ctx, f.org.ID, k.Hash, gatehouse.KeyUpdate{Limit: gatehouse.Null[gatehouse.Money]()})
	ok(t, err)
	if r := f.readKey(t, k.Hash).LimitRemaining(f.clock.Now()); r != nil {
		t.Errorf("LimitRemaining without limit = %s, want nil", *r)
	}
}

func testUsageInvalid(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	for _, byok := range []bool{false, true} {
		_, err := f.store.RecordUsage(f.ctx, k.Hash, -1, byok)
		wantCode(t, err, gatehouse.EINVALID)
		_, err = f.store.RecordUsage(f.ctx, gatehouse.HashKey("unknown"), 1, byok)
		wantCode(t, err, gatehouse.ENOTFOUND)
	}
	found := f.readKey(t, k.Hash)
	wantUsage(t, "usage", found.Usage.At(f.clock.Now()), 0, 0, 0, 0)
	wantUsage(t, "byok", found.BYOKUsage.At(f.clock.Now()), 0, 0, 0, 0)
}

func testUsageConcurrent(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	const goroutines, calls = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*calls)
	var want, wantBYOK gatehouse.Money
	for g := range goroutines {
		for i := range calls {
			n := gatehouse.Money(g*calls + i + 1) // 1..400 nano-dollars
			if i%5 == 0 {
				wantBYOK += n
			} else {
				want += n
			}
		}
		wg.Go(func() {
			for i := range calls {
				n := gatehouse.Money(g*calls + i + 1)
				if _, err := f.store.RecordUsage(f.ctx, k.Hash, n, i%5 == 0); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("RecordUsage: %v", err)
	}
	found := f.readKey(t, k.Hash)
	now := f.clock.Now()
	wantUsage(t, "usage", found.Usage.At(now), want, want, want, want)
	wantUsage(t, "byok", found.BYOKUsage.At(now), wantBYOK, wantBYOK, wantBYOK, wantBYOK)
	if want+wantBYOK != 400*401/2 {
		t.Fatalf("test arithmetic: %d", want+wantBYOK)
	}
}

// readKey reads a regular key of the fixture's organization.
func (f *fixture) readKey(t *testing.T, hash string) *gatehouse.Key {
	t.Helper()
	k, err := f.store.FindKey(f.ctx, f.org.ID, hash)
	if err != nil {
		t.Fatalf("FindKey: %v", err)
	}
	return k
}

// wantUsage compares a usage reading.
func wantUsage(t *testing.T, what string, got gatehouse.Usage, total, daily, weekly, monthly gatehouse.Money) {
	t.Helper()
	want := gatehouse.Usage{Total: total, Daily: daily, Weekly: weekly, Monthly: monthly}
	if got != want {
		t.Errorf("%s: usage = %s, want %s", what, usageString(got), usageString(want))
	}
}

func usageString(u gatehouse.Usage) string {
	return fmt.Sprintf("{total %s day %s week %s month %s}", u.Total, u.Daily, u.Weekly, u.Monthly)
}

// keepIf returns reset when the period resets, else kept.
func keepIf(resets bool, reset, kept gatehouse.Money) gatehouse.Money {
	if resets {
		return reset
	}
	return kept
}
