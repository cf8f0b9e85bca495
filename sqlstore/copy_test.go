package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// memDB is a database in memory: both a source and a target, whose Import
// keeps the rows only when fn succeeds, as a transaction would.
type memDB struct {
	tables []Table
	rows   map[string][][]any
	// order records the tables in the order rows went in.
	order []string
	// failAfter makes the rows of a table fail after that many rows.
	failTable string
	failAfter int
}

func (db *memDB) Export(ctx context.Context, fn func(Source) error) error { return fn(db) }

func (db *memDB) Import(ctx context.Context, fn func(Target) error) error {
	tx := &memDB{tables: db.tables, rows: maps.Clone(db.rows)}
	if tx.rows == nil {
		tx.rows = map[string][][]any{}
	}
	if err := fn(tx); err != nil {
		return err
	}
	db.rows, db.order = tx.rows, tx.order
	return nil
}

func (db *memDB) Tables(ctx context.Context) ([]Table, error) { return db.tables, nil }

func (db *memDB) Empty(ctx context.Context, table string) (bool, error) {
	return len(db.rows[table]) == 0, nil
}

// Rows yields the rows of table with their values in the order of columns.
func (db *memDB) Rows(ctx context.Context, table string, columns []string) iter.Seq2[[]any, error] {
	own := byName(db.tables)[table].Columns
	return func(yield func([]any, error) bool) {
		for i, r := range db.rows[table] {
			if table == db.failTable && i == db.failAfter {
				yield(nil, errors.New("disk on fire"))
				return
			}
			out := make([]any, len(columns))
			for j, c := range columns {
				out[j] = r[slices.Index(own, c)]
			}
			if !yield(out, nil) {
				return
			}
		}
	}
}

// Insert stores rows in the order of the table's own columns.
func (db *memDB) Insert(ctx context.Context, table string, columns []string, rows iter.Seq2[[]any, error]) (int64, error) {
	db.order = append(db.order, table)
	own := byName(db.tables)[table].Columns
	var n int64
	for r, err := range rows {
		if err != nil {
			return n, err
		}
		stored := make([]any, len(own))
		for j, c := range columns {
			stored[slices.Index(own, c)] = r[j]
		}
		db.rows[table] = append(db.rows[table], stored)
		n++
	}
	return n, nil
}

// shop is a schema listed children first: line_items refers to orders and
// products, orders to customers.
func shop() []Table {
	return []Table{
		{Name: "line_items", Columns: []string{"order_id", "product_id", "qty"}, References: []string{"orders", "products"}},
		{Name: "orders", Columns: []string{"id", "customer_id", "paid"}, References: []string{"customers"}},
		{Name: "products", Columns: []string{"id", "name"}},
		{Name: "customers", Columns: []string{"id", "name", "referrer_id"}, References: []string{"customers"}},
	}
}

func shopRows() map[string][][]any {
	return map[string][][]any{
		"customers":  {{"c1", "Ada", nil}, {"c2", "Grace", "c1"}},
		"products":   {{"p1", "tea"}},
		"orders":     {{"o1", "c1", int64(1)}, {"o2", "c2", int64(0)}},
		"line_items": {{"o1", "p1", int64(3)}, {"o2", "p1", int64(1)}},
	}
}

