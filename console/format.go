package console

import (
	"html/template"
	"strings"
	"time"

	"gatehouse"
)

// funcs are the functions templates call.
var funcs = template.FuncMap{
	"asset":    assetURL,
	"usd":      usd,
	"usdPtr":   usdPtr,
	"date":     func(t time.Time) string { return t.UTC().Format("2006-01-02") },
	"datetime": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	"dateIn":   dateInput,
	"short":    func(hash string) string { return hash[:min(len(hash), 12)] },
	"idTail":   idTail,
	"count":    count,
	"field":    newField,
	"option":   func(value, label, selected string) option { return option{value, label, value == selected} },
	"role":     roleName,
	"interval": intervalName,
	"percent":  percent,
	// resetChoices are the choices of a limit's reset, for a select.
	"resetChoices": func() []option { return resets },
	"checks":       newChecks,
}

// idTail shows a generation id by its end: "gen-<seconds>-<random>" ids
// made in one second share their start, so the end tells them apart.
func idTail(id string) string {
	if len(id) <= 12 {
		return id
	}
	return "…" + id[len(id)-10:]
}

// usd shows an amount of US dollars: cents from a dollar up, up to four
// decimals below, and up to six below a cent (what a few tokens cost).
func usd(m gatehouse.Money) string {
	neg := m < 0
	if neg {
		m = -m
	}
	if m > 0 && m < 1000 {
		return "< $0.000001" // less than six decimals show
	}
	whole, frac, _ := strings.Cut(m.String(), ".")
	switch {
	case len(frac) < 2:
		frac += strings.Repeat("0", 2-len(frac))
	case m >= gatehouse.Money(gatehouse.NanosPerUSD):
		frac = frac[:2]
	case m >= gatehouse.Money(gatehouse.NanosPerUSD/100):
		frac = frac[:min(len(frac), 4)]
	default:
		frac = frac[:min(len(frac), 6)]
	}
	s := "$" + thousands(whole) + "." + frac
	if neg {
		s = "−" + s
	}
	return s
}

// usdPtr shows an optional amount; nil reads as "no limit".
func usdPtr(m *gatehouse.Money) string {
	if m == nil {
		return "no limit"
	}
	return usd(*m)
}

// thousands groups the digits of a whole number by three.
func thousands(digits string) string {
	if len(digits) <= 3 {
		return digits
	}
	head := len(digits) % 3
	var b strings.Builder
	b.WriteString(digits[:head])
	for i := head; i < len(digits); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(digits[i : i+3])
	}
	return b.String()
}

// count shows a whole number with its thousands grouped.
func count(n int64) string {
	if n < 0 {
		return "−" + count(-n)
	}
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return thousands(string(b[i:]))
}

// percent is how much of limit spent is, 0 to 100, for a meter.
func percent(spent gatehouse.Money, limit *gatehouse.Money) int {
	if limit == nil || *limit <= 0 {
		return 0
	}
	return int(min(100, spent*100 / *limit))
}

// dateInput is a date as an <input type=date> takes it, "" for none.
func dateInput(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format("2006-01-02")
}

// roleName names an organization role for people.
func roleName(role string) string {
	if role == gatehouse.RoleAdmin {
		return "admin"
	}
	return "member"
}

// intervalName names a limit's reset for people.
func intervalName(i gatehouse.Interval) string {
	if i == gatehouse.NoReset {
		return "never resets"
	}
	return "resets " + string(i)
}

// option is an <option> of a <select>.
type option struct {
	Value, Label string
	Selected     bool
}
