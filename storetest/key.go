package storetest

import (
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"
)

// testKeys checks KeyService but for usage recording.
func testKeys(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"CreateAllFields", testKeyCreateAllFields},
		{"CreateDefaults", testKeyCreateDefaults},
		{"CreateInvalid", testKeyCreateInvalid},
		{"FindKey", testKeyFindKey},
		{"ManagementKeys", testKeyManagementKeys},
		{"EnsureManagementKey", testKeyEnsureManagementKey},
		{"FindManagementKeys", testKeyFindManagementKeys},
		{"FindKeys", testKeyFindKeys},
		{"FindKeysOrderAndCap", testKeyFindKeysOrderAndCap},
		{"Update", testKeyUpdate},
		{"UpdateInvalid", testKeyUpdateInvalid},
		{"UpdateKeepsUsage", testKeyUpdateKeepsUsage},
		{"UpdateConcurrent", testKeyUpdateConcurrent},
		{"Delete", testKeyDelete},
	})
}

func testKeyCreateAllFields(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.newMember(t, f.org.ID, "ada@example.com")
	w := f.newWorkspace(t, f.org.ID, "team-a")
	expires := f.clock.Now().Add(30 * 24 * time.Hour)
	apiKey := strings.Repeat("p", gatehouse.MinExternalKeyLength)
	for _, ref := range []string{w.ID, w.Slug} {
		f.clock.Add(time.Millisecond)
		c := gatehouse.KeyCreate{
			Name: "Production", Limit: new(gatehouse.USD(25)), LimitReset: gatehouse.Weekly, IncludeBYOKInLimit: true,
			ExpiresAt: &expires, CreatorUserID: &m.ID, WorkspaceID: ref,
			External: &gatehouse.ExternalKey{User: "end-user-42", APIKey: &apiKey},
		}
		k, plaintext, err := f.store.CreateKey(f.ctx, f.org.ID, c)
		ok(t, err)
		checkPlaintext(t, plaintext, gatehouse.KeyPrefix, k.Hash)
		want := &gatehouse.Key{
			Hash: k.Hash, OrganizationID: f.org.ID, WorkspaceID: w.ID, Name: "Production",
			Limit: new(gatehouse.USD(25)), LimitReset: gatehouse.Weekly, IncludeBYOKInLimit: true,
			CreatorUserID: &m.ID, ExternalUser: strp("end-user-42"), CreatedAt: f.clock.Now(), ExpiresAt: &expires,
		}
		sameKey(t, "CreateKey", k, want, f.clock.Now())
		got, err := f.store.FindKey(f.ctx, f.org.ID, k.Hash)
		ok(t, err)
		sameKey(t, "FindKey", got, want, f.clock.Now())
		got, err = f.store.FindKeyByHash(f.ctx, gatehouse.HashKey(plaintext))
		ok(t, err)
		sameKey(t, "FindKeyByHash", got, want, f.clock.Now())
		if r := got.LimitRemaining(f.clock.Now()); r == nil || *r != gatehouse.USD(25) {
			t.Errorf("LimitRemaining = %v, want 25", r)
		}
	}
}

func testKeyCreateDefaults(t *testing.T, open Opener) {
	f := newFixture(t, open)
	def, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	k, plaintext, err := f.store.CreateKey(f.ctx, f.org.ID, gatehouse.KeyCreate{Name: "k"})
	ok(t, err)
	checkPlaintext(t, plaintext, gatehouse.KeyPrefix, k.Hash)
	want := &gatehouse.Key{Hash: k.Hash, OrganizationID: f.org.ID, WorkspaceID: def.ID, Name: "k", CreatedAt: f.clock.Now()}
	sameKey(t, "CreateKey", k, want, f.clock.Now())
	got, err := f.store.FindKey(f.ctx, f.org.ID, k.Hash)
	ok(t, err)
	sameKey(t, "FindKey", got, want, f.clock.Now())
	if got.LimitRemaining(f.clock.Now()) != nil || !got.Active(f.clock.Now()) {
		t.Errorf("a new key without limit: remaining %v, active %v", got.LimitRemaining(f.clock.Now()), got.Active(f.clock.Now()))
	}
	// Every key is new.
	k2, plaintext2, err := f.store.CreateKey(f.ctx, f.org.ID, gatehouse.KeyCreate{Name: "k"})
	ok(t, err)
	if k2.Hash == k.Hash || plaintext2 == plaintext {
		t.Errorf("two keys share a value")
	}
	// The longest name, in runes.
	long := strings.Repeat("é", gatehouse.MaxNameLength)
	k3, _, err := f.store.CreateKey(f.ctx, f.org.ID, gatehouse.KeyCreate{Name: long})
	ok(t, err)
	if got, err := f.store.FindKey(f.ctx, f.org.ID, k3.Hash); err != nil || got.Name != long {
		t.Errorf("FindKey: name %q, %v", got.Name, err)
	}
}

