package sqlite

import (
	"strings"
	"testing"

	"gatehouse/sqlstore"
	"gatehouse/sqlstore/plantest"
)

// TestListPlans reads the plan of every list's count and page, as the store
// runs them: each must walk an index that holds the list's filter and
// order, reading the table only for the rows of the page (by their key),
// never for a row the offset skips nor to count. A table read per skipped
// row is what made the last page of a million keys take 9 to 12 seconds.
func TestListPlans(t *testing.T) {
	db, box := openTestDB(t)
	log := &sqlstore.QueryLog{Engine: engine{db}}
	s := sqlstore.New(log, box)
	lists := append(plantest.Lists(t, s, log, sqlstore.WalkForward), plantest.Lists(t, s, log, sqlstore.WalkBackward)...)
	lists = append(lists, plantest.BlockLists(t, s, log)...)
	for _, l := range lists {
		for _, q := range l.Queries {
			plan := queryPlan(t, db, q)
			if msg := checkListPlan(plan); msg != "" {
				t.Errorf("%s: %s\n%s\nplan:\n  %s", l.Name, msg, q.Query, strings.Join(plan, "\n  "))
			}
		}
	}
}

// checkListPlan returns what is wrong with the plan of a list's count or
// page, or "". Until the page's keys are found (a count, or the page's
// co-routine), every table is read in an index that holds what the
// statement needs (COVERING INDEX; a WITHOUT ROWID table's PRIMARY KEY is
// the table itself, and covers), nothing is sorted, and there is a
// constraint on the index (a search, not a scan of it all). Then each
// row is found by its key (SEARCH), and only the page's rows are sorted.
func checkListPlan(plan []string) string {
	keysFound := false
	for _, step := range plan {
		switch {
		case step == "SCAN page":
			keysFound = true
		case strings.HasPrefix(step, "CO-ROUTINE "), step == "SCAN page_keys", strings.HasPrefix(step, "SCAN (subquery-"), step == "SCAN block":
			// the page's keys, ranked (at most a page of them); a block's
			// rows, counted (at most its size: sqlstore's rowsBefore)
		case strings.HasPrefix(step, "USE TEMP B-TREE"):
			if !keysFound {
				return "sorts the rows before the page's keys are found: " + step
			}
		case strings.HasPrefix(step, "SCAN "):
			return "reads a whole table or index: " + step
		case strings.HasPrefix(step, "SEARCH "):
			if !keysFound && !strings.Contains(step, "COVERING INDEX") && !strings.Contains(step, "PRIMARY KEY") {
				return "reads the table for each row before the page's: " + step
			}
		}
	}
	return ""
}

// queryPlan returns the steps of the plan of q.
func queryPlan(t *testing.T, db *DB, q sqlstore.LoggedQuery) []string {
	t.Helper()
	rows, err := db.read.Query(`EXPLAIN QUERY PLAN `+q.Query, q.Args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return plan
}

// TestViewIsOneSnapshot: a list's count and page, read apart in a view,
// see the same rows, whatever is written meanwhile.
func TestViewIsOneSnapshot(t *testing.T) {
	db, _ := openTestDB(t)
	plantest.CountAndPageSnapshot(t, db.Store, engine{db}.View)
}
