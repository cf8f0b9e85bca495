package sqlstore

import (
	"database/sql"
	"testing"

	"gatehouse"

	_ "modernc.org/sqlite"
)

// TestAuditWhereWholeElements: a resource id filter matches whole elements
// of an entry's resource_ids, literally: not a part of one, and not the
// comma between two (`,` JSON-quoted is `","`, which two ids enclose).
func TestAuditWhereWholeElements(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE audit_log (organization_id TEXT, resource_ids TEXT)`); err != nil {
		t.Fatal(err)
	}
	for _, ids := range []string{`["a","b"]`, `["a"]`, `["b","c","d"]`, `["x,y"]`, `["a%c"]`} {
		if _, err := db.Exec(`INSERT INTO audit_log VALUES ('org', ?)`, ids); err != nil {
			t.Fatal(err)
		}
	}
	for id, want := range map[string][]string{
		"a":   {`["a","b"]`, `["a"]`},
		"b":   {`["a","b"]`, `["b","c","d"]`},
		"c":   {`["b","c","d"]`},
		"d":   {`["b","c","d"]`},
		",":   nil,
		"x,y": {`["x,y"]`},
		"x":   nil,
		"%":   nil,
		"a%c": {`["a%c"]`},
	} {
		where, args := auditWhere("org", gatehouse.AuditFilter{ResourceID: id})
		rows, err := db.Query(`SELECT resource_ids FROM audit_log WHERE `+where+` ORDER BY rowid`, args...)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			got = append(got, s)
		}
		rows.Close()
		if len(got) != len(want) {
			t.Errorf("%q matches %v, want %v", id, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%q matches %v, want %v", id, got, want)
				break
			}
		}
	}
}