func testKeyCreateInvalid(t *testing.T, open Opener) {
	f := newFixture(t, open)
	other := f.newOrg(t, "Other")
	stranger := f.newMember(t, other.ID, "stranger@example.com")
	now := f.clock.Now()
	past := now.Add(-time.Second)
	short := strings.Repeat("p", gatehouse.MinExternalKeyLength-1)
	for _, tc := range []struct {
		name string
		c    gatehouse.KeyCreate
		code string
	}{
		{"empty name", gatehouse.KeyCreate{}, gatehouse.EINVALID},
		{"blank name", gatehouse.KeyCreate{Name: "  "}, gatehouse.EINVALID},
		{"201-char name", gatehouse.KeyCreate{Name: strings.Repeat("n", gatehouse.MaxNameLength+1)}, gatehouse.EINVALID},
		{"negative limit", gatehouse.KeyCreate{Name: "k", Limit: new(gatehouse.Money(-1))}, gatehouse.EINVALID},
		{"limit too large", gatehouse.KeyCreate{Name: "k", Limit: new(gatehouse.MaxMoney + 1)}, gatehouse.EINVALID},
		{"unknown limit_reset", gatehouse.KeyCreate{Name: "k", LimitReset: "yearly"}, gatehouse.EINVALID},
		{"expires in the past", gatehouse.KeyCreate{Name: "k", ExpiresAt: &past}, gatehouse.EINVALID},
		{"expires now", gatehouse.KeyCreate{Name: "k", ExpiresAt: &now}, gatehouse.EINVALID},
		{"creator not a member", gatehouse.KeyCreate{Name: "k", CreatorUserID: strp("user_nobody")}, gatehouse.EINVALID},
		{"creator of another org", gatehouse.KeyCreate{Name: "k", CreatorUserID: &stranger.ID}, gatehouse.EINVALID},
		{"empty creator", gatehouse.KeyCreate{Name: "k", CreatorUserID: strp("")}, gatehouse.EINVALID},
		{"external without user", gatehouse.KeyCreate{Name: "k", External: &gatehouse.ExternalKey{}}, gatehouse.EINVALID},
		{"external short api_key", gatehouse.KeyCreate{Name: "k", External: &gatehouse.ExternalKey{User: "u", APIKey: &short}}, gatehouse.EINVALID},
		{"unknown workspace slug", gatehouse.KeyCreate{Name: "k", WorkspaceID: "no-such-team"}, gatehouse.ENOTFOUND},
		{"unknown workspace id", gatehouse.KeyCreate{Name: "k", WorkspaceID: "6f1c1b7e-0000-4000-8000-000000000000"}, gatehouse.ENOTFOUND},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := f.store.CreateKey(f.ctx, f.org.ID, tc.c)
			wantCode(t, err, tc.code)
		})
	}
	keys, err := f.store.FindKeys(f.ctx, f.org.ID, gatehouse.KeyFilter{IncludeDisabled: true})
	ok(t, err)
	if len(keys) != 0 {
		t.Errorf("failed creates left keys: %v", keyHashes(keys))
	}
}

