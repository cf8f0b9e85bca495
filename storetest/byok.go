package storetest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"

	"github.com/google/uuid"
)

func testBYOKKeys(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"CreateFindUpdateDelete", testBYOKLifecycle},
		{"Validation", testBYOKValidation},
		{"Allowlists", testBYOKAllowlists},
		{"SortOrder", testBYOKSortOrder},
		{"CreateConcurrent", testBYOKCreateConcurrent},
		{"PerProviderLimit", testBYOKLimit},
		{"PaginationAndProvider", testBYOKPagination},
		{"GatewayRead", testBYOKGatewayRead},
		{"Tenancy", testBYOKTenancy},
		{"WorkspaceDelete", testBYOKWorkspaceDelete},
		{"Audit", testBYOKAudit},
		{"Reseal", testBYOKReseal},
	})
}

// Provider keys of the tests, long enough to be masked to their last four.
const (
	byokSecret  = "sk-proj-BYOKSECRET-0123456789abcdef"
	byokRotated = "sk-proj-BYOKROTATED-fedcba9876543210"
)

// byokCreate returns a create request for a key of provider with the
// given provider key, in the default workspace.
func byokCreate(provider, key string) gatehouse.BYOKKeyCreate {
	return gatehouse.BYOKKeyCreate{Provider: provider, BYOKKeyUpdate: gatehouse.BYOKKeyUpdate{Key: gatehouse.Val(key)}}
}

// newBYOKKey creates a BYOK key.
func (f *fixture) newBYOKKey(t *testing.T, orgID string, c gatehouse.BYOKKeyCreate) *gatehouse.BYOKKey {
	t.Helper()
	k, err := f.store.CreateBYOKKey(f.ctx, orgID, c)
	if err != nil {
		t.Fatalf("CreateBYOKKey(%s): %v", c.Provider, err)
	}
	return k
}

// providerKeys returns the gateway's read of a workspace's keys for a
// provider, as id: key in the clear (disabled ones marked).
func (f *fixture) providerKeys(t *testing.T, workspaceID, provider string) []string {
	t.Helper()
	keys, err := f.store.ProviderBYOKKeys(f.ctx, workspaceID, provider)
	ok(t, err)
	out := []string{}
	for _, k := range keys {
		s := k.ID + ": " + string(k.Key)
		if k.Disabled {
			s += " (disabled)"
		}
		out = append(out, s)
	}
	return out
}