func TestCopyParentsFirst(t *testing.T) {
	src := &memDB{tables: shop(), rows: shopRows()}
	// The target lists its columns in another order, and has one more
	// foreign key: customers refer to a product (their favourite).
	target := shop()
	target[1].Columns = []string{"paid", "id", "customer_id"}
	target[3].References = []string{"customers", "products"}
	dst := &memDB{tables: target}
	copied, err := Copy(context.Background(), src, dst)
	if err != nil {
		t.Fatal(err)
	}
	want := []Copied{{"products", 1}, {"customers", 2}, {"orders", 2}, {"line_items", 2}}
	if diff := cmp.Diff(want, copied); diff != "" {
		t.Errorf("Copy (-want +got):\n%s", diff)
	}
	if want := []string{"products", "customers", "orders", "line_items"}; !slices.Equal(dst.order, want) {
		t.Errorf("tables written in the order %v, want %v", dst.order, want)
	}
	if diff := cmp.Diff([][]any{{int64(1), "o1", "c1"}, {int64(0), "o2", "c2"}}, dst.rows["orders"]); diff != "" {
		t.Errorf("orders in the target's column order (-want +got):\n%s", diff)
	}
	for _, table := range []string{"customers", "products", "line_items"} {
		if diff := cmp.Diff(src.rows[table], dst.rows[table]); diff != "" {
			t.Errorf("%s copied (-want +got):\n%s", table, diff)
		}
	}
}

func TestCopySchemasDiffer(t *testing.T) {
	target := shop()
	target[0].Columns = []string{"order_id", "product_id", "quantity"}             // renamed column
	target[2].Columns = append(target[2].Columns, "price")                         // added column
	target = append(target[:3], Table{Name: "coupons", Columns: []string{"code"}}) // customers missing
	dst := &memDB{tables: target}
	_, err := Copy(context.Background(), &memDB{tables: shop(), rows: shopRows()}, dst)
	if err == nil {
		t.Fatal("Copy between different schemas succeeded")
	}
	for _, want := range []string{
		"table line_items: column qty is in the source database but not in the target",
		"table line_items: column quantity is in the target database but not in the source",
		"table products: column price is in the target database but not in the source",
		"table customers is in the source database but not in the target",
		"table coupons is in the target database but not in the source",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if len(dst.rows) != 0 {
		t.Errorf("rows written despite the error: %v", dst.rows)
	}
}

func TestCopyRefusesNonEmptyTarget(t *testing.T) {
	dst := &memDB{tables: shop(), rows: map[string][][]any{"products": {{"p9", "coffee"}}}}
	_, err := Copy(context.Background(), &memDB{tables: shop(), rows: shopRows()}, dst)
	if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "table products has rows") {
		t.Fatalf("Copy into a target with rows = %v, want ErrNotEmpty naming products", err)
	}
	if len(dst.order) != 0 || len(dst.rows["customers"]) != 0 {
		t.Errorf("rows written into a non-empty target: %v", dst.rows)
	}
}

func TestCopyCycle(t *testing.T) {
	tables := []Table{
		{Name: "a", Columns: []string{"id"}},
		{Name: "b", Columns: []string{"id"}, References: []string{"c", "a"}},
		{Name: "c", Columns: []string{"id"}, References: []string{"d"}},
		{Name: "d", Columns: []string{"id"}, References: []string{"b"}},
	}
	_, err := Copy(context.Background(), &memDB{tables: tables}, &memDB{tables: tables})
	if err == nil || !strings.Contains(err.Error(), "tables b → c → d → b form a cycle") {
		t.Fatalf("Copy of tables in a cycle = %v, want the cycle named", err)
	}
}

func TestCopySourceFails(t *testing.T) {
	src := &memDB{tables: shop(), rows: shopRows(), failTable: "orders", failAfter: 1}
	dst := &memDB{tables: shop()}
	_, err := Copy(context.Background(), src, dst)
	if err == nil || !strings.Contains(err.Error(), "copy orders: disk on fire") {
		t.Fatalf("Copy from a failing source = %v, want the table and the cause", err)
	}
	if len(dst.rows) != 0 {
		t.Errorf("the target kept rows of a failed copy: %v", dst.rows)
	}
}

func ExampleCopy() {
	src := &memDB{tables: shop(), rows: shopRows()}
	copied, err := Copy(context.Background(), src, &memDB{tables: shop()})
	if err != nil {
		panic(err)
	}
	for _, c := range copied {
		fmt.Println(c.Table, c.Rows)
	}
	// Output:
	// customers 2
	// orders 2
	// products 1
	// line_items 2
}
