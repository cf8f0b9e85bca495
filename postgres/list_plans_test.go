package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/postgres/pgtest"
	"gatehouse/sqlstore"
	"gatehouse/sqlstore/plantest"
)

// TestListPlans reads the plan of every list's count and page, as the store
// runs them: each must walk an index that holds the list's filter and
// order (an Index Only Scan), reading the table only for the rows of the
// page (by their key), never for a row the offset skips nor to count. The
// test's tables are small, so the planner is told to avoid what it would
// pick for a few rows (sequential scans, bitmaps, sorts); what it picks
// then is what the indexes allow.
func TestListPlans(t *testing.T) {
	url := pgtest.NewDatabase(t)
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(context.Background(), url, box, Options{OpTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	log := &sqlstore.QueryLog{Engine: engine{db}}
	s := sqlstore.New(log, box)
	lists := append(plantest.Lists(t, s, log, sqlstore.WalkForward), plantest.Lists(t, s, log, sqlstore.WalkBackward)...)
	lists = append(lists, plantest.BlockLists(t, s, log)...)
	ctx := context.Background()
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// The visibility map set (index-only scans read no table page for
	// the rows of a vacuumed table), the statistics of the few rows.
	for _, stmt := range []string{`VACUUM ANALYZE`, `SET enable_seqscan = off`, `SET enable_bitmapscan = off`} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range lists {
		for _, q := range l.Queries {
			var out []byte
			if err := conn.QueryRow(ctx, `EXPLAIN (FORMAT JSON) `+rebind(q.Query), q.Args...).Scan(&out); err != nil {
				t.Fatalf("%s: %v\n%s", l.Name, err, q.Query)
			}
			var plans []struct{ Plan planNode }
			if err := json.Unmarshal(out, &plans); err != nil {
				t.Fatal(err)
			}
			if msg := checkListPlan(plans[0].Plan, false); msg != "" {
				t.Errorf("%s: %s\n%s\nplan: %s", l.Name, msg, q.Query, planText(plans[0].Plan, ""))
			}
		}
	}
}

// planText is a plan's nodes, one a line.
func planText(n planNode, indent string) string {
	s := "\n" + indent + n.NodeType + " " + n.IndexName + " " + n.RelationName
	for _, c := range n.Plans {
		s += planText(c, indent+"  ")
	}
	return s
}

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType     string     `json:"Node Type"`
	IndexName    string     `json:"Index Name"`
	RelationName string     `json:"Relation Name"`
	Plans        []planNode `json:"Plans"`
}

// checkListPlan returns what is wrong with a plan of a list's count or
// page, or "". Under the page's Limit (where the offset is skipped) and
// in a count, every table is read in an index that holds what the
// statement needs (Index Only Scan) and nothing is sorted; no table is
// read whole anywhere. Above the Limit, the page's rows are found by their
// keys; over tables of a few rows, which table the planner reads first
// there is noise, so that part is measured at scale instead (bench/depth.sh
// reads the last page of a million keys and of a million members).
func checkListPlan(n planNode, underLimit bool) string {
	switch n.NodeType {
	case "Seq Scan", "Bitmap Heap Scan":
		return fmt.Sprintf("reads %s whole", n.RelationName)
	case "Sort", "Incremental Sort":
		if underLimit {
			return "sorts the rows before the page's keys are found"
		}
	case "Index Scan":
		if underLimit {
			return fmt.Sprintf("reads %s for each row before the page's (%s)", n.RelationName, n.IndexName)
		}
	case "Limit":
		underLimit = true
	case "Aggregate":
		underLimit = true // a count: as strict as the page's keys
	}
	for _, c := range n.Plans {
		if msg := checkListPlan(c, underLimit); msg != "" {
			return msg
		}
	}
	return ""
}

// TestViewIsOneSnapshot: a list's count and page, read apart in a view
// (REPEATABLE READ), see the same rows, whatever is written meanwhile.
func TestViewIsOneSnapshot(t *testing.T) {
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(context.Background(), pgtest.NewDatabase(t), box, Options{OpTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	plantest.CountAndPageSnapshot(t, db.Store, engine{db}.View)
}
