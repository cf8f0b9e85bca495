package keycache

import (
	"context"

	"gatehouse"
)

// The writes that change what the cache holds go through the store, then
// invalidate: after the commit, so that no read can cache the old value
// again (a read that raced the write is not cached, see table.put).

// UpdateKey updates through the store and forgets the cached copy.
func (c *Cache) UpdateKey(ctx context.Context, orgID, hash string, u gatehouse.KeyUpdate) (*gatehouse.Key, error) {
	defer c.Invalidate(hash)
	return c.Store.UpdateKey(ctx, orgID, hash, u)
}

// DeleteKey deletes through the store and forgets the cached copy.
func (c *Cache) DeleteKey(ctx context.Context, orgID, hash string) error {
	defer c.Invalidate(hash)
	return c.Store.DeleteKey(ctx, orgID, hash)
}

// RecordUsage records through the store and marks the cached copy's usage
// as changed.
func (c *Cache) RecordUsage(ctx context.Context, hash string, amount gatehouse.Money, byok bool) (*gatehouse.Key, error) {
	defer c.UsageChanged(hash)
	return c.Store.RecordUsage(ctx, hash, amount, byok)
}

// Settle settles through the store, then marks the usage of the
// generation's key, and of every key it was minted from (they are charged
// too), as changed. It does so whatever the outcome: a commit whose
// answer was lost has changed them all the same.
func (c *Cache) Settle(ctx context.Context, reservationID string, g *gatehouse.Generation) error {
	err := c.Store.Settle(ctx, reservationID, g)
	c.chainUsageChanged(ctx, g.OrganizationID, g.KeyHash)
	return err
}

// chainUsageChanged marks the usage of a key and of the keys it was minted
// from as changed. The chain comes from the cache, else from the store,
// whose answer is then cached; when the store cannot answer, every key of
// the organization (which the whole chain belongs to) is marked instead.
func (c *Cache) chainUsageChanged(ctx context.Context, orgID, hash string) {
	for range gatehouse.MaxMintDepth + 1 {
		parent, err := c.parent(ctx, hash)
		c.UsageChanged(hash)
		switch {
		case gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND:
			return // deleted: what was above it is charged no more
		case err != nil:
			c.keys.changeIf(func(k *gatehouse.Key) bool { return k.OrganizationID == orgID })
			return
		case parent == nil:
			return
		}
		hash = *parent
	}
}

// parent returns the hash of the key a key was minted from, nil for none.
// A key's parent never changes, so any entry answers, however old, even
// while the feed is silent.
func (c *Cache) parent(ctx context.Context, hash string) (*string, error) {
	if e, _, ok := c.keys.get(hash); ok {
		return e.value.ParentKeyHash, nil
	}
	k, err := c.key(ctx, hash, false)
	if err != nil {
		return nil, err
	}
	return k.ParentKeyHash, nil
}

// DeleteWorkspace deletes through the store, then forgets the keys and
// guardrails of the organization: the workspace's went with it, by cascade.
func (c *Cache) DeleteWorkspace(ctx context.Context, orgID, ref string, confirmDefault bool) error {
	defer c.forgetOrganization(orgID)
	return c.Store.DeleteWorkspace(ctx, orgID, ref, confirmDefault)
}

// forgetOrganization forgets every key and guardrail of an organization.
func (c *Cache) forgetOrganization(orgID string) {
	c.keys.forgetIf(func(k *gatehouse.Key) bool { return k.OrganizationID == orgID })
	c.guardrails.forgetIf(func(g *gatehouse.Guardrail) bool { return g.OrganizationID == orgID })
	c.forgetPages(orgID)
}

// UpdateGuardrail updates through the store and forgets the cached copy
// and the pages of the organization's guardrails (the first update of a
// workspace's default guardrail creates it). Assignments are not part of
// a guardrail, so their changes need not.
func (c *Cache) UpdateGuardrail(ctx context.Context, orgID, id string, u gatehouse.GuardrailUpdate) (*gatehouse.Guardrail, error) {
	defer c.forgetGuardrail(orgID, id)
	return c.Store.UpdateGuardrail(ctx, orgID, id, u)
}

// DeleteGuardrail deletes through the store and forgets the cached copy
// and the pages of the organization's guardrails.
func (c *Cache) DeleteGuardrail(ctx context.Context, orgID, id string) error {
	defer c.forgetGuardrail(orgID, id)
	return c.Store.DeleteGuardrail(ctx, orgID, id)
}

func (c *Cache) forgetGuardrail(orgID, id string) {
	c.InvalidateGuardrail(id)
	c.forgetPages(orgID)
}

