package sqlstore

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// BatchValues lets the tests of other packages copy in small batches.
var BatchValues = &batchValues

// shop is a schema listed children first: line_items refers to orders and
// products, orders to customers.
func shop() []table {
	return []table{
		{name: "line_items", columns: []string{"order_id", "product_id", "qty"}, parents: []string{"orders", "products"}},
		{name: "orders", columns: []string{"id", "customer_id", "paid"}, parents: []string{"customers"}},
		{name: "products", columns: []string{"id", "name"}},
		{name: "customers", columns: []string{"id", "name"}},
	}
}

func TestParentsFirst(t *testing.T) {
	// The target lists its columns in another order, knows that paid is a
	// boolean, and has one more foreign key: customers refer to a product
	// (their favourite).
	target := shop()
	target[1].columns = []string{"paid", "id", "customer_id"}
	target[1].booleans = []string{"paid"}
	target[3].parents = []string{"products"}
	if err := compareSchemas(shop(), target); err != nil {
		t.Fatal(err)
	}
	got, err := parentsFirst(shop(), target)
	if err != nil {
		t.Fatal(err)
	}
	from := shop()
	want := []table{from[2], from[3], from[1], from[0]}
	want[2].booleans = []string{"paid"}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(table{})); diff != "" {
		t.Errorf("parentsFirst (-want +got):\n%s", diff)
	}
}

func TestCompareSchemas(t *testing.T) {
	target := shop()
	target[0].columns = []string{"order_id", "product_id", "quantity"}             // renamed column
	target[2].columns = append(target[2].columns, "price")                         // added column
	target = append(target[:3], table{name: "coupons", columns: []string{"code"}}) // customers missing
	err := compareSchemas(shop(), target)
	if err == nil {
		t.Fatal("different schemas compare equal")
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
}

func TestParentsFirstCycle(t *testing.T) {
	for _, tc := range []struct {
		tables []table
		cycle  string
	}{
		{[]table{
			{name: "a", columns: []string{"id"}},
			{name: "b", columns: []string{"id"}, parents: []string{"c", "a"}},
			{name: "c", columns: []string{"id"}, parents: []string{"d"}},
			{name: "d", columns: []string{"id"}, parents: []string{"b"}},
		}, "tables b → c → d → b form a cycle"},
		// Its rows would have to go in parents first too.
		{[]table{{name: "a", columns: []string{"id", "parent_id"}, parents: []string{"a"}}}, "tables a → a form a cycle"},
	} {
		_, err := parentsFirst(tc.tables, tc.tables)
		if err == nil || !strings.Contains(err.Error(), tc.cycle) {
			t.Errorf("parentsFirst of tables in a cycle = %v, want %q", err, tc.cycle)
		}
	}
}