func testBYOKLifecycle(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	k := f.newBYOKKey(t, f.org.ID, byokCreate("openai", byokSecret))
	now := f.clock.Now()
	want := &gatehouse.BYOKKey{ID: k.ID, OrganizationID: f.org.ID, WorkspaceID: ws.ID, Provider: "openai",
		Label: "********cdef", CreatedAt: now, UpdatedAt: now}
	wantEqual(t, "created key", want, k)
	if _, err := uuid.Parse(k.ID); err != nil {
		t.Fatalf("id %q is not a UUID", k.ID)
	}
	got, err := f.store.FindBYOKKey(f.ctx, f.org.ID, k.ID)
	ok(t, err)
	wantEqual(t, "found key", want, got)
	if got.Key != "" {
		t.Fatal("FindBYOKKey returned the provider key: only the gateway's read may")
	}
	list, total, err := f.store.FindBYOKKeys(f.ctx, f.org.ID, gatehouse.BYOKKeyFilter{Page: page(0, 10)})
	ok(t, err)
	if total != 1 || len(list) != 1 || list[0].ID != k.ID || list[0].Key != "" {
		t.Fatalf("FindBYOKKeys = %d %v", total, list)
	}
	wantEqual(t, "gateway read", []string{k.ID + ": " + byokSecret}, f.providerKeys(t, ws.ID, "openai"))

	f.clock.Add(time.Minute)
	hash := f.newKey(t, f.org.ID, gatehouse.KeyCreate{}).Hash
	member := f.newMember(t, f.org.ID, "ada@example.com")
	got, err = f.store.UpdateBYOKKey(f.ctx, f.org.ID, k.ID, gatehouse.BYOKKeyUpdate{
		Name: gatehouse.Val("team key"), Key: gatehouse.Val(byokRotated), Disabled: gatehouse.Val(true),
		AllowedAPIKeyHashes: gatehouse.Val([]string{hash, hash}), AllowedModels: gatehouse.Val([]string{"openai/gpt-4o"}),
		AllowedUserIDs: gatehouse.Val([]string{member.ID}), DeclaredZDR: gatehouse.Val(true),
		IsFallback: gatehouse.Val(true), IsRequired: gatehouse.Val(true),
	})
	ok(t, err)
	want.Name, want.Label, want.Disabled = new("team key"), "********3210", true
	want.AllowedAPIKeyHashes, want.AllowedModels, want.AllowedUserIDs = []string{hash}, []string{"openai/gpt-4o"}, []string{member.ID}
	want.DeclaredZDR, want.IsFallback, want.IsRequired = new(true), true, true
	want.UpdatedAt = f.clock.Now()
	wantEqual(t, "updated key", want, got)
	got, err = f.store.FindBYOKKey(f.ctx, f.org.ID, k.ID)
	ok(t, err)
	wantEqual(t, "updated key read back", want, got)
	wantEqual(t, "gateway read after rotation", []string{k.ID + ": " + byokRotated + " (disabled)"}, f.providerKeys(t, ws.ID, "openai"))

	// null clears; absent leaves alone; an empty update changes nothing.
	got, err = f.store.UpdateBYOKKey(f.ctx, f.org.ID, k.ID, gatehouse.BYOKKeyUpdate{
		Name: gatehouse.Null[string](), AllowedAPIKeyHashes: gatehouse.Null[[]string](), AllowedModels: gatehouse.Null[[]string](),
		AllowedUserIDs: gatehouse.Null[[]string](), DeclaredZDR: gatehouse.Null[bool](), Disabled: gatehouse.Val(false),
	})
	ok(t, err)
	want.Name, want.AllowedAPIKeyHashes, want.AllowedModels, want.AllowedUserIDs, want.DeclaredZDR = nil, nil, nil, nil, nil
	want.Disabled = false
	wantEqual(t, "cleared key", want, got)
	got, err = f.store.UpdateBYOKKey(f.ctx, f.org.ID, k.ID, gatehouse.BYOKKeyUpdate{})
	ok(t, err)
	wantEqual(t, "empty update", want, got)
	wantEqual(t, "the key survives updates without one", []string{k.ID + ": " + byokRotated}, f.providerKeys(t, ws.ID, "openai"))

	ok(t, f.store.DeleteBYOKKey(f.ctx, f.org.ID, k.ID))
	_, err = f.store.FindBYOKKey(f.ctx, f.org.ID, k.ID)
	wantMessage(t, err, gatehouse.ENOTFOUND, "byok key not found")
	wantCode(t, f.store.DeleteBYOKKey(f.ctx, f.org.ID, k.ID), gatehouse.ENOTFOUND)
	_, err = f.store.UpdateBYOKKey(f.ctx, f.org.ID, k.ID, gatehouse.BYOKKeyUpdate{Disabled: gatehouse.Val(true)})
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantEqual(t, "gateway read after delete", []string{}, f.providerKeys(t, ws.ID, "openai"))
}

