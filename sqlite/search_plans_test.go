package sqlite

import (
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/sqlstore"
)

// TestLedgerAndAuditSearchPlans checks the indexes the console's pages of
// the ledger and of the audit log walk: each shape has one that yields its
// rows in the page's order (or, for a member's keys, the page's rows
// alone), so that a page costs what the first does in millions of rows.
// The wrong plan answers right, slowly: a quiet key's calls found by
// walking the whole organization's ledger took half a second at 300,000
// calls; an operation of the audit log rarely made, 1.8 s at a million
// entries.
func TestLedgerAndAuditSearchPlans(t *testing.T) {
	db, _ := openTestDB(t)
	member, key := "user_a", strings.Repeat("a", 64)
	since := time.UnixMilli(1)
	later := &gatehouse.GenerationCursor{CreatedAt: time.UnixMilli(5), ID: "gen-x"}
	day := int64(20000)
	for _, tc := range []struct {
		name   string
		q      gatehouse.GenerationSearch
		day    *int64
		index  string
		sorted string // the sort the plan may hold, "" for none
	}{
		{"everything", gatehouse.GenerationSearch{}, nil, "generations_org", ""},
		{"everything, later page", gatehouse.GenerationSearch{After: later}, nil, "generations_org", ""},
		{"a range", gatehouse.GenerationSearch{Since: &since}, nil, "generations_org", ""},
		{"a model, a day", gatehouse.GenerationSearch{Model: "m/x"}, &day, "generations_daily", "ORDER BY"},
		{"a model, a day, later page", gatehouse.GenerationSearch{Model: "m/x", After: later, Since: &since}, &day, "generations_daily", "ORDER BY"},
		{"a key", gatehouse.GenerationSearch{KeyHash: key}, nil, "generations_key", "LAST TERM OF ORDER BY"},
		{"a key, later page", gatehouse.GenerationSearch{KeyHash: key, After: later}, nil, "generations_key", "LAST TERM OF ORDER BY"},
		{"a member's keys", gatehouse.GenerationSearch{CreatorUserID: &member}, nil, "generations_key", "ORDER BY"},
		{"a member's keys, later page", gatehouse.GenerationSearch{CreatorUserID: &member, After: later, Model: "m/x"}, nil, "generations_key", "ORDER BY"},
	} {
		tc.q.Limit = 50
		query, args := sqlstore.GenerationSearchQuery("org", tc.q, tc.day)
		checkPlan(t, db, tc.name, "SELECT id"+query, args, []string{tc.index}, tc.sorted)
	}
	after := &gatehouse.AuditCursor{At: time.UnixMilli(5), ID: "x"}
	for _, tc := range []struct {
		name    string
		f       gatehouse.AuditFilter
		indexes []string
		sorted  string
	}{
		{"everything", gatehouse.AuditFilter{}, []string{"audit_log_list"}, ""},
		{"everything, later page", gatehouse.AuditFilter{After: after}, []string{"audit_log_list"}, ""},
		{"a range", gatehouse.AuditFilter{Since: &since}, []string{"audit_log_list"}, ""},
		{"an operation", gatehouse.AuditFilter{Operation: gatehouse.OpKeyCreate, After: after}, []string{"audit_log_operation"}, ""},
		{"a resource type", gatehouse.AuditFilter{ResourceType: gatehouse.ResourceKey, After: after}, []string{"audit_log_resource_type"}, ""},
		{"an actor", gatehouse.AuditFilter{Actor: member, After: after}, []string{"audit_log_actor_key", "audit_log_actor_user"}, "ORDER BY"},
	} {
		query, args := sqlstore.AuditSearchQuery("org", tc.f, 50)
		checkPlan(t, db, tc.name, query, args, tc.indexes, tc.sorted)
	}
}

// checkPlan fails unless the plan of query walks every index of indexes
// and sorts nothing but what sorted allows (the merge of a member's keys'
// or of an actor's two pages, bounded by the page).
func checkPlan(t *testing.T, db *DB, name, query string, args []any, indexes []string, sorted string) {
	t.Helper()
	rows, err := db.read.Query(`EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	rows.Close()
	got := strings.Join(plan, "; ")
	for _, index := range indexes {
		if !strings.Contains(got, "INDEX "+index+" ") {
			t.Errorf("%s: plan %q, want %s", name, got, index)
		}
	}
	for _, step := range plan {
		if strings.Contains(step, "TEMP B-TREE") && (sorted == "" || !strings.HasSuffix(step, sorted)) {
			t.Errorf("%s: plan %q sorts (%s)", name, got, step)
		}
	}
}