func testKeyFindKey(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	other := f.newOrg(t, "Other")
	_, err := f.store.FindKey(f.ctx, other.ID, k.Hash)
	wantCode(t, err, gatehouse.ENOTFOUND)
	for _, hash := range []string{"", "nope", gatehouse.HashKey("sk-gh-v1-unknown"), strings.ToUpper(k.Hash)} {
		_, err = f.store.FindKey(f.ctx, f.org.ID, hash)
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, err = f.store.FindKeyByHash(f.ctx, hash)
		wantCode(t, err, gatehouse.ENOTFOUND)
	}
	// FindKeyByHash returns keys whatever their state.
	_, err = f.store.UpdateKey(f.ctx, f.org.ID, k.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)})
	ok(t, err)
	got, err := f.store.FindKeyByHash(f.ctx, k.Hash)
	ok(t, err)
	if !got.Disabled || got.OrganizationID != f.org.ID {
		t.Errorf("FindKeyByHash = %s", keyString(got, f.clock.Now()))
	}
}

func testKeyFindKeys(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.newWorkspace(t, f.org.ID, "team-a")
	var all []*gatehouse.Key
	for i := range 5 {
		f.clock.Add(time.Millisecond)
		all = append(all, f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: fmt.Sprintf("k%d", i)}))
	}
	f.clock.Add(time.Millisecond)
	inW := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "in team-a", WorkspaceID: w.ID})
	all = append(all, inW)
	_, err := f.store.UpdateKey(f.ctx, f.org.ID, all[1].Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)})
	ok(t, err)
	_, _, err = f.store.CreateManagementKey(f.ctx, f.org.ID, "")
	ok(t, err)
	other := f.newOrg(t, "Other")
	f.newKey(t, other.ID, gatehouse.KeyCreate{})

	enabled := []*gatehouse.Key{all[0], all[2], all[3], all[4], inW}
	for _, tc := range []struct {
		name   string
		filter gatehouse.KeyFilter
		want   []*gatehouse.Key
	}{
		{"enabled", gatehouse.KeyFilter{}, enabled},
		{"include disabled", gatehouse.KeyFilter{IncludeDisabled: true}, all},
		{"offset", gatehouse.KeyFilter{Offset: 2}, enabled[2:]},
		{"offset with disabled", gatehouse.KeyFilter{Offset: 2, IncludeDisabled: true}, all[2:]},
		{"offset past the end", gatehouse.KeyFilter{Offset: 6}, nil},
		{"limit", gatehouse.KeyFilter{Limit: 2}, enabled[:2]},
		{"limit and offset", gatehouse.KeyFilter{Limit: 2, Offset: 1, IncludeDisabled: true}, all[1:3]},
		{"workspace by id", gatehouse.KeyFilter{WorkspaceID: w.ID}, []*gatehouse.Key{inW}},
		{"workspace by slug", gatehouse.KeyFilter{WorkspaceID: "team-a"}, []*gatehouse.Key{inW}},
		{"default workspace by slug", gatehouse.KeyFilter{WorkspaceID: gatehouse.DefaultWorkspaceSlug}, []*gatehouse.Key{all[0], all[2], all[3], all[4]}},
		{"default workspace with disabled", gatehouse.KeyFilter{WorkspaceID: gatehouse.DefaultWorkspaceSlug, IncludeDisabled: true}, all[:5]},
	} {
		got, err := f.store.FindKeys(f.ctx, f.org.ID, tc.filter)
		ok(t, err)
		if g, w := keyHashes(got), keyHashes(tc.want); strings.Join(g, ",") != strings.Join(w, ",") {
			t.Errorf("%s: FindKeys = %v, want %v", tc.name, g, w)
		}
	}
	// Listed keys carry all their fields.
	got, err := f.store.FindKeys(f.ctx, f.org.ID, gatehouse.KeyFilter{WorkspaceID: w.ID})
	ok(t, err)
	sameKey(t, "listed key", got[0], inW, f.clock.Now())

	_, err = f.store.FindKeys(f.ctx, f.org.ID, gatehouse.KeyFilter{WorkspaceID: "no-such-team"})
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.FindKeys(f.ctx, f.org.ID, gatehouse.KeyFilter{WorkspaceID: "6f1c1b7e-0000-4000-8000-000000000000"})
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testKeyFindKeysOrderAndCap(t *testing.T, open Opener) {
	f := newFixture(t, open)
	// Keys created at one instant are ordered by hash.
	var want []string
	for range 105 {
		want = append(want, f.newKey(t, f.org.ID, gatehouse.KeyCreate{}).Hash)
	}
	sort.Strings(want)
	for _, tc := range []struct {
		filter   gatehouse.KeyFilter
		from, to int
	}{
		{gatehouse.KeyFilter{}, 0, 100},
		{gatehouse.KeyFilter{Limit: 500}, 0, 100},
		{gatehouse.KeyFilter{Offset: 50}, 50, 105},
		{gatehouse.KeyFilter{Offset: 100}, 100, 105},
		{gatehouse.KeyFilter{Offset: 3, Limit: 4}, 3, 7},
	} {
		got, err := f.store.FindKeys(f.ctx, f.org.ID, tc.filter)
		ok(t, err)
		if g, w := strings.Join(keyHashes(got), ","), strings.Join(want[tc.from:tc.to], ","); g != w {
			t.Errorf("FindKeys(%+v): %d keys, want keys %d..%d in hash order", tc.filter, len(got), tc.from, tc.to)
		}
	}
	// A later key comes last although its hash may sort first.
	f.clock.Add(time.Millisecond)
	late := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	got, err := f.store.FindKeys(f.ctx, f.org.ID, gatehouse.KeyFilter{Offset: 100})
	ok(t, err)
	if len(got) != 6 || got[5].Hash != late.Hash {
		t.Errorf("FindKeys(offset 100) = %v, want the late key last", keyHashes(got))
	}
}

