package observe

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"gatehouse"
)

func TestSamplingDeterministicPerSession(t *testing.T) {
	const n = 2000
	kept := 0
	for i := range n {
		session := fmt.Sprintf("session-%d", i)
		first := sampled(testEvent(withSession(session)).Generation, 0.5)
		for range 3 { // other generations of the session
			if got := sampled(testEvent(withSession(session)).Generation, 0.5); got != first {
				t.Fatalf("session %s: sampled %v, then %v", session, first, got)
			}
		}
		if first {
			kept++
		}
		// The sessions kept at a rate are among those kept at a higher one.
		if sampled(testEvent(withSession(session)).Generation, 0.1) && !first {
			t.Fatalf("session %s kept at 0.1 but not at 0.5", session)
		}
	}
	if frac := float64(kept) / n; frac < 0.45 || frac > 0.55 {
		t.Errorf("rate 0.5 kept %.3f of sessions", frac)
	}
	// Without a session, the generation id decides.
	kept = 0
	for range n {
		if sampled(testEvent().Generation, 0.5) {
			kept++
		}
	}
	if frac := float64(kept) / n; frac < 0.45 || frac > 0.55 {
		t.Errorf("rate 0.5 kept %.3f of generations", frac)
	}
	if !sampled(testEvent().Generation, 1) {
		t.Error("rate 1 dropped an event")
	}
}

func TestSamplingDelivery(t *testing.T) {
	// Find a session the 0.5 rate keeps and one it drops.
	var in, out string
	for i := 0; in == "" || out == ""; i++ {
		s := fmt.Sprintf("s-%d", i)
		if sampled(testEvent(withSession(s)).Generation, 0.5) {
			in = s
		} else {
			out = s
		}
	}
	rc := newReceiver(t, nil)
	d := testDest("webhook", map[string]string{"url": rc.URL}, func(d *gatehouse.Destination) { d.SamplingRate = 0.5 })
	p, reg := start(t, newLister(d), fastOptions())
	for range 3 {
		p.Publish(testEvent(withSession(in)))
		p.Publish(testEvent(withSession(out)))
	}
	closeNow(t, p)
	if n := len(rc.got()); n != 3 {
		t.Errorf("received %d events, want the 3 of the kept session", n)
	}
	if got := metric(t, reg, "gatehouse_observability_deliveries_total", "result", "filtered"); got != 3 {
		t.Errorf("filtered = %v, want 3", got)
	}
}

func TestAPIKeyHashes(t *testing.T) {
	rc := newReceiver(t, nil)
	other := "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
	keys := func(hashes []string) func(*gatehouse.Destination) {
		return func(d *gatehouse.Destination) { d.APIKeyHashes = hashes }
	}
	p, reg := start(t, newLister(
		testDest("webhook", map[string]string{"url": rc.URL + "/all"}, keys(nil)),
		testDest("webhook", map[string]string{"url": rc.URL + "/mine"}, keys([]string{other, testKeyHash})),
		testDest("webhook", map[string]string{"url": rc.URL + "/other"}, keys([]string{other})),
		testDest("webhook", map[string]string{"url": rc.URL + "/none"}, keys([]string{})),
	), fastOptions())
	p.Publish(testEvent())
	closeNow(t, p)
	if got, want := rc.paths(), []string{"/all", "/mine"}; !slices.Equal(got, want) {
		t.Errorf("received at %v, want %v", got, want)
	}
	if got := metric(t, reg, "gatehouse_observability_deliveries_total", "result", "filtered"); got != 2 {
		t.Errorf("filtered = %v, want 2", got)
	}
}

func TestDisabledAndDeletedDestinations(t *testing.T) {
	rc := newReceiver(t, nil)
	p, reg := start(t, newLister(
		testDest("webhook", map[string]string{"url": rc.URL + "/enabled"}),
		testDest("webhook", map[string]string{"url": rc.URL + "/disabled"}, func(d *gatehouse.Destination) { d.Enabled = false }),
		testDest("webhook", map[string]string{"url": rc.URL + "/deleted"}, func(d *gatehouse.Destination) { d.DeletedAt = &t0 }),
	), fastOptions())
	p.Publish(testEvent())
	p.Publish(testEvent())
	closeNow(t, p)
	if got, want := rc.paths(), []string{"/enabled", "/enabled"}; !slices.Equal(got, want) {
		t.Errorf("received at %v, want %v", got, want)
	}
	if got := metric(t, reg, "gatehouse_observability_deliveries_total", "result", "delivered"); got != 2 {
		t.Errorf("delivered = %v, want 2", got)
	}
}

// rule is a shorthand for a condition.
func rule(field, op string, value any) gatehouse.Condition {
	return gatehouse.Condition{Field: field, Operator: op, Value: value}
}

func and(rules ...gatehouse.Condition) gatehouse.FilterRule {
	return gatehouse.FilterRule{Logic: "and", Rules: rules}
}

func or(rules ...gatehouse.Condition) gatehouse.FilterRule {
	return gatehouse.FilterRule{Logic: "or", Rules: rules}
}

