package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

func testKeyManagementKeys(t *testing.T, open Opener) {
	f := newFixture(t, open)
	regular := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	k, plaintext, err := f.store.CreateManagementKey(f.ctx, f.org.ID, "Admin")
	ok(t, err)
	checkPlaintext(t, plaintext, gatehouse.ManagementKeyPrefix, k.Hash)
	if !k.Management || k.OrganizationID != f.org.ID || k.WorkspaceID != "" || k.Name != "Admin" || !k.CreatedAt.Equal(f.clock.Now()) {
		t.Errorf("CreateManagementKey = %s", keyString(k, f.clock.Now()))
	}
	got, err := f.store.FindKeyByHash(f.ctx, gatehouse.HashKey(plaintext))
	ok(t, err)
	sameKey(t, "FindKeyByHash", got, k, f.clock.Now())

	// Invisible to the keys API.
	_, err = f.store.FindKey(f.ctx, f.org.ID, k.Hash)
	wantCode(t, err, gatehouse.ENOTFOUND)
	keys, err := f.store.FindKeys(f.ctx, f.org.ID, gatehouse.KeyFilter{IncludeDisabled: true})
	ok(t, err)
	if len(keys) != 1 || keys[0].Hash != regular.Hash {
		t.Errorf("FindKeys = %v, want only the regular key", keyHashes(keys))
	}
	_, err = f.store.UpdateKey(f.ctx, f.org.ID, k.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)})
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantCode(t, f.store.DeleteKey(f.ctx, f.org.ID, k.Hash), gatehouse.ENOTFOUND)
	if got, err := f.store.FindKeyByHash(f.ctx, k.Hash); err != nil || got.Disabled {
		t.Errorf("management key after refused update and delete: %v, %v", got, err)
	}

	// A default name; a bad name; an unknown organization.
	k2, _, err := f.store.CreateManagementKey(f.ctx, f.org.ID, "")
	ok(t, err)
	if k2.Name == "" || k2.Hash == k.Hash {
		t.Errorf("CreateManagementKey with no name = %s", keyString(k2, f.clock.Now()))
	}
	_, _, err = f.store.CreateManagementKey(f.ctx, f.org.ID, strings.Repeat("n", gatehouse.MaxNameLength+1))
	wantCode(t, err, gatehouse.EINVALID)
	_, _, err = f.store.CreateManagementKey(f.ctx, "00000000-0000-4000-8000-000000000000", "Admin")
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testKeyEnsureManagementKey(t *testing.T, open Opener) {
	f := newFixture(t, open)
	plaintext := gatehouse.NewKeySecret(true)
	k1, err := f.store.EnsureManagementKey(f.ctx, f.org.ID, plaintext, "Bootstrap")
	ok(t, err)
	if k1.Hash != gatehouse.HashKey(plaintext) || !k1.Management || k1.OrganizationID != f.org.ID || k1.Name != "Bootstrap" {
		t.Errorf("EnsureManagementKey = %s", keyString(k1, f.clock.Now()))
	}
	f.clock.Add(time.Hour)
	k2, err := f.store.EnsureManagementKey(f.ctx, f.org.ID, plaintext, "Another name")
	ok(t, err)
	sameKey(t, "second EnsureManagementKey", k2, k1, f.clock.Now())
	got, err := f.store.FindKeyByHash(f.ctx, k1.Hash)
	ok(t, err)
	sameKey(t, "FindKeyByHash", got, k1, f.clock.Now())

	// The shortest accepted value is 40 characters.
	min40 := gatehouse.ManagementKeyPrefix + strings.Repeat("a", 40-len(gatehouse.ManagementKeyPrefix))
	_, err = f.store.EnsureManagementKey(f.ctx, f.org.ID, min40, "")
	ok(t, err)

	other := f.newOrg(t, "Other")
	_, otherPlain, err := f.store.CreateManagementKey(f.ctx, other.ID, "")
	ok(t, err)
	_, regularPlain, err := f.store.CreateKey(f.ctx, f.org.ID, gatehouse.KeyCreate{Name: "regular"})
	ok(t, err)
	for _, tc := range []struct{ name, plaintext string }{
		{"empty", ""},
		{"regular prefix", regularPlain},
		{"regular prefix, fresh", gatehouse.NewKeySecret(false)},
		{"no prefix", strings.Repeat("a", 64)},
		{"39 characters", min40[:39]},
		{"prefix only", gatehouse.ManagementKeyPrefix},
		{"another organization's key", otherPlain},
	} {
		_, err := f.store.EnsureManagementKey(f.ctx, f.org.ID, tc.plaintext, "")
		if gatehouse.ErrorCode(err) != gatehouse.EINVALID {
			t.Errorf("%s: error %v, want %s", tc.name, err, gatehouse.EINVALID)
		}
	}
	// The other organization's key still belongs to it.
	if got, err := f.store.FindKeyByHash(f.ctx, gatehouse.HashKey(otherPlain)); err != nil || got.OrganizationID != other.ID {
		t.Errorf("other organization's key: %v, %v", got, err)
	}
	_, err = f.store.EnsureManagementKey(f.ctx, "00000000-0000-4000-8000-000000000000", gatehouse.NewKeySecret(true), "")
	wantCode(t, err, gatehouse.ENOTFOUND)
}

