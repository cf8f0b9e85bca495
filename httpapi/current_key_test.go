package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"gatehouse"
)

func TestCurrentKeyManagement(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	got := e.do("GET", "/api/v1/key", e.mgmt, nil).want(t, http.StatusOK).json(t)["data"].(map[string]any)
	want := map[string]any{
		"label": "mgmt", "limit": nil, "limit_remaining": nil, "limit_reset": nil, "include_byok_in_limit": false,
		"usage": 0.0, "usage_daily": 0.0, "usage_weekly": 0.0, "usage_monthly": 0.0,
		"byok_usage": 0.0, "byok_usage_daily": 0.0, "byok_usage_weekly": 0.0, "byok_usage_monthly": 0.0,
		"creator_user_id": nil, "expires_at": nil,
		"is_management_key": true, "is_provisioning_key": true, "is_free_tier": false,
		"organization_id": e.org.ID, "workspace_id": nil,
		"allowed_data_regions":      []any{"global", "europe", "us"},
		"free_model_daily_requests": map[string]any{"limit": 0.0, "remaining": 0.0, "used": 0.0},
		"rate_limit":                map[string]any{"requests": -1.0, "interval": "10s", "note": "deprecated"},
	}
	compareJSONObjects(t, "GET /key (management)", got, want)
}

func TestCurrentKeyRegular(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	user := e.addMember(e.mgmt, "ada@example.com")
	expires := testStart.Add(48 * time.Hour)
	hash, key := e.createKey(e.mgmt, map[string]any{
		"name": "regular", "limit": 7.5, "limit_reset": "monthly", "include_byok_in_limit": true,
		"creator_user_id": user, "expires_at": expires.Format(time.RFC3339),
	})
	if _, err := e.db.RecordUsage(context.Background(), hash, gatehouse.Money(1_250_000_000), false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.RecordUsage(context.Background(), hash, gatehouse.USD(1), true); err != nil {
		t.Fatal(err)
	}
	got := e.do("GET", "/api/v1/key", key, nil).want(t, http.StatusOK).json(t)["data"].(map[string]any)
	want := map[string]any{
		"label": "regular", "limit": 7.5, "limit_remaining": 5.25, "limit_reset": "monthly", "include_byok_in_limit": true,
		"usage": 1.25, "usage_daily": 1.25, "usage_weekly": 1.25, "usage_monthly": 1.25,
		"byok_usage": 1.0, "byok_usage_daily": 1.0, "byok_usage_weekly": 1.0, "byok_usage_monthly": 1.0,
		"creator_user_id": user, "expires_at": wireTime(expires),
		"is_management_key": false, "is_provisioning_key": false, "is_free_tier": false,
		"organization_id": e.org.ID, "workspace_id": e.workspaceIDOf(e.mgmt, "default"),
		"allowed_data_regions":      []any{"global", "europe", "us"},
		"free_model_daily_requests": map[string]any{"limit": 0.0, "remaining": 0.0, "used": 0.0},
		"rate_limit":                map[string]any{"requests": -1.0, "interval": "10s", "note": "deprecated"},
	}
	compareJSONObjects(t, "GET /key (regular)", got, want)
}

// compareJSONObjects fails unless got has exactly the fields of want with
// equal values.
func compareJSONObjects(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: field %s missing", what, k)
			continue
		}
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		if string(gj) != string(wj) {
			t.Errorf("%s: %s = %s, want %s", what, k, gj, wj)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected field %s", what, k)
		}
	}
}