func testKeyUpdate(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "before"})
	want := *k
	expiry := f.clock.Now().Add(90 * 24 * time.Hour)
	steps := []struct {
		name   string
		update gatehouse.KeyUpdate
		apply  func(k *gatehouse.Key)
	}{
		{"name", gatehouse.KeyUpdate{Name: gatehouse.Val("after")}, func(k *gatehouse.Key) { k.Name = "after" }},
		{"disable", gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)}, func(k *gatehouse.Key) { k.Disabled = true }},
		{"enable", gatehouse.KeyUpdate{Disabled: gatehouse.Val(false)}, func(k *gatehouse.Key) { k.Disabled = false }},
		{"include byok", gatehouse.KeyUpdate{IncludeBYOKInLimit: gatehouse.Val(true)}, func(k *gatehouse.Key) { k.IncludeBYOKInLimit = true }},
		{"limit", gatehouse.KeyUpdate{Limit: gatehouse.Val(gatehouse.USD(5))}, func(k *gatehouse.Key) { k.Limit = new(gatehouse.USD(5)) }},
		{"zero limit", gatehouse.KeyUpdate{Limit: gatehouse.Val(gatehouse.Money(0))}, func(k *gatehouse.Key) { k.Limit = new(gatehouse.Money(0)) }},
		{"limit_reset", gatehouse.KeyUpdate{LimitReset: gatehouse.Val(gatehouse.Daily)}, func(k *gatehouse.Key) { k.LimitReset = gatehouse.Daily }},
		{"empty", gatehouse.KeyUpdate{}, func(k *gatehouse.Key) {}},
		{"clear limit", gatehouse.KeyUpdate{Limit: gatehouse.Null[gatehouse.Money]()}, func(k *gatehouse.Key) { k.Limit = nil }},
		{"clear limit_reset", gatehouse.KeyUpdate{LimitReset: gatehouse.Null[gatehouse.Interval]()}, func(k *gatehouse.Key) { k.LimitReset = gatehouse.NoReset }},
		{"expiry", gatehouse.KeyUpdate{ExpiresAt: gatehouse.Val(expiry)}, func(k *gatehouse.Key) { k.ExpiresAt = &expiry }},
		{"clear expiry", gatehouse.KeyUpdate{ExpiresAt: gatehouse.Null[time.Time]()}, func(k *gatehouse.Key) { k.ExpiresAt = nil }},
		{"everything", gatehouse.KeyUpdate{
			Name: gatehouse.Val("last"), Disabled: gatehouse.Val(true), IncludeBYOKInLimit: gatehouse.Val(false),
			Limit: gatehouse.Val(gatehouse.USD(9)), LimitReset: gatehouse.Val(gatehouse.Monthly),
		}, func(k *gatehouse.Key) {
			k.Name, k.Disabled, k.IncludeBYOKInLimit, k.Limit, k.LimitReset = "last", true, false, new(gatehouse.USD(9)), gatehouse.Monthly
		}},
	}
	for _, s := range steps {
		f.clock.Add(time.Second)
		got, err := f.store.UpdateKey(f.ctx, f.org.ID, k.Hash, s.update)
		ok(t, err)
		s.apply(&want)
		now := f.clock.Now()
		if s.update != (gatehouse.KeyUpdate{}) { // {} changes nothing, not even updated_at
			want.UpdatedAt = &now
		}
		sameKey(t, s.name+": UpdateKey", got, &want, now)
		found, err := f.store.FindKey(f.ctx, f.org.ID, k.Hash)
		ok(t, err)
		sameKey(t, s.name+": FindKey", found, &want, now)
	}
}