// guardrailSize estimates the bytes a cached guardrail holds: its strings
// and a fixed allowance for the struct, slices and map entry.
func guardrailSize(g *gatehouse.Guardrail) int {
	n := 512 + len(g.ID) + len(g.OrganizationID) + len(g.WorkspaceID) + len(g.Name) + strLen(g.Description)
	for _, list := range [][]string{g.AllowedModels, g.AllowedProviders, g.IgnoredModels, g.IgnoredProviders, g.AllowedDataRegions} {
		for _, s := range list {
			n += 16 + len(s)
		}
	}
	for _, f := range g.ContentFilters {
		n += 48 + len(f.Pattern) + len(f.Action) + strLen(f.Label)
	}
	for _, b := range g.ContentFilterBuiltins {
		n += 72 + len(b.Slug) + len(b.Action) + len(b.Label) + strLen(b.ScanScope)
	}
	return n
}

func strLen(s *string) int {
	if s == nil {
		return 0
	}
	return len(*s)
}

// SetManagementKeyDisabled changes the key through the store and forgets
// the cached copy.
func (c *Cache) SetManagementKeyDisabled(ctx context.Context, orgID, hash string, disabled bool) (*gatehouse.Key, error) {
	defer c.Invalidate(hash)
	return c.Store.SetManagementKeyDisabled(ctx, orgID, hash, disabled)
}

// DeleteManagementKey deletes through the store and forgets the cached
// copy.
func (c *Cache) DeleteManagementKey(ctx context.Context, orgID, hash string) error {
	defer c.Invalidate(hash)
	return c.Store.DeleteManagementKey(ctx, orgID, hash)
}

// The writes of single sign-on and SCIM may disable keys: a member whom
// groups take out of a workspace, or whom the provider deactivates or
// deletes, loses their active keys there (gatehouse.SSOService,
// gatehouse.SCIMService). Which keys is the store's to know, so each such
// write forgets the keys of its organization.

// SignInWithSSO signs in through the store, then forgets the keys of the
// member's organization.
func (c *Cache) SignInWithSSO(ctx context.Context, in gatehouse.SSOSignIn) (*gatehouse.Session, string, error) {
	s, token, err := c.Store.SignInWithSSO(ctx, in)
	if err == nil {
		c.forgetKeys(s.OrganizationID)
	}
	return s, token, err
}

// CreateGroupMapping creates through the store and forgets the
// organization's keys.
func (c *Cache) CreateGroupMapping(ctx context.Context, orgID string, u gatehouse.GroupMappingUpdate) (*gatehouse.GroupMapping, error) {
	defer c.forgetKeys(orgID)
	return c.Store.CreateGroupMapping(ctx, orgID, u)
}

// UpdateGroupMapping updates through the store and forgets the
// organization's keys.
func (c *Cache) UpdateGroupMapping(ctx context.Context, orgID, id string, u gatehouse.GroupMappingUpdate) (*gatehouse.GroupMapping, error) {
	defer c.forgetKeys(orgID)
	return c.Store.UpdateGroupMapping(ctx, orgID, id, u)
}

// DeleteGroupMapping deletes through the store and forgets the
// organization's keys.
func (c *Cache) DeleteGroupMapping(ctx context.Context, orgID, id string) error {
	defer c.forgetKeys(orgID)
	return c.Store.DeleteGroupMapping(ctx, orgID, id)
}

// UpdateSCIMUser updates through the store and forgets the organization's
// keys.
func (c *Cache) UpdateSCIMUser(ctx context.Context, orgID, id string, change func(*gatehouse.SCIMUserWrite) error) (*gatehouse.SCIMUser, error) {
	defer c.forgetKeys(orgID)
	return c.Store.UpdateSCIMUser(ctx, orgID, id, change)
}

// DeleteSCIMUser deletes through the store and forgets the organization's
// keys.
func (c *Cache) DeleteSCIMUser(ctx context.Context, orgID, id string) error {
	defer c.forgetKeys(orgID)
	return c.Store.DeleteSCIMUser(ctx, orgID, id)
}

// CreateSCIMGroup creates through the store and forgets the
// organization's keys.
func (c *Cache) CreateSCIMGroup(ctx context.Context, orgID string, w gatehouse.SCIMGroupWrite) (*gatehouse.SCIMGroup, error) {
	defer c.forgetKeys(orgID)
	return c.Store.CreateSCIMGroup(ctx, orgID, w)
}

// UpdateSCIMGroup updates through the store and forgets the
// organization's keys.
func (c *Cache) UpdateSCIMGroup(ctx context.Context, orgID, id string, change func(*gatehouse.SCIMGroupWrite) error) (*gatehouse.SCIMGroup, error) {
	defer c.forgetKeys(orgID)
	return c.Store.UpdateSCIMGroup(ctx, orgID, id, change)
}

// DeleteSCIMGroup deletes through the store and forgets the
// organization's keys.
func (c *Cache) DeleteSCIMGroup(ctx context.Context, orgID, id string) error {
	defer c.forgetKeys(orgID)
	return c.Store.DeleteSCIMGroup(ctx, orgID, id)
}

// forgetKeys forgets every key of an organization.
func (c *Cache) forgetKeys(orgID string) {
	c.keys.forgetIf(func(k *gatehouse.Key) bool { return k.OrganizationID == orgID })
}