func testBYOKValidation(t *testing.T, open Opener) {
	f := newFixture(t, open)
	existing := f.newBYOKKey(t, f.org.ID, byokCreate("openai", byokSecret))
	with := func(u gatehouse.BYOKKeyUpdate) gatehouse.BYOKKeyCreate {
		c := byokCreate("openai", byokSecret)
		u.Key = c.Key
		c.BYOKKeyUpdate = u
		return c
	}
	for _, tc := range []struct {
		name   string
		create gatehouse.BYOKKeyCreate
		field  string
	}{
		{"no provider", byokCreate("", byokSecret), "provider"},
		{"provider with a slash", byokCreate("amazon-bedrock/claude", byokSecret), "provider"},
		{"provider in capitals", byokCreate("OpenAI", byokSecret), "provider"},
		{"provider too long", byokCreate(strings.Repeat("p", 65), byokSecret), "provider"},
		{"no key", gatehouse.BYOKKeyCreate{Provider: "openai"}, "key"},
		{"null key", gatehouse.BYOKKeyCreate{Provider: "openai", BYOKKeyUpdate: gatehouse.BYOKKeyUpdate{Key: gatehouse.Null[string]()}}, "key"},
		{"empty key", byokCreate("openai", ""), "key"},
		{"key with a space", byokCreate("openai", "sk-one two"), "key"},
		{"key with a line break", byokCreate("openai", "sk-one\r\nX-Injected: yes"), "key"},
		{"key not ASCII", byokCreate("openai", "sk-clé"), "key"},
		{"key too long", byokCreate("openai", strings.Repeat("k", gatehouse.MaxBYOKKeyLength+1)), "key"},
		{"blank name", with(gatehouse.BYOKKeyUpdate{Name: gatehouse.Val("  ")}), "name"},
		{"name with a control", with(gatehouse.BYOKKeyUpdate{Name: gatehouse.Val("a\x1bb")}), "name"},
		{"name too long", with(gatehouse.BYOKKeyUpdate{Name: gatehouse.Val(strings.Repeat("n", 201))}), "name"},
		{"null disabled", with(gatehouse.BYOKKeyUpdate{Disabled: gatehouse.Null[bool]()}), "disabled"},
		{"null is_fallback", with(gatehouse.BYOKKeyUpdate{IsFallback: gatehouse.Null[bool]()}), "is_fallback"},
		{"null is_byok_only", with(gatehouse.BYOKKeyUpdate{IsBYOKOnly: gatehouse.Null[bool]()}), "is_byok_only"},
		{"null is_required", with(gatehouse.BYOKKeyUpdate{IsRequired: gatehouse.Null[bool]()}), "is_required"},
		{"empty hash list", with(gatehouse.BYOKKeyUpdate{AllowedAPIKeyHashes: gatehouse.Val([]string{})}), "allowed_api_key_hashes"},
		{"not a hash", with(gatehouse.BYOKKeyUpdate{AllowedAPIKeyHashes: gatehouse.Val([]string{"sk-gh-v1-abc"})}), "allowed_api_key_hashes[0]"},
		{"too many hashes", with(gatehouse.BYOKKeyUpdate{AllowedAPIKeyHashes: gatehouse.Val(make([]string, gatehouse.MaxBYOKAllowlist+1))}), "allowed_api_key_hashes"},
		{"empty model list", with(gatehouse.BYOKKeyUpdate{AllowedModels: gatehouse.Val([]string{})}), "allowed_models"},
		{"model without provider", with(gatehouse.BYOKKeyUpdate{AllowedModels: gatehouse.Val([]string{"gpt-4o"})}), "allowed_models[0]"},
		{"model of another provider", with(gatehouse.BYOKKeyUpdate{AllowedModels: gatehouse.Val([]string{"openai/gpt-4o", "anthropic/claude"})}), "allowed_models[1]"},
		{"model with a space", with(gatehouse.BYOKKeyUpdate{AllowedModels: gatehouse.Val([]string{"openai/gpt 4o"})}), "allowed_models[0]"},
		{"empty user list", with(gatehouse.BYOKKeyUpdate{AllowedUserIDs: gatehouse.Val([]string{})}), "allowed_user_ids"},
		{"blank user", with(gatehouse.BYOKKeyUpdate{AllowedUserIDs: gatehouse.Val([]string{" "})}), "allowed_user_ids[0]"},
		{"byok only and fallback", with(gatehouse.BYOKKeyUpdate{IsBYOKOnly: gatehouse.Val(true), IsFallback: gatehouse.Val(true)}), "is_byok_only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.store.CreateBYOKKey(f.ctx, f.org.ID, tc.create)
			wantMessage(t, err, gatehouse.EINVALID, tc.field+": ")
			_, err = f.store.UpdateBYOKKey(f.ctx, f.org.ID, existing.ID, tc.create.BYOKKeyUpdate)
			if tc.field != "provider" && tc.name != "no key" { // rules of a new key only
				wantMessage(t, err, gatehouse.EINVALID, tc.field+": ")
			}
		})
	}
	// An update checks the combination with what is stored.
	_, err := f.store.UpdateBYOKKey(f.ctx, f.org.ID, existing.ID, gatehouse.BYOKKeyUpdate{IsFallback: gatehouse.Val(true)})
	ok(t, err)
	_, err = f.store.UpdateBYOKKey(f.ctx, f.org.ID, existing.ID, gatehouse.BYOKKeyUpdate{IsBYOKOnly: gatehouse.Val(true)})
	wantMessage(t, err, gatehouse.EINVALID, "is_byok_only: ")
	list, total, err := f.store.FindBYOKKeys(f.ctx, f.org.ID, gatehouse.BYOKKeyFilter{Page: page(0, 10)})
	ok(t, err)
	if total != 1 || len(list) != 1 || list[0].IsBYOKOnly || !list[0].IsFallback {
		t.Fatalf("refused requests changed the keys: %d %+v", total, list)
	}
}