// testKeyFindManagementKeys checks that FindManagementKeys lists the
// organization's management keys, and only them, oldest first, disabled
// ones included, so that each can be found to be disabled or deleted.
func testKeyFindManagementKeys(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.wantManagementKeys(t, "no management key yet")
	f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	other := f.newOrg(t, "Other")
	_, _, err := f.store.CreateManagementKey(f.ctx, other.ID, "Other's")
	ok(t, err)

	first := f.newManagementKey(t, "First")
	f.clock.Add(time.Minute)
	// Two keys made in the same instant come by hash.
	tie1, tie2 := f.newManagementKey(t, "Tie"), f.newManagementKey(t, "Tie")
	if tie2.Hash < tie1.Hash {
		tie1, tie2 = tie2, tie1
	}
	f.clock.Add(time.Minute)
	last := f.newManagementKey(t, "Last")
	f.wantManagementKeys(t, "after creation", first, tie1, tie2, last)

	f.clock.Add(time.Minute)
	disabled, err := f.store.SetManagementKeyDisabled(f.ctx, f.org.ID, tie1.Hash, true)
	ok(t, err)
	if !disabled.Disabled {
		t.Fatalf("SetManagementKeyDisabled(true) = %s", keyString(disabled, f.clock.Now()))
	}
	f.wantManagementKeys(t, "after disabling one", first, disabled, tie2, last)

	ok(t, f.store.DeleteManagementKey(f.ctx, f.org.ID, first.Hash))
	f.wantManagementKeys(t, "after deleting the first", disabled, tie2, last)

	_, err = f.store.FindManagementKeys(f.ctx, "00000000-0000-4000-8000-000000000000")
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.FindManagementKeys(f.ctx, "nope")
	wantCode(t, err, gatehouse.ENOTFOUND)
}

// newManagementKey creates a management key of the fixture's organization.
func (f *fixture) newManagementKey(t *testing.T, name string) *gatehouse.Key {
	t.Helper()
	k, _, err := f.store.CreateManagementKey(f.ctx, f.org.ID, name)
	ok(t, err)
	return k
}

// wantManagementKeys fails the test unless FindManagementKeys lists want,
// in this order, field by field.
func (f *fixture) wantManagementKeys(t *testing.T, what string, want ...*gatehouse.Key) {
	t.Helper()
	got, err := f.store.FindManagementKeys(f.ctx, f.org.ID)
	ok(t, err)
	if got == nil || len(got) != len(want) {
		t.Fatalf("%s: FindManagementKeys = %v, want %v (not nil)", what, keyHashes(got), keyHashes(want))
	}
	for i := range want {
		sameKey(t, fmt.Sprintf("%s: FindManagementKeys[%d]", what, i), got[i], want[i], f.clock.Now())
	}
}