func testKeyUpdateInvalid(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "k", Limit: new(gatehouse.USD(1))})
	for _, tc := range []struct {
		name   string
		update gatehouse.KeyUpdate
	}{
		{"empty name", gatehouse.KeyUpdate{Name: gatehouse.Val("")}},
		{"null name", gatehouse.KeyUpdate{Name: gatehouse.Null[string]()}},
		{"201-char name", gatehouse.KeyUpdate{Name: gatehouse.Val(strings.Repeat("n", gatehouse.MaxNameLength+1))}},
		{"null disabled", gatehouse.KeyUpdate{Disabled: gatehouse.Null[bool]()}},
		{"negative limit", gatehouse.KeyUpdate{Limit: gatehouse.Val(gatehouse.Money(-1))}},
		{"limit too large", gatehouse.KeyUpdate{Limit: gatehouse.Val(gatehouse.MaxMoney + 1)}},
		{"unknown limit_reset", gatehouse.KeyUpdate{LimitReset: gatehouse.Val(gatehouse.Interval("yearly"))}},
		{"valid name, bad limit", gatehouse.KeyUpdate{Name: gatehouse.Val("new"), Limit: gatehouse.Val(gatehouse.Money(-5))}},
		{"expiry now", gatehouse.KeyUpdate{ExpiresAt: gatehouse.Val(f.clock.Now())}},
		{"valid name, past expiry", gatehouse.KeyUpdate{Name: gatehouse.Val("new"), ExpiresAt: gatehouse.Val(f.clock.Now().Add(-time.Hour))}},
	} {
		_, err := f.store.UpdateKey(f.ctx, f.org.ID, k.Hash, tc.update)
		if gatehouse.ErrorCode(err) != gatehouse.EINVALID {
			t.Errorf("%s: error %v, want %s", tc.name, err, gatehouse.EINVALID)
		}
	}
	got, err := f.store.FindKey(f.ctx, f.org.ID, k.Hash)
	ok(t, err)
	sameKey(t, "after failed updates", got, k, f.clock.Now())

	_, err = f.store.UpdateKey(f.ctx, f.org.ID, gatehouse.HashKey("unknown"), gatehouse.KeyUpdate{})
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.UpdateKey(f.ctx, f.newOrg(t, "Other").ID, k.Hash, gatehouse.KeyUpdate{Name: gatehouse.Val("x")})
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testKeyUpdateKeepsUsage(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Limit: new(gatehouse.USD(10)), LimitReset: gatehouse.Daily})
	_, err := f.store.RecordUsage(f.ctx, k.Hash, gatehouse.USD(3), false)
	ok(t, err)
	_, err = f.store.RecordUsage(f.ctx, k.Hash, gatehouse.USD(2), true)
	ok(t, err)
	want := gatehouse.Usage{Total: gatehouse.USD(3), Daily: gatehouse.USD(3), Weekly: gatehouse.USD(3), Monthly: gatehouse.USD(3)}
	wantBYOK := gatehouse.Usage{Total: gatehouse.USD(2), Daily: gatehouse.USD(2), Weekly: gatehouse.USD(2), Monthly: gatehouse.USD(2)}
	for _, u := range []gatehouse.KeyUpdate{
		{Limit: gatehouse.Val(gatehouse.USD(20))},
		{LimitReset: gatehouse.Val(gatehouse.Monthly)},
		{LimitReset: gatehouse.Null[gatehouse.Interval]()},
		{Limit: gatehouse.Null[gatehouse.Money]()},
		{Limit: gatehouse.Val(gatehouse.USD(4)), LimitReset: gatehouse.Val(gatehouse.Weekly), IncludeBYOKInLimit: gatehouse.Val(true)},
		{Name: gatehouse.Val("renamed"), Disabled: gatehouse.Val(true)},
		{Disabled: gatehouse.Val(false)},
	} {
		f.clock.Add(time.Minute)
		got, err := f.store.UpdateKey(f.ctx, f.org.ID, k.Hash, u)
		ok(t, err)
		found, err := f.store.FindKey(f.ctx, f.org.ID, k.Hash)
		ok(t, err)
		for _, k := range []*gatehouse.Key{got, found} {
			if u := k.Usage.At(f.clock.Now()); u != want {
				t.Errorf("usage after update = %+v, want %+v", u, want)
			}
			if u := k.BYOKUsage.At(f.clock.Now()); u != wantBYOK {
				t.Errorf("byok usage after update = %+v, want %+v", u, wantBYOK)
			}
		}
	}
	// Limit 4 weekly with BYOK: 4 - 3 - 2 < 0.
	found, err := f.store.FindKey(f.ctx, f.org.ID, k.Hash)
	ok(t, err)
	if r := found.LimitRemaining(f.clock.Now()); r == nil || *r != 0 {
		t.Errorf("LimitRemaining = %v, want 0", r)
	}
}