func testBYOKAllowlists(t *testing.T, open Opener) {
	f := newFixture(t, open)
	team := f.newWorkspace(t, f.org.ID, "team")
	mine := f.newKey(t, f.org.ID, gatehouse.KeyCreate{}).Hash
	elsewhere := f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: team.ID}).Hash
	mgmt, _, err := f.store.CreateManagementKey(f.ctx, f.org.ID, "admin")
	ok(t, err)
	other := f.newOrg(t, "Other")
	foreign := f.newKey(t, other.ID, gatehouse.KeyCreate{}).Hash
	foreignMember := f.newMember(t, other.ID, "eve@example.com")
	member := f.newMember(t, f.org.ID, "ada@example.com")
	unknown := gatehouse.HashKey("sk-gh-v1-unknown")

	c := byokCreate("openai", byokSecret)
	c.AllowedAPIKeyHashes = gatehouse.Val([]string{mine, elsewhere, mgmt.Hash, foreign, unknown})
	_, err = f.store.CreateBYOKKey(f.ctx, f.org.ID, c)
	wantMessage(t, err, gatehouse.EINVALID, "allowed_api_key_hashes: not keys of the workspace")
	wantEqual(t, "the refused hashes", []string{elsewhere, mgmt.Hash, foreign, unknown},
		err.(*gatehouse.Error).Metadata["allowed_api_key_hashes"])
	c = byokCreate("openai", byokSecret)
	c.AllowedUserIDs = gatehouse.Val([]string{member.ID, foreignMember.ID, "user_nobody"})
	_, err = f.store.CreateBYOKKey(f.ctx, f.org.ID, c)
	wantMessage(t, err, gatehouse.EINVALID, "allowed_user_ids: not members of the organization")
	wantEqual(t, "the refused users", []string{foreignMember.ID, "user_nobody"}, err.(*gatehouse.Error).Metadata["allowed_user_ids"])
	if _, total, err := f.store.FindBYOKKeys(f.ctx, f.org.ID, gatehouse.BYOKKeyFilter{Page: page(0, 10)}); err != nil || total != 0 {
		t.Fatalf("refused creates left %d keys (%v)", total, err)
	}

	// The key of another workspace is fine in that workspace.
	c = byokCreate("openai", byokSecret)
	c.WorkspaceID, c.AllowedAPIKeyHashes, c.AllowedUserIDs = "team", gatehouse.Val([]string{elsewhere}), gatehouse.Val([]string{member.ID})
	k := f.newBYOKKey(t, f.org.ID, c)
	_, err = f.store.UpdateBYOKKey(f.ctx, f.org.ID, k.ID, gatehouse.BYOKKeyUpdate{AllowedAPIKeyHashes: gatehouse.Val([]string{mine})})
	wantMessage(t, err, gatehouse.EINVALID, "allowed_api_key_hashes: not keys of the workspace")
	_, err = f.store.UpdateBYOKKey(f.ctx, f.org.ID, k.ID, gatehouse.BYOKKeyUpdate{AllowedUserIDs: gatehouse.Val([]string{foreignMember.ID})})
	wantMessage(t, err, gatehouse.EINVALID, "allowed_user_ids: not members of the organization")
	got, err := f.store.FindBYOKKey(f.ctx, f.org.ID, k.ID)
	ok(t, err)
	wantEqual(t, "lists after refused updates", [][]string{{elsewhere}, {member.ID}}, [][]string{got.AllowedAPIKeyHashes, got.AllowedUserIDs})
	// A stored list is not checked again when another field changes, so a
	// key deleted since does not block unrelated updates.
	ok(t, f.store.DeleteKey(f.ctx, f.org.ID, elsewhere))
	_, err = f.store.UpdateBYOKKey(f.ctx, f.org.ID, k.ID, gatehouse.BYOKKeyUpdate{Name: gatehouse.Val("renamed")})
	ok(t, err)
}

