package gatehouse_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"gatehouse"
)

// utcAt returns an instant in UTC: utcAt(2028, 2, 29, 23, 59, 59, 999) is one
// millisecond before March.
func utcAt(y int, m time.Month, d, hh, mm, ss, milli int) time.Time {
	return time.Date(y, m, d, hh, mm, ss, milli*int(time.Millisecond), time.UTC)
}

// utcDay returns midnight UTC of a date.
func utcDay(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// Fixed zones, so the tests need no time zone database.
var (
	newYork    = time.FixedZone("UTC-5", -5*60*60)
	kiritimati = time.FixedZone("UTC+14", 14*60*60)
)

func TestIntervalStartEnd(t *testing.T) {
	for _, tc := range []struct {
		name       string
		i          gatehouse.Interval
		t          time.Time
		start, end time.Time
	}{
		// Days.
		{"day noon", gatehouse.Daily, utcAt(2028, 2, 23, 12, 0, 0, 0), utcDay(2028, 2, 23), utcDay(2028, 2, 24)},
		{"day last ms", gatehouse.Daily, utcAt(2028, 2, 23, 23, 59, 59, 999), utcDay(2028, 2, 23), utcDay(2028, 2, 24)},
		{"day first ms", gatehouse.Daily, utcAt(2028, 2, 24, 0, 0, 0, 0), utcDay(2028, 2, 24), utcDay(2028, 2, 25)},
		{"day last ns", gatehouse.Daily, utcDay(2028, 2, 24).Add(-time.Nanosecond), utcDay(2028, 2, 23), utcDay(2028, 2, 24)},
		{"day Jan 31", gatehouse.Daily, utcAt(2028, 1, 31, 23, 59, 59, 999), utcDay(2028, 1, 31), utcDay(2028, 2, 1)},
		{"day Apr 30", gatehouse.Daily, utcAt(2028, 4, 30, 23, 59, 59, 999), utcDay(2028, 4, 30), utcDay(2028, 5, 1)},
		{"day Dec 31", gatehouse.Daily, utcAt(2027, 12, 31, 23, 59, 59, 999), utcDay(2027, 12, 31), utcDay(2028, 1, 1)},
		{"day Jan 1", gatehouse.Daily, utcAt(2028, 1, 1, 0, 0, 0, 0), utcDay(2028, 1, 1), utcDay(2028, 1, 2)},
		{"day Feb 28 leap", gatehouse.Daily, utcAt(2028, 2, 28, 23, 59, 59, 999), utcDay(2028, 2, 28), utcDay(2028, 2, 29)},
		{"day Feb 29", gatehouse.Daily, utcAt(2028, 2, 29, 0, 0, 0, 0), utcDay(2028, 2, 29), utcDay(2028, 3, 1)},
		{"day Feb 29 last ms", gatehouse.Daily, utcAt(2028, 2, 29, 23, 59, 59, 999), utcDay(2028, 2, 29), utcDay(2028, 3, 1)},
		{"day Feb 28 common", gatehouse.Daily, utcAt(2027, 2, 28, 23, 59, 59, 999), utcDay(2027, 2, 28), utcDay(2027, 3, 1)},
		{"day Mar 1 common", gatehouse.Daily, utcAt(2027, 3, 1, 0, 0, 0, 0), utcDay(2027, 3, 1), utcDay(2027, 3, 2)},

		// Weeks run Monday 00:00 to Sunday 24:00.
		{"week Wednesday", gatehouse.Weekly, utcAt(2028, 2, 23, 12, 0, 0, 0), utcDay(2028, 2, 21), utcDay(2028, 2, 28)},
		{"week Monday first ms", gatehouse.Weekly, utcAt(2028, 2, 21, 0, 0, 0, 0), utcDay(2028, 2, 21), utcDay(2028, 2, 28)},
		{"week Sunday last ms", gatehouse.Weekly, utcAt(2028, 2, 27, 23, 59, 59, 999), utcDay(2028, 2, 21), utcDay(2028, 2, 28)},
		{"week next Monday", gatehouse.Weekly, utcAt(2028, 2, 28, 0, 0, 0, 0), utcDay(2028, 2, 28), utcDay(2028, 3, 6)},
		{"week across leap day", gatehouse.Weekly, utcAt(2028, 3, 1, 8, 0, 0, 0), utcDay(2028, 2, 28), utcDay(2028, 3, 6)},
		{"week new year Monday", gatehouse.Weekly, utcAt(2027, 12, 27, 0, 0, 0, 0), utcDay(2027, 12, 27), utcDay(2028, 1, 3)},
		{"week new year Dec 31", gatehouse.Weekly, utcAt(2027, 12, 31, 23, 59, 59, 999), utcDay(2027, 12, 27), utcDay(2028, 1, 3)},
		{"week new year Jan 1", gatehouse.Weekly, utcAt(2028, 1, 1, 0, 0, 0, 0), utcDay(2027, 12, 27), utcDay(2028, 1, 3)},
		{"week new year Sunday", gatehouse.Weekly, utcAt(2028, 1, 2, 23, 59, 59, 999), utcDay(2027, 12, 27), utcDay(2028, 1, 3)},
		{"week after new year", gatehouse.Weekly, utcAt(2028, 1, 3, 0, 0, 0, 0), utcDay(2028, 1, 3), utcDay(2028, 1, 10)},
		{"week Apr 30 Sunday", gatehouse.Weekly, utcAt(2028, 4, 30, 23, 59, 59, 999), utcDay(2028, 4, 24), utcDay(2028, 5, 1)},
		{"week common Feb", gatehouse.Weekly, utcAt(2027, 2, 28, 23, 59, 59, 999), utcDay(2027, 2, 22), utcDay(2027, 3, 1)},

		// Months.
		{"month Jan 31", gatehouse.Monthly, utcAt(2028, 1, 31, 23, 59, 59, 999), utcDay(2028, 1, 1), utcDay(2028, 2, 1)},
		{"month Feb 1", gatehouse.Monthly, utcAt(2028, 2, 1, 0, 0, 0, 0), utcDay(2028, 2, 1), utcDay(2028, 3, 1)},
		{"month Apr 30", gatehouse.Monthly, utcAt(2028, 4, 30, 23, 59, 59, 999), utcDay(2028, 4, 1), utcDay(2028, 5, 1)},
		{"month May 1", gatehouse.Monthly, utcAt(2028, 5, 1, 0, 0, 0, 0), utcDay(2028, 5, 1), utcDay(2028, 6, 1)},
		{"month Dec 31", gatehouse.Monthly, utcAt(2027, 12, 31, 23, 59, 59, 999), utcDay(2027, 12, 1), utcDay(2028, 1, 1)},
		{"month Jan 1", gatehouse.Monthly, utcAt(2028, 1, 1, 0, 0, 0, 0), utcDay(2028, 1, 1), utcDay(2028, 2, 1)},
		{"month leap Feb 29", gatehouse.Monthly, utcAt(2028, 2, 29, 23, 59, 59, 999), utcDay(2028, 2, 1), utcDay(2028, 3, 1)},
		{"month common Feb 28", gatehouse.Monthly, utcAt(2027, 2, 28, 23, 59, 59, 999), utcDay(2027, 2, 1), utcDay(2027, 3, 1)},
		{"month Mar 1", gatehouse.Monthly, utcAt(2028, 3, 1, 0, 0, 0, 0), utcDay(2028, 3, 1), utcDay(2028, 4, 1)},

		// Other zones are converted to UTC first.
		{"day New York evening", gatehouse.Daily, time.Date(2028, 2, 23, 19, 0, 0, 0, newYork), utcDay(2028, 2, 24), utcDay(2028, 2, 25)},
		{"day New York before", gatehouse.Daily, time.Date(2028, 2, 23, 18, 59, 59, 999e6, newYork), utcDay(2028, 2, 23), utcDay(2028, 2, 24)},
		{"day Kiritimati morning", gatehouse.Daily, time.Date(2028, 1, 1, 5, 0, 0, 0, kiritimati), utcDay(2027, 12, 31), utcDay(2028, 1, 1)},
		{"week Kiritimati Monday", gatehouse.Weekly, time.Date(2028, 1, 3, 9, 0, 0, 0, kiritimati), utcDay(2027, 12, 27), utcDay(2028, 1, 3)},
		{"week New York Sunday night", gatehouse.Weekly, time.Date(2028, 1, 2, 19, 0, 0, 0, newYork), utcDay(2028, 1, 3), utcDay(2028, 1, 10)},
		{"month New York Feb 29 evening", gatehouse.Monthly, time.Date(2028, 2, 29, 20, 0, 0, 0, newYork), utcDay(2028, 3, 1), utcDay(2028, 4, 1)},
		{"month Kiritimati Mar 1", gatehouse.Monthly, time.Date(2028, 3, 1, 10, 0, 0, 0, kiritimati), utcDay(2028, 2, 1), utcDay(2028, 3, 1)},

		// No reset: all time is one period.
		{"no reset", gatehouse.NoReset, utcAt(2028, 2, 23, 12, 0, 0, 0), time.Time{}, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start, end := tc.i.Start(tc.t), tc.i.End(tc.t)
			if !start.Equal(tc.start) || !end.Equal(tc.end) {
				t.Errorf("%s of %v: [%v, %v), want [%v, %v)", tc.i, tc.t, start, end, tc.start, tc.end)
			}
			if tc.i != gatehouse.NoReset {
				if start.Location() != time.UTC || end.Location() != time.UTC {
					t.Errorf("locations %v, %v; want UTC", start.Location(), end.Location())
				}
				if tc.t.Before(start) || !tc.t.Before(end) {
					t.Errorf("%v is not in [%v, %v)", tc.t, start, end)
				}
				// The end is the start of the next period.
				if next := tc.i.Start(end); !next.Equal(end) {
					t.Errorf("Start(End) = %v, want %v", next, end)
				}
			}
		})
	}
}

func TestIntervalParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want gatehouse.Interval
		ok   bool
	}{
		{"", gatehouse.NoReset, true},
		{"daily", gatehouse.Daily, true},
		{"weekly", gatehouse.Weekly, true},
		{"monthly", gatehouse.Monthly, true},
		{"yearly", "", false},
		{"Daily", "", false},
		{" daily", "", false},
	} {
		got, ok := gatehouse.ParseInterval(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("ParseInterval(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
		if gatehouse.Interval(tc.in).Valid() != tc.ok {
			t.Errorf("Interval(%q).Valid() = %v", tc.in, !tc.ok)
		}
	}
}

func TestIntervalJSON(t *testing.T) {
	for _, tc := range []struct {
		i    gatehouse.Interval
		json string
	}{
		{gatehouse.NoReset, "null"},
		{gatehouse.Daily, `"daily"`},
		{gatehouse.Weekly, `"weekly"`},
		{gatehouse.Monthly, `"monthly"`},
	} {
		b, err := json.Marshal(tc.i)
		if err != nil || string(b) != tc.json {
			t.Errorf("json.Marshal(%q) = %s, %v; want %s", tc.i, b, err, tc.json)
		}
		got := gatehouse.Interval("sentinel")
		if err := json.Unmarshal([]byte(tc.json), &got); err != nil || got != tc.i {
			t.Errorf("json.Unmarshal(%s) = %q, %v; want %q", tc.json, got, err, tc.i)
		}
	}
	for _, in := range []string{`"yearly"`, `""`, `"DAILY"`, `1`, `true`, `{}`, `[]`} {
		var b struct {
			Reset gatehouse.Interval `json:"limit_reset"`
		}
		err := json.Unmarshal([]byte(`{"limit_reset": `+in+`}`), &b)
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			t.Errorf("json.Unmarshal(%s) error = %v, want *json.UnmarshalTypeError", in, err)
		} else if te.Field != "limit_reset" {
			t.Errorf("json.Unmarshal(%s): Field = %q, want limit_reset", in, te.Field)
		}
	}
}
