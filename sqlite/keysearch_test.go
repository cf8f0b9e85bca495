package sqlite

import (
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/sqlstore"
)

// TestKeySearchPlans checks the index each shape of key search walks
// (migration 0017_key_search.sql): the wrong one still answers right, but
// reads the whole organization's keys (seconds at a million), as this
// SQLite's planner did for a member's list before the query was written
// to leave it no choice.
func TestKeySearchPlans(t *testing.T) {
	db, _ := openTestDB(t)
	member := "user_a"
	after := &gatehouse.KeyCursor{CreatedAt: time.UnixMilli(1), Hash: strings.Repeat("a", 64), Name: "n"}
	for _, tc := range []struct {
		name  string
		q     gatehouse.KeySearch
		index string
	}{
		{"list", gatehouse.KeySearch{}, "api_keys_org_list"},
		{"list, later page", gatehouse.KeySearch{After: after}, "api_keys_org_list"},
		{"a member's list", gatehouse.KeySearch{CreatorUserID: &member}, "api_keys_creator_list"},
		{"a member's list, later page", gatehouse.KeySearch{CreatorUserID: &member, After: after}, "api_keys_creator_list"},
		{"name", gatehouse.KeySearch{NamePrefix: "Prod"}, "api_keys_name_search"},
		{"name, later page", gatehouse.KeySearch{NamePrefix: "Prod", After: after}, "api_keys_name_search"},
		{"a member's name", gatehouse.KeySearch{NamePrefix: "Prod", CreatorUserID: &member}, "api_keys_creator_name"},
		{"a member's name, later page", gatehouse.KeySearch{NamePrefix: "Prod", CreatorUserID: &member, After: after}, "api_keys_creator_name"},
		{"a workspace's keys", gatehouse.KeySearch{WorkspaceID: "ws"}, "api_keys_workspace_list"},
		{"a workspace's keys, later page", gatehouse.KeySearch{WorkspaceID: "ws", After: after}, "api_keys_workspace_list"},
		{"hash", gatehouse.KeySearch{HashPrefix: "abcdef"}, "PRIMARY KEY"},
		{"a member's hash", gatehouse.KeySearch{HashPrefix: "abcdef", CreatorUserID: &member}, "PRIMARY KEY"},
	} {
		tc.q.Limit = 50
		query, args := sqlstore.KeySearchQuery(dialect{}, "org", tc.q)
		var plan []string
		rows, err := db.read.Query(`EXPLAIN QUERY PLAN SELECT hash`+query, args...)
		if err != nil {
			t.Fatal(err)
		}
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
		if !strings.Contains(got, "USING "+tc.index) && !strings.Contains(got, "USING COVERING INDEX "+tc.index) && !strings.Contains(got, "INDEX "+tc.index) ||
			strings.Contains(got, "TEMP B-TREE") {
			t.Errorf("%s: plan %q, want %s without a sort", tc.name, got, tc.index)
		}
	}
}
