package gatehouse_test

import (
	"gatehouse/internal/errtest"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

func refTo[T any](v T) *T { return &v }

func TestKeyCreateValidate(t *testing.T) {
	now := utcAt(2028, 2, 23, 12, 0, 0, 0)
	future, past := now.Add(time.Hour), now.Add(-time.Hour)
	long := strings.Repeat("k", 32)
	for _, tc := range []struct {
		name  string
		c     gatehouse.KeyCreate
		field string
	}{
		{"minimal", gatehouse.KeyCreate{Name: "k"}, ""},
		{"complete", gatehouse.KeyCreate{
			Name: "prod", Limit: refTo(gatehouse.USD(10)), LimitReset: gatehouse.Monthly, IncludeBYOKInLimit: true,
			ExpiresAt: &future, CreatorUserID: refTo("user_1"), WorkspaceID: "team-a",
			External: &gatehouse.ExternalKey{User: "end-user", APIKey: &long},
		}, ""},
		{"200 chars", gatehouse.KeyCreate{Name: strings.Repeat("n", 200)}, ""},
		{"200 runes", gatehouse.KeyCreate{Name: strings.Repeat("é", 200)}, ""},
		{"zero limit", gatehouse.KeyCreate{Name: "k", Limit: refTo(gatehouse.Money(0))}, ""},
		{"max limit", gatehouse.KeyCreate{Name: "k", Limit: refTo(gatehouse.MaxMoney)}, ""},
		{"external without api key", gatehouse.KeyCreate{Name: "k", External: &gatehouse.ExternalKey{User: "u"}}, ""},
		{"empty name", gatehouse.KeyCreate{}, "name"},
		{"blank name", gatehouse.KeyCreate{Name: " \t "}, "name"},
		{"201 chars", gatehouse.KeyCreate{Name: strings.Repeat("n", 201)}, "name"},
		{"201 runes", gatehouse.KeyCreate{Name: strings.Repeat("é", 201)}, "name"},
		{"negative limit", gatehouse.KeyCreate{Name: "k", Limit: refTo(gatehouse.Money(-1))}, "limit"},
		{"limit over max", gatehouse.KeyCreate{Name: "k", Limit: refTo(gatehouse.MaxMoney + 1)}, "limit"},
		{"unknown reset", gatehouse.KeyCreate{Name: "k", LimitReset: "yearly"}, "limit_reset"},
		{"expired", gatehouse.KeyCreate{Name: "k", ExpiresAt: &past}, "expires_at"},
		{"expires now", gatehouse.KeyCreate{Name: "k", ExpiresAt: &now}, "expires_at"},
		{"empty creator", gatehouse.KeyCreate{Name: "k", CreatorUserID: refTo("")}, "creator_user_id"},
		{"blank creator", gatehouse.KeyCreate{Name: "k", CreatorUserID: refTo("  ")}, "creator_user_id"},
		{"external no user", gatehouse.KeyCreate{Name: "k", External: &gatehouse.ExternalKey{}}, "external.user"},
		{"external long user", gatehouse.KeyCreate{Name: "k", External: &gatehouse.ExternalKey{User: strings.Repeat("u", 201)}}, "external.user"},
		{"external short key", gatehouse.KeyCreate{Name: "k", External: &gatehouse.ExternalKey{User: "u", APIKey: refTo(long[:31])}}, "external.api_key"},
	} {
		errtest.WantField(t, tc.name, tc.c.Validate(now), tc.field)
	}
}

func TestKeyUpdateValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		u     gatehouse.KeyUpdate
		field string
	}{
		{"empty", gatehouse.KeyUpdate{}, ""},
		{"everything", gatehouse.KeyUpdate{
			Name: gatehouse.Val("new"), Disabled: gatehouse.Val(true), IncludeBYOKInLimit: gatehouse.Val(false),
			Limit: gatehouse.Val(gatehouse.USD(5)), LimitReset: gatehouse.Val(gatehouse.Daily),
		}, ""},
		{"clear limit and reset", gatehouse.KeyUpdate{Limit: gatehouse.Null[gatehouse.Money](), LimitReset: gatehouse.Null[gatehouse.Interval]()}, ""},
		{"empty name", gatehouse.KeyUpdate{Name: gatehouse.Val("")}, "name"},
		{"null name", gatehouse.KeyUpdate{Name: gatehouse.Null[string]()}, "name"},
		{"long name", gatehouse.KeyUpdate{Name: gatehouse.Val(strings.Repeat("n", 201))}, "name"},
		{"null disabled", gatehouse.KeyUpdate{Disabled: gatehouse.Null[bool]()}, "disabled"},
		{"null include_byok_in_limit", gatehouse.KeyUpdate{IncludeBYOKInLimit: gatehouse.Null[bool]()}, "include_byok_in_limit"},
		{"negative limit", gatehouse.KeyUpdate{Limit: gatehouse.Val(gatehouse.Money(-1))}, "limit"},
		{"limit over max", gatehouse.KeyUpdate{Limit: gatehouse.Val(gatehouse.MaxMoney + 1)}, "limit"},
		{"unknown reset", gatehouse.KeyUpdate{LimitReset: gatehouse.Val(gatehouse.Interval("yearly"))}, "limit_reset"},
	} {
		errtest.WantField(t, tc.name, tc.u.Validate(), tc.field)
	}
}