// testKeyUpdateConcurrent changes different fields of one key at the same
// moment, while usage is recorded: no change may be lost (an update that
// wrote back the values it read before another committed would undo it),
// and each change leaves exactly one audit entry.
func testKeyUpdateConcurrent(t *testing.T, open Opener) {
	f := newFixture(t, open)
	updates := []gatehouse.KeyUpdate{
		{Name: gatehouse.Val("renamed")},
		{Disabled: gatehouse.Val(true)},
		{Limit: gatehouse.Val(gatehouse.USD(7))},
		{LimitReset: gatehouse.Val(gatehouse.Weekly)},
		{IncludeBYOKInLimit: gatehouse.Val(true)},
	}
	for round := range 10 {
		k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: fmt.Sprintf("k%d", round)})
		var wg sync.WaitGroup
		errs := make(chan error, len(updates)+1)
		for _, u := range updates {
			wg.Go(func() {
				_, err := f.store.UpdateKey(f.ctx, f.org.ID, k.Hash, u)
				errs <- err
			})
		}
		wg.Go(func() {
			_, err := f.store.RecordUsage(f.ctx, k.Hash, gatehouse.USD(1), false)
			errs <- err
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			ok(t, err)
		}
		got, err := f.store.FindKey(f.ctx, f.org.ID, k.Hash)
		ok(t, err)
		if got.Name != "renamed" || !got.Disabled || got.Limit == nil || *got.Limit != gatehouse.USD(7) ||
			got.LimitReset != gatehouse.Weekly || !got.IncludeBYOKInLimit || got.Usage.At(f.clock.Now()).Total != gatehouse.USD(1) {
			t.Fatalf("round %d: a concurrent change was lost: %+v", round, got)
		}
		entries, total, err := f.store.FindAuditEntries(f.ctx, f.org.ID, gatehouse.AuditFilter{ResourceID: k.Hash, Page: gatehouse.Page{Limit: 100}})
		ok(t, err)
		updatesSeen := 0
		for _, e := range entries {
			if e.Operation == "key.update" {
				updatesSeen++
			}
		}
		if updatesSeen != len(updates) {
			t.Fatalf("round %d: %d key.update audit entries (of %d), want %d", round, updatesSeen, total, len(updates))
		}
	}
}