// TestKeyUsagePeriods drives the clock across a midnight, a Monday and a
// month boundary and reads the counters through the API.
func TestKeyUsagePeriods(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // Wednesday 2027-03-17 10:30 UTC
	ctx := context.Background()
	hash, _ := e.createKey(e.mgmt, map[string]any{"name": "metered", "limit": 10, "limit_reset": "daily"})
	record := func(usd float64, byok bool) {
		t.Helper()
		if _, err := e.db.RecordUsage(ctx, hash, gatehouse.Money(usd*1e9), byok); err != nil {
			t.Fatal(err)
		}
	}
	type counters struct{ total, daily, weekly, monthly, byok, byokDaily, byokWeekly, byokMonthly, remaining float64 }
	expect := func(when string, want counters) {
		t.Helper()
		k := e.getKeyView(hash)
		got := counters{k.Usage, k.UsageDaily, k.UsageWeekly, k.UsageMonthly,
			k.BYOKUsage, k.BYOKUsageDaily, k.BYOKUsageWeekly, k.BYOKUsageMonthly, -1}
		if k.LimitRemaining != nil {
			got.remaining = *k.LimitRemaining
		}
		if got != want {
			t.Errorf("%s: got  %+v\nwant %+v", when, got, want)
		}
	}

	record(3, false)
	record(2, true)
	expect("start, byok excluded", counters{3, 3, 3, 3, 2, 2, 2, 2, 7})
	e.patchKeyView(hash, map[string]any{"include_byok_in_limit": true})
	expect("start, byok included", counters{3, 3, 3, 3, 2, 2, 2, 2, 5})

	// The last millisecond of Wednesday, then midnight UTC.
	e.clock.Set(time.Date(2027, 3, 17, 23, 59, 59, 999e6, time.UTC))
	expect("23:59:59.999", counters{3, 3, 3, 3, 2, 2, 2, 2, 5})
	e.clock.Set(time.Date(2027, 3, 18, 0, 0, 0, 0, time.UTC))
	expect("Thursday 00:00", counters{3, 0, 3, 3, 2, 0, 2, 2, 10})
	record(1, false)
	expect("Thursday after spend", counters{4, 1, 4, 4, 2, 0, 2, 2, 9})
	e.patchKeyView(hash, map[string]any{"include_byok_in_limit": false})
	expect("Thursday, byok excluded", counters{4, 1, 4, 4, 2, 0, 2, 2, 9})

	// Weekly: the week runs Monday to Sunday.
	e.patchKeyView(hash, map[string]any{"limit_reset": "weekly", "include_byok_in_limit": true})
	expect("weekly limit", counters{4, 1, 4, 4, 2, 0, 2, 2, 4})
	e.clock.Set(time.Date(2027, 3, 21, 23, 59, 59, 999e6, time.UTC)) // Sunday
	expect("Sunday 23:59:59.999", counters{4, 0, 4, 4, 2, 0, 2, 2, 4})
	e.clock.Set(time.Date(2027, 3, 22, 0, 0, 0, 0, time.UTC)) // Monday
	expect("Monday 00:00", counters{4, 0, 0, 4, 2, 0, 0, 2, 10})
	record(11, false) // overspend: remaining never goes below zero
	expect("Monday overspend", counters{15, 11, 11, 15, 2, 0, 0, 2, 0})

	// Monthly, and all time when limit_reset is null.
	e.patchKeyView(hash, map[string]any{"limit_reset": "monthly", "limit": 20})
	expect("monthly limit", counters{15, 11, 11, 15, 2, 0, 0, 2, 3})
	e.clock.Set(time.Date(2027, 3, 28, 23, 59, 59, 999e6, time.UTC)) // Sunday
	expect("Sunday March 28", counters{15, 0, 11, 15, 2, 0, 0, 2, 3})
	e.clock.Set(time.Date(2027, 3, 31, 23, 59, 59, 999e6, time.UTC)) // Wednesday
	expect("March 31 23:59:59.999", counters{15, 0, 0, 15, 2, 0, 0, 2, 3})
	e.clock.Set(time.Date(2027, 4, 1, 0, 0, 0, 0, time.UTC))
	expect("April 1 00:00", counters{15, 0, 0, 0, 2, 0, 0, 0, 20})
	e.patchKeyView(hash, map[string]any{"limit_reset": nil})
	expect("all-time limit", counters{15, 0, 0, 0, 2, 0, 0, 0, 3})
}

func TestRejectedKeysOnCurrentKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	disabledHash, disabled := e.createKey(e.mgmt, map[string]any{"name": "off"})
	e.patchKeyView(disabledHash, map[string]any{"disabled": true})
	expires := testStart.Add(time.Hour)
	_, expiring := e.createKey(e.mgmt, map[string]any{"name": "brief", "expires_at": expires.Format(time.RFC3339)})
	deletedHash, deleted := e.createKey(e.mgmt, map[string]any{"name": "gone"})
	e.do("DELETE", "/api/v1/keys/"+deletedHash, e.mgmt, nil).want(t, http.StatusOK)

	e.clock.Set(expires.Add(-time.Millisecond))
	e.do("GET", "/api/v1/key", expiring, nil).want(t, http.StatusOK)
	e.clock.Set(expires)
	for name, key := range map[string]string{"disabled": disabled, "expired": expiring, "deleted": deleted} {
		e.unchanged(name, func() {
			res := e.do("GET", "/api/v1/key", key, nil).want(t, http.StatusUnauthorized)
			if res.errorMessage(t) == "" {
				t.Errorf("%s: empty message", name)
			}
		})
	}
	// Re-enabling the disabled key makes it work again.
	e.patchKeyView(disabledHash, map[string]any{"disabled": false})
	e.do("GET", "/api/v1/key", disabled, nil).want(t, http.StatusOK)
}