func TestFilterRules(t *testing.T) {
	no := false
	groups := func(gs ...gatehouse.FilterRule) *gatehouse.FilterRules { return &gatehouse.FilterRules{Groups: gs} }
	one := func(c gatehouse.Condition) *gatehouse.FilterRules { return groups(and(c)) }
	for _, tc := range []struct {
		name  string
		rules *gatehouse.FilterRules
		want  bool
	}{
		{"no rules", nil, true},
		{"disabled rules", &gatehouse.FilterRules{Enabled: &no, Groups: []gatehouse.FilterRule{and(rule("model", "equals", "x"))}}, true},
		{"no groups", groups(), true},
		{"empty group", groups(and()), true},
		{"model equals", one(rule("model", "equals", "openai/gpt-4o-mini")), true},
		{"model equals other", one(rule("model", "equals", "openai/gpt-4o")), false},
		{"provider not_equals", one(rule("provider", "not_equals", "anthropic")), true},
		{"model contains", one(rule("model", "contains", "4o")), true},
		{"model not_contains", one(rule("model", "not_contains", "4o")), false},
		{"starts_with", one(rule("model", "starts_with", "openai/")), true},
		{"ends_with", one(rule("model", "ends_with", "-nano")), false},
		{"regex", one(rule("model", "regex", `gpt-4o-(mini|nano)$`)), true},
		{"regex anchored", one(rule("model", "regex", `^gpt`)), false},
		{"regex invalid", one(rule("model", "regex", `(`)), false},
		{"session absent exists", one(rule("session_id", "exists", nil)), false},
		{"session absent not_exists", one(rule("session_id", "not_exists", nil)), true},
		{"session absent equals", one(rule("session_id", "equals", "s")), false},
		{"session absent not_equals", one(rule("session_id", "not_equals", "s")), true},
		{"session absent not_contains", one(rule("session_id", "not_contains", "s")), true},
		{"user_id", one(rule("user_id", "equals", "user_1")), true},
		{"api_key_name", one(rule("api_key_name", "starts_with", "ci")), true},
		{"finish_reason", one(rule("finish_reason", "equals", "stop")), true},
		{"input contains", one(rule("input", "contains", "secret prompt")), true},
		{"output regex", one(rule("output", "regex", `completion$`)), true},
		{"cost gt", one(rule("total_cost", "gt", 0.0001)), true},
		{"cost lt", one(rule("total_cost", "lt", 0.0001)), false},
		{"cost gte exact", one(rule("total_cost", "gte", 0.000123)), true},
		{"cost lte exact", one(rule("total_cost", "lte", 0.000123)), true},
		{"cost equals numeric string", one(rule("total_cost", "equals", "0.000123")), true},
		{"total_tokens equals", one(rule("total_tokens", "equals", float64(46))), true},
		{"total_tokens gt numeric not textual", one(rule("total_tokens", "gt", "9")), true},
		{"prompt_tokens gt", one(rule("prompt_tokens", "gt", float64(12))), false},
		{"prompt_tokens gte", one(rule("prompt_tokens", "gte", float64(12))), true},
		{"completion_tokens lt", one(rule("completion_tokens", "lt", float64(100))), true},
		{"tokens contains as text", one(rule("total_tokens", "contains", "4")), true},
		{"string gt textual", one(rule("model", "gt", "a")), true},
		{"string lt textual", one(rule("provider", "lt", "anthropic")), false},
		{"cost exists", one(rule("total_cost", "exists", nil)), true},
		{"and all match", groups(and(rule("model", "contains", "mini"), rule("provider", "equals", "openai"))), true},
		{"and one fails", groups(and(rule("model", "contains", "mini"), rule("provider", "equals", "anthropic"))), false},
		{"or one matches", groups(or(rule("provider", "equals", "anthropic"), rule("provider", "equals", "openai"))), true},
		{"or none matches", groups(or(rule("provider", "equals", "anthropic"), rule("model", "equals", "x"))), false},
		{"empty or group", groups(or()), true},
		{"any group matches", groups(and(rule("provider", "equals", "anthropic")), or(rule("total_tokens", "lt", float64(50)))), true},
		{"no group matches", groups(and(rule("provider", "equals", "anthropic")), and(rule("total_tokens", "gt", float64(50)))), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := compileFilter(tc.rules, "dest", slog.New(slog.DiscardHandler))
			if got := f.match(testEvent()); got != tc.want {
				t.Errorf("match = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFilterRulesDelivery(t *testing.T) {
	rc := newReceiver(t, nil)
	rules := func(r *gatehouse.FilterRules) func(*gatehouse.Destination) {
		return func(d *gatehouse.Destination) { d.FilterRules = r }
	}
	expensive := &gatehouse.FilterRules{Groups: []gatehouse.FilterRule{and(rule("total_cost", "gte", 0.01))}}
	p, reg := start(t, newLister(
		testDest("webhook", map[string]string{"url": rc.URL + "/expensive"}, rules(expensive)),
		testDest("webhook", map[string]string{"url": rc.URL + "/all"}),
	), fastOptions())
	p.Publish(testEvent())
	p.Publish(testEvent(func(ev *gatehouse.TraceEvent) { ev.Generation.Cost = gatehouse.USD(1) }))
	closeNow(t, p)
	if got, want := rc.paths(), []string{"/all", "/all", "/expensive"}; !slices.Equal(got, want) {
		t.Errorf("received at %v, want %v", got, want)
	}
	if got := metric(t, reg, "gatehouse_observability_deliveries_total", "result", "filtered"); got != 1 {
		t.Errorf("filtered = %v, want 1", got)
	}
}