func TestKeySecrets(t *testing.T) {
	for _, tc := range []struct {
		management bool
		prefix     string
	}{{false, gatehouse.KeyPrefix}, {true, gatehouse.ManagementKeyPrefix}} {
		a, b := gatehouse.NewKeySecret(tc.management), gatehouse.NewKeySecret(tc.management)
		if a == b || !strings.HasPrefix(a, tc.prefix) || len(a) != len(tc.prefix)+64 {
			t.Errorf("NewKeySecret(%v) = %q, %q", tc.management, a, b)
		}
		if h := strings.TrimPrefix(a, tc.prefix); strings.Trim(h, "0123456789abcdef") != "" {
			t.Errorf("NewKeySecret(%v) = %q: not lowercase hex", tc.management, a)
		}
		if !gatehouse.IsKeyHash(gatehouse.HashKey(a)) {
			t.Errorf("HashKey(%q) = %q is not a key hash", a, gatehouse.HashKey(a))
		}
	}
	// SHA-256 of "abc".
	if got := gatehouse.HashKey("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("HashKey(abc) = %s", got)
	}
	for _, s := range []string{"", "abc", strings.Repeat("A", 64), strings.Repeat("g", 64), strings.Repeat("a", 63), strings.Repeat("a", 65)} {
		if gatehouse.IsKeyHash(s) {
			t.Errorf("IsKeyHash(%q) = true", s)
		}
	}
}

// TestExpiryBeforeYear10000: an expiry RFC 3339 cannot write is refused on
// create and update, as one in the past is; 9999-12-31 is accepted.
func TestExpiryBeforeYear10000(t *testing.T) {
	now := utcAt(2028, 2, 23, 12, 0, 0, 0)
	last, past := utcAt(9999, 12, 31, 23, 59, 59, 0), utcAt(10000, 1, 1, 0, 0, 0, 0)
	if err := (&gatehouse.KeyCreate{Name: "k", ExpiresAt: &last}).Validate(now); err != nil {
		t.Errorf("9999-12-31: %v", err)
	}
	for _, c := range []*gatehouse.KeyCreate{{Name: "k", ExpiresAt: &past}} {
		if err := c.Validate(now); err == nil || !strings.Contains(err.Error(), "before the year 10000") {
			t.Errorf("create at year 10000: %v", err)
		}
	}
	u := gatehouse.KeyUpdate{ExpiresAt: gatehouse.Val(past)}
	if err := u.CheckExpiry(now); err == nil || !strings.Contains(err.Error(), "before the year 10000") {
		t.Errorf("update to year 10000: %v", err)
	}
}
