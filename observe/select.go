package observe

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"log/slog"
	"regexp"
	"strconv"
	"strings"

	"gatehouse"
)

// target is a destination prepared for decisions: its key set and its
// compiled filter rules.
type target struct {
	dest   *gatehouse.Destination
	keys   map[string]bool // nil: every key
	filter *filter         // nil: every event
}

func newTarget(d *gatehouse.Destination, logger *slog.Logger) *target {
	t := &target{dest: d, filter: compileFilter(d.FilterRules, d.ID, logger)}
	if d.APIKeyHashes != nil {
		t.keys = make(map[string]bool, len(d.APIKeyHashes))
		for _, h := range d.APIKeyHashes {
			t.keys[h] = true
		}
	}
	return t
}

// accepts reports whether the destination receives ev: its key is listed
// (when the destination lists keys), it is sampled, and it passes the
// filter rules.
func (t *target) accepts(ev *gatehouse.TraceEvent) bool {
	if t.keys != nil && !t.keys[ev.Generation.KeyHash] {
		return false
	}
	if !sampled(ev.Generation, t.dest.SamplingRate) {
		return false
	}
	return t.filter.match(ev)
}

// sampled decides sampling deterministically: a hash of the session id, or
// of the generation id when there is none, mapped to [0, 1) and compared
// with the rate. A session is thus sampled all or nothing, the same way by
// every destination, and the sessions kept at a rate include those kept at
// any lower rate.
func sampled(g *gatehouse.Generation, rate float64) bool {
	if rate >= 1 {
		return true
	}
	return sampleKey(g) < rate
}

// sampleKey maps an event to [0, 1) with the top 53 bits of a SHA-256.
func sampleKey(g *gatehouse.Generation) float64 {
	id := g.ID
	if g.SessionID != nil && *g.SessionID != "" {
		id = *g.SessionID
	}
	sum := sha256.Sum256([]byte(id))
	return float64(binary.BigEndian.Uint64(sum[:8])>>11) / (1 << 53)
}

// filter is compiled filter rules: an event passes when any group matches.
type filter struct {
	groups []group
}

// group matches when all its conditions do ("and") or any does ("or"). A
// group without conditions matches.
type group struct {
	or    bool
	conds []cond
}

// cond is one compiled condition.
type cond struct {
	field, op string
	text      string  // the value as text
	num       float64 // the value as a number, when numeric
	numeric   bool
	re        *regexp.Regexp // for regex; nil when it does not compile
}

// compileFilter compiles filter rules; nil when they select everything:
// absent, disabled, or without groups.
func compileFilter(f *gatehouse.FilterRules, destID string, logger *slog.Logger) *filter {
	if f == nil || (f.Enabled != nil && !*f.Enabled) || len(f.Groups) == 0 {
		return nil
	}
	out := &filter{}
	for _, g := range f.Groups {
		cg := group{or: g.Logic == "or"}
		for _, c := range g.Rules {
			cc := cond{field: c.Field, op: c.Operator}
			switch v := c.Value.(type) {
			case string:
				cc.text = v
				cc.num, cc.numeric = parseNumber(v)
			case float64:
				cc.text, cc.num, cc.numeric = strconv.FormatFloat(v, 'f', -1, 64), v, true
			case int:
				cc.text, cc.num, cc.numeric = strconv.Itoa(v), float64(v), true
			case int64:
				cc.text, cc.num, cc.numeric = strconv.FormatInt(v, 10), float64(v), true
			}
			if cc.op == "regex" {
				re, err := regexp.Compile(cc.text)
				if err != nil {
					logger.Warn("observability: a filter rule's regex does not compile; it matches nothing",
						"destination_id", destID)
				}
				cc.re = re
			}
			cg.conds = append(cg.conds, cc)
		}
		out.groups = append(out.groups, cg)
	}
	return out
}

func parseNumber(s string) (float64, bool) {
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return n, err == nil
}

// match reports whether ev passes the filter; a nil filter passes all.
func (f *filter) match(ev *gatehouse.TraceEvent) bool {
	if f == nil {
		return true
	}
	for _, g := range f.groups {
		if g.match(ev) {
			return true
		}
	}
	return false
}

func (g group) match(ev *gatehouse.TraceEvent) bool {
	if len(g.conds) == 0 {
		return true
	}
	for _, c := range g.conds {
		if c.match(fieldOf(ev, c.field)) == g.or {
			return g.or
		}
	}
	return !g.or
}

// value is a field of an event: its text, and its number for numeric
// fields. An absent field (a null or empty string) has present false.
type value struct {
	text    string
	num     float64
	numeric bool
	present bool
}

func text(s string) value { return value{text: s, present: s != ""} }

func textPtr(s *string) value {
	if s == nil {
		return value{}
	}
	return text(*s)
}

func integer(n int64) value {
	return value{text: strconv.FormatInt(n, 10), num: float64(n), numeric: true, present: true}
}

// fieldOf returns a filter field of ev. user_id is the key's creator.
func fieldOf(ev *gatehouse.TraceEvent, field string) value {
	g := ev.Generation
	switch field {
	case "model":
		return text(g.Model)
	case "provider":
		return text(g.Provider)
	case "session_id":
		return textPtr(g.SessionID)
	case "user_id":
		return textPtr(ev.UserID)
	case "api_key_name":
		return text(ev.KeyName)
	case "finish_reason":
		return textPtr(g.FinishReason)
	case "input":
		return text(string(ev.Input))
	case "output":
		return text(ev.Output)
	case "total_cost":
		return value{text: g.Cost.String(), num: usd(g.Cost), numeric: true, present: true}
	case "total_tokens":
		return integer(g.PromptTokens + g.CompletionTokens)
	case "prompt_tokens":
		return integer(g.PromptTokens)
	case "completion_tokens":
		return integer(g.CompletionTokens)
	}
	return value{}
}

// usd converts money to a float of dollars, the nearest to the exact value.
func usd(m gatehouse.Money) float64 {
	f, _ := strconv.ParseFloat(m.String(), 64)
	return f
}

// match applies the condition to a field. An absent field satisfies only
// not_exists, not_equals and not_contains.
func (c cond) match(v value) bool {
	switch c.op {
	case "exists":
		return v.present
	case "not_exists":
		return !v.present
	}
	if !v.present {
		return c.op == "not_equals" || c.op == "not_contains"
	}
	switch c.op {
	case "equals":
		return c.compare(v) == 0
	case "not_equals":
		return c.compare(v) != 0
	case "gt":
		return c.compare(v) > 0
	case "lt":
		return c.compare(v) < 0
	case "gte":
		return c.compare(v) >= 0
	case "lte":
		return c.compare(v) <= 0
	case "contains":
		return strings.Contains(v.text, c.text)
	case "not_contains":
		return !strings.Contains(v.text, c.text)
	case "starts_with":
		return strings.HasPrefix(v.text, c.text)
	case "ends_with":
		return strings.HasSuffix(v.text, c.text)
	case "regex":
		return c.re != nil && c.re.MatchString(v.text)
	}
	return false
}

// compare orders the field against the value: numerically when the field
// is numeric and the value a number (or a numeric string), else as text.
func (c cond) compare(v value) int {
	if v.numeric && c.numeric {
		return cmp.Compare(v.num, c.num)
	}
	return strings.Compare(v.text, c.text)
}