func testBYOKSortOrder(t *testing.T, open Opener) {
	f := newFixture(t, open)
	team := f.newWorkspace(t, f.org.ID, "team")
	var orders []int
	a := f.newBYOKKey(t, f.org.ID, byokCreate("openai", byokSecret))
	b := f.newBYOKKey(t, f.org.ID, byokCreate("openai", byokSecret))
	other := f.newBYOKKey(t, f.org.ID, byokCreate("anthropic", byokSecret))
	c := byokCreate("openai", byokSecret)
	c.WorkspaceID = team.Slug
	elsewhere := f.newBYOKKey(t, f.org.ID, c)
	ok(t, f.store.DeleteBYOKKey(f.ctx, f.org.ID, a.ID))
	d := f.newBYOKKey(t, f.org.ID, byokCreate("openai", byokSecret))
	for _, k := range []*gatehouse.BYOKKey{a, b, other, elsewhere, d} {
		orders = append(orders, k.SortOrder)
	}
	wantEqual(t, "sort orders: per workspace and provider, after the last", []int{0, 1, 0, 0, 2}, orders)
	if elsewhere.WorkspaceID != team.ID {
		t.Fatalf("workspace_id by slug: %s, want %s", elsewhere.WorkspaceID, team.ID)
	}
}

// testBYOKCreateConcurrent: keys created at once for one provider each get
// a sort order of their own.
func testBYOKCreateConcurrent(t *testing.T, open Opener) {
	f := newFixture(t, open)
	const n = 8
	var wg sync.WaitGroup
	orders := make([]int, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			k, err := f.store.CreateBYOKKey(f.ctx, f.org.ID, byokCreate("openai", byokSecret))
			if errs[i] = err; err == nil {
				orders[i] = k.SortOrder
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		ok(t, err)
	}
	slices.Sort(orders)
	wantEqual(t, "sort orders of concurrent creates", []int{0, 1, 2, 3, 4, 5, 6, 7}, orders)
}

func testBYOKLimit(t *testing.T, open Opener) {
	f := newFixture(t, open)
	for range gatehouse.MaxBYOKKeysPerProvider {
		f.newBYOKKey(t, f.org.ID, byokCreate("openai", byokSecret))
	}
	_, err := f.store.CreateBYOKKey(f.ctx, f.org.ID, byokCreate("openai", byokSecret))
	wantMessage(t, err, gatehouse.EINVALID, "provider: the workspace already has")
	f.newBYOKKey(t, f.org.ID, byokCreate("anthropic", byokSecret)) // each provider has its own
}

func testBYOKPagination(t *testing.T, open Opener) {
	f := newFixture(t, open)
	var all, openai []string
	for i := range 5 {
		provider := "openai"
		if i%2 == 1 {
			provider = "anthropic"
		}
		k := f.newBYOKKey(t, f.org.ID, byokCreate(provider, byokSecret))
		all = append(all, k.ID)
		if provider == "openai" {
			openai = append(openai, k.ID)
		}
		f.clock.Add(time.Second)
	}
	for _, tc := range []struct {
		provider string
		want     []string
	}{{"", all}, {"openai", openai}, {"mistral", []string{}}} {
		got := []string{}
		for offset := 0; offset < len(all)+2; offset += 2 {
			list, total, err := f.store.FindBYOKKeys(f.ctx, f.org.ID, gatehouse.BYOKKeyFilter{Provider: tc.provider, Page: page(offset, 2)})
			ok(t, err)
			if total != len(tc.want) {
				t.Fatalf("provider %q: total %d, want %d", tc.provider, total, len(tc.want))
			}
			for _, k := range list {
				got = append(got, k.ID)
			}
		}
		wantEqual(t, fmt.Sprintf("provider %q in page order", tc.provider), tc.want, got)
	}
	_, _, err := f.store.FindBYOKKeys(f.ctx, f.org.ID, gatehouse.BYOKKeyFilter{WorkspaceRef: "nope", Page: page(0, 10)})
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testBYOKGatewayRead(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	team := f.newWorkspace(t, f.org.ID, "team")
	a := f.newBYOKKey(t, f.org.ID, byokCreate("openai", "sk-openai-A"))
	b := f.newBYOKKey(t, f.org.ID, byokCreate("openai", "sk-openai-B"))
	f.newBYOKKey(t, f.org.ID, byokCreate("anthropic", "sk-anthropic"))
	c := byokCreate("openai", "sk-openai-team")
	c.WorkspaceID = team.ID
	f.newBYOKKey(t, f.org.ID, c)
	wantEqual(t, "the workspace's keys of the provider, in sort order",
		[]string{a.ID + ": sk-openai-A", b.ID + ": sk-openai-B"}, f.providerKeys(t, ws.ID, "openai"))
	// A change is seen by the next read: a disabled key is marked at once,
	// and a deleted one gone.
	_, err = f.store.UpdateBYOKKey(f.ctx, f.org.ID, a.ID, gatehouse.BYOKKeyUpdate{Disabled: gatehouse.Val(true)})
	ok(t, err)
	wantEqual(t, "after disabling", []string{a.ID + ": sk-openai-A (disabled)", b.ID + ": sk-openai-B"}, f.providerKeys(t, ws.ID, "openai"))
	ok(t, f.store.DeleteBYOKKey(f.ctx, f.org.ID, b.ID))
	wantEqual(t, "after deleting", []string{a.ID + ": sk-openai-A (disabled)"}, f.providerKeys(t, ws.ID, "openai"))
	_, err = f.store.UpdateBYOKKey(f.ctx, f.org.ID, a.ID, gatehouse.BYOKKeyUpdate{Key: gatehouse.Val("sk-openai-A2"), Disabled: gatehouse.Val(false)})
	ok(t, err)
	wantEqual(t, "after rotating", []string{a.ID + ": sk-openai-A2"}, f.providerKeys(t, ws.ID, "openai"))
	wantEqual(t, "an unknown workspace", []string{}, f.providerKeys(t, uuid.NewString(), "openai"))
	wantEqual(t, "an unknown provider", []string{}, f.providerKeys(t, ws.ID, "mistral"))
}

func testBYOKTenancy(t *testing.T, open Opener) {
	f := newFixture(t, open)
	mine := f.newBYOKKey(t, f.org.ID, byokCreate("openai", "sk-mine-0123456789"))
	other := f.newOrg(t, "Other")
	theirs := f.newBYOKKey(t, other.ID, byokCreate("openai", "sk-theirs-0123456789"))
	for _, id := range []string{theirs.ID, "not-a-uuid", "", uuid.NewString(), mine.ID + "0"} {
		_, err := f.store.FindBYOKKey(f.ctx, f.org.ID, id)
		wantMessage(t, err, gatehouse.ENOTFOUND, "byok key not found")
		_, err = f.store.UpdateBYOKKey(f.ctx, f.org.ID, id, gatehouse.BYOKKeyUpdate{Key: gatehouse.Val("sk-stolen")})
		wantCode(t, err, gatehouse.ENOTFOUND)
		wantCode(t, f.store.DeleteBYOKKey(f.ctx, f.org.ID, id), gatehouse.ENOTFOUND)
	}
	list, _, err := f.store.FindBYOKKeys(f.ctx, f.org.ID, gatehouse.BYOKKeyFilter{Page: page(0, 10)})
	ok(t, err)
	if len(list) != 1 || list[0].ID != mine.ID {
		t.Fatalf("FindBYOKKeys = %v, want only %s", list, mine.ID)
	}
	_, _, err = f.store.FindBYOKKeys(f.ctx, f.org.ID, gatehouse.BYOKKeyFilter{WorkspaceRef: theirs.WorkspaceID, Page: page(0, 10)})
	wantCode(t, err, gatehouse.ENOTFOUND)
	c := byokCreate("openai", byokSecret)
	c.WorkspaceID = theirs.WorkspaceID
	_, err = f.store.CreateBYOKKey(f.ctx, f.org.ID, c)
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantEqual(t, "their keys, untouched", []string{theirs.ID + ": sk-theirs-0123456789"}, f.providerKeys(t, theirs.WorkspaceID, "openai"))
	wantEqual(t, "my keys", []string{mine.ID + ": sk-mine-0123456789"}, f.providerKeys(t, mine.WorkspaceID, "openai"))
}

func testBYOKWorkspaceDelete(t *testing.T, open Opener) {
	f := newFixture(t, open)
	team := f.newWorkspace(t, f.org.ID, "team")
	c := byokCreate("openai", byokSecret)
	c.WorkspaceID = team.ID
	gone := f.newBYOKKey(t, f.org.ID, c)
	kept := f.newBYOKKey(t, f.org.ID, byokCreate("openai", byokSecret))
	ok(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, team.ID, false))
	_, err := f.store.FindBYOKKey(f.ctx, f.org.ID, gone.ID)
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantEqual(t, "the deleted workspace's keys", []string{}, f.providerKeys(t, team.ID, "openai"))
	_, err = f.store.FindBYOKKey(f.ctx, f.org.ID, kept.ID)
	ok(t, err)
}

func testBYOKAudit(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newBYOKKey(t, f.org.ID, byokCreate("openai", byokSecret))
	_, err := f.store.UpdateBYOKKey(f.ctx, f.org.ID, k.ID, gatehouse.BYOKKeyUpdate{Key: gatehouse.Val(byokRotated), Disabled: gatehouse.Val(true)})
	ok(t, err)
	_, err = f.store.UpdateBYOKKey(f.ctx, f.org.ID, k.ID, gatehouse.BYOKKeyUpdate{IsBYOKOnly: gatehouse.Val(true), IsFallback: gatehouse.Val(true)})
	wantCode(t, err, gatehouse.EINVALID) // refused: no entry
	ok(t, f.store.DeleteBYOKKey(f.ctx, f.org.ID, k.ID))
	entries, total, err := f.store.FindAuditEntries(f.ctx, f.org.ID, gatehouse.AuditFilter{ResourceType: gatehouse.ResourceBYOKKey, Page: page(0, 10)})
	ok(t, err)
	if total != 3 {
		t.Fatalf("%d audit entries, want 3", total)
	}
	var got []string
	for _, e := range entries {
		got = append(got, fmt.Sprintf("%s %v %v", e.Operation, e.ResourceIDs, e.Details))
		if s := fmt.Sprintf("%#v %v", e, e.Details); strings.Contains(s, "SECRET") || strings.Contains(s, "ROTATED") {
			t.Errorf("audit entry holds the provider key: %s", s)
		}
	}
	ws := k.WorkspaceID
	wantEqual(t, "entries, newest first", []string{
		fmt.Sprintf("byok_key.delete [%s] map[]", k.ID),
		fmt.Sprintf("byok_key.update [%s] map[fields:[key disabled]]", k.ID),
		fmt.Sprintf("byok_key.create [%s] map[provider:openai workspace_id:%s]", k.ID, ws),
	}, got)
}

func testBYOKReseal(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.newBYOKKey(t, f.org.ID, byokCreate("openai", "sk-reseal-A"))
	b := f.newBYOKKey(t, f.org.ID, byokCreate("openai", "sk-reseal-B"))
	n, err := f.store.ResealSecrets(f.ctx, false)
	ok(t, err)
	if n.BYOKKeys != 2 {
		t.Fatalf("ResealSecrets re-sealed %d BYOK keys, want 2", n.BYOKKeys)
	}
	got := f.providerKeys(t, a.WorkspaceID, "openai")
	slices.Sort(got)
	want := []string{a.ID + ": sk-reseal-A", b.ID + ": sk-reseal-B"}
	slices.Sort(want)
	wantEqual(t, "keys after re-sealing", want, got)
}