func testKeyDelete(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	keep := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	wantCode(t, f.store.DeleteKey(f.ctx, f.newOrg(t, "Other").ID, k.Hash), gatehouse.ENOTFOUND)
	ok(t, f.store.DeleteKey(f.ctx, f.org.ID, k.Hash))
	_, err := f.store.FindKey(f.ctx, f.org.ID, k.Hash)
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.FindKeyByHash(f.ctx, k.Hash)
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.RecordUsage(f.ctx, k.Hash, 1, false)
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantCode(t, f.store.DeleteKey(f.ctx, f.org.ID, k.Hash), gatehouse.ENOTFOUND)
	wantCode(t, f.store.DeleteKey(f.ctx, f.org.ID, "not-a-hash"), gatehouse.ENOTFOUND)
	keys, err := f.store.FindKeys(f.ctx, f.org.ID, gatehouse.KeyFilter{IncludeDisabled: true})
	ok(t, err)
	if len(keys) != 1 || keys[0].Hash != keep.Hash {
		t.Errorf("FindKeys after delete = %v", keyHashes(keys))
	}
	// A disabled key can be deleted too.
	_, err = f.store.UpdateKey(f.ctx, f.org.ID, keep.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)})
	ok(t, err)
	ok(t, f.store.DeleteKey(f.ctx, f.org.ID, keep.Hash))
}

// checkPlaintext checks the shape of a new key's plaintext and that hash is
// its hash.
func checkPlaintext(t *testing.T, plaintext, prefix, hash string) {
	t.Helper()
	rest, found := strings.CutPrefix(plaintext, prefix)
	if _, err := hex.DecodeString(rest); !found || len(rest) != 64 || err != nil || strings.ToLower(rest) != rest {
		t.Errorf("plaintext %q: want %s followed by 64 lowercase hex digits", plaintext, prefix)
	}
	if gatehouse.HashKey(plaintext) != hash || !gatehouse.IsKeyHash(hash) {
		t.Errorf("hash %q is not HashKey(plaintext) = %q", hash, gatehouse.HashKey(plaintext))
	}
}

// sameKey compares two keys field by field, the usage counters as read at now.
func sameKey(t *testing.T, what string, got, want *gatehouse.Key, now time.Time) {
	t.Helper()
	if g, w := keyString(got, now), keyString(want, now); g != w {
		t.Errorf("%s:\n got  %s\n want %s", what, g, w)
	}
}

// keyString renders every field of a key, its counters as read at now.
func keyString(k *gatehouse.Key, now time.Time) string {
	if k == nil {
		return "<nil>"
	}
	limit := "<nil>"
	if k.Limit != nil {
		limit = k.Limit.String()
	}
	return fmt.Sprintf("{hash:%s org:%s ws:%s name:%q mgmt:%v disabled:%v limit:%s reset:%q byok_in_limit:%v usage:%s byok:%s creator:%s external:%s created:%s updated:%s expires:%s}",
		k.Hash, k.OrganizationID, k.WorkspaceID, k.Name, k.Management, k.Disabled, limit, k.LimitReset, k.IncludeBYOKInLimit,
		usageString(k.Usage.At(now)), usageString(k.BYOKUsage.At(now)), optStr(k.CreatorUserID), optStr(k.ExternalUser),
		timeString(&k.CreatedAt), timeString(k.UpdatedAt), timeString(k.ExpiresAt))
}

// timeString renders an optional instant in UTC.
func timeString(t *time.Time) string {
	if t == nil {
		return "<nil>"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func keyHashes(keys []*gatehouse.Key) []string {
	out := []string{}
	for _, k := range keys {
		out = append(out, k.Hash)
	}
	return out
}
