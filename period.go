package gatehouse

import (
	"encoding/json"
	"reflect"
	"time"
)

// Interval is the reset cycle of a spending limit: daily, weekly or monthly.
// The zero value means "no reset": the limit applies to all-time spend.
type Interval string

// The reset cycles. Every period starts at midnight UTC; weeks start on Monday.
const (
	NoReset Interval = ""
	Daily   Interval = "daily"
	Weekly  Interval = "weekly"
	Monthly Interval = "monthly"
)

// Valid reports whether i is one of the known intervals or NoReset.
func (i Interval) Valid() bool {
	switch i {
	case NoReset, Daily, Weekly, Monthly:
		return true
	}
	return false
}

// ParseInterval returns the Interval named s; "" is NoReset.
func ParseInterval(s string) (Interval, bool) {
	i := Interval(s)
	return i, i.Valid()
}

// Start returns the first instant of the period of kind i that contains t:
// midnight UTC of t's day, of the Monday of t's week, or of the first of
// t's month. For NoReset it returns the zero time: all time is one period.
func (i Interval) Start(t time.Time) time.Time {
	t = t.UTC()
	y, m, d := t.Date()
	switch i {
	case Daily:
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	case Weekly:
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		return time.Date(y, m, d-back, 0, 0, 0, 0, time.UTC)
	case Monthly:
		return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Time{}
}

// End returns the first instant after the period of kind i containing t,
// which is when its counter resets. For NoReset it returns the zero time.
func (i Interval) End(t time.Time) time.Time {
	s := i.Start(t)
	switch i {
	case Daily:
		return s.AddDate(0, 0, 1)
	case Weekly:
		return s.AddDate(0, 0, 7)
	case Monthly:
		return s.AddDate(0, 1, 0)
	}
	return time.Time{}
}

// MarshalJSON encodes NoReset as null and the others as their names.
func (i Interval) MarshalJSON() ([]byte, error) {
	if i == NoReset {
		return []byte("null"), nil
	}
	return json.Marshal(string(i))
}

// UnmarshalJSON accepts null (NoReset) or one of the interval names.
// Anything else is a *json.UnmarshalTypeError so the decoder names the field.
func (i *Interval) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*i = NoReset
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil || s == "" {
		return &json.UnmarshalTypeError{Value: jsonKind(data[0]), Type: reflect.TypeFor[Interval]()}
	}
	v, ok := ParseInterval(s)
	if !ok {
		return &json.UnmarshalTypeError{Value: "string " + s, Type: reflect.TypeFor[Interval]()}
	}
	*i = v
	return nil
}
