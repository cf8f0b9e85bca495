package gatehouse_test

import (
	"encoding/json"
	"testing"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
)

type patchBody struct {
	Count gatehouse.Patch[int]             `json:"count"`
	Name  gatehouse.Patch[string]          `json:"name"`
	Tags  gatehouse.Patch[[]string]        `json:"tags"`
	Limit gatehouse.Patch[gatehouse.Money] `json:"limit"`
	Reset gatehouse.Patch[gatehouse.Interval]
}

func TestPatchJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want patchBody
	}{
		{`{}`, patchBody{}},
		{`{"count": null}`, patchBody{Count: gatehouse.Null[int]()}},
		{`{"count": 0}`, patchBody{Count: gatehouse.Val(0)}},
		{`{"count": 7}`, patchBody{Count: gatehouse.Val(7)}},
		{`{"name": ""}`, patchBody{Name: gatehouse.Val("")}},
		{`{"name": null, "tags": null}`, patchBody{Name: gatehouse.Null[string](), Tags: gatehouse.Null[[]string]()}},
		{`{"tags": []}`, patchBody{Tags: gatehouse.Val([]string{})}},
		{`{"tags": ["a", "b"]}`, patchBody{Tags: gatehouse.Val([]string{"a", "b"})}},
		{`{"limit": 0.1}`, patchBody{Limit: gatehouse.Val(gatehouse.Money(100_000_000))}},
		{`{"limit": null}`, patchBody{Limit: gatehouse.Null[gatehouse.Money]()}},
		{`{"Reset": "weekly"}`, patchBody{Reset: gatehouse.Val(gatehouse.Weekly)}},
		{`{"Reset": null}`, patchBody{Reset: gatehouse.Null[gatehouse.Interval]()}},
	} {
		var got patchBody
		if err := json.Unmarshal([]byte(tc.in), &got); err != nil {
			t.Errorf("json.Unmarshal(%s): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("json.Unmarshal(%s) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestPatchJSONNullClearsEarlierValue(t *testing.T) {
	got := patchBody{Count: gatehouse.Val(5)}
	if err := json.Unmarshal([]byte(`{"count": null}`), &got); err != nil {
		t.Fatal(err)
	}
	if got.Count != gatehouse.Null[int]() || got.Count.Value != 0 {
		t.Errorf("count = %+v, want Null", got.Count)
	}
	if err := json.Unmarshal([]byte(`{"count": 3}`), &got); err != nil {
		t.Fatal(err)
	}
	if got.Count != gatehouse.Val(3) {
		t.Errorf("count = %+v, want Val(3)", got.Count)
	}
}

func TestPatchJSONTypeError(t *testing.T) {
	for _, in := range []string{`{"count": "x"}`, `{"name": 1}`, `{"tags": "a"}`, `{"limit": "1"}`, `{"Reset": "yearly"}`} {
		var got patchBody
		if err := json.Unmarshal([]byte(in), &got); err == nil {
			t.Errorf("json.Unmarshal(%s) succeeded: %+v", in, got)
		}
	}
}

func TestPatchHelpers(t *testing.T) {
	if p := gatehouse.Val("x"); !p.Set || p.Null || p.Value != "x" || p.Ptr() == nil || *p.Ptr() != "x" {
		t.Errorf("Val: %+v", p)
	}
	if p := gatehouse.Null[string](); !p.Set || !p.Null || p.Ptr() != nil {
		t.Errorf("Null: %+v", p)
	}
	// Ptr returns a copy, not the Patch's own storage.
	p := gatehouse.Val(1)
	*p.Ptr() = 2
	if p.Value != 1 {
		t.Errorf("Ptr aliases the value")
	}
}
