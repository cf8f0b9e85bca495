package storetest

import (
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
