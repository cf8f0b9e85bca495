package keycache

import (
	"context"
	"strconv"

	"gatehouse"
)

// Pages of a workspace's guardrails (FindGuardrails) are cached whole, as
// the store answered them (the page and the total, from one snapshot), by
// organization, workspace reference and page. Writes through the wrapper
// that change what a list shows (a guardrail created, updated or deleted, a
// workspace updated or deleted) forget every page of the organization. The
// database announces neither insertions nor workspace changes, so with a
// feed a page is served only if its read began at most MaxStaleness ago, as
// what is shown of a key is.

// page is one page of a workspace's guardrails.
type page struct {
	org        string
	guardrails []*gatehouse.Guardrail
	total      int
}

// pageCost is the estimated bytes a cached page holds.
func pageCost(p *page) int {
	n := 128
	for _, g := range p.guardrails {
		n += guardrailSize(g)
	}
	return n
}

// FindGuardrails returns a page of a workspace's guardrails and their
// total from memory when a fresh copy is there, else from the store
// (caching it). Errors are not cached.
func (c *Cache) FindGuardrails(ctx context.Context, orgID, workspaceRef string, p gatehouse.Page) ([]*gatehouse.Guardrail, int, error) {
	now := c.now()
	key := orgID + "\x00" + workspaceRef + "\x00" + strconv.Itoa(p.Offset) + "\x00" + strconv.Itoa(p.Limit)
	e, gen, ok := c.pages.get(key)
	if ok && now.Before(e.expires) && (!c.feed || now.Sub(e.read) <= c.maxStale) {
		return e.value.guardrails, e.value.total, nil
	}
	gs, total, err := c.Store.FindGuardrails(ctx, orgID, workspaceRef, p)
	if err != nil {
		return nil, 0, err
	}
	c.pages.put(key, &page{org: orgID, guardrails: gs, total: total}, now, now.Add(c.ttl), gen)
	return gs, total, nil
}

// forgetPages forgets every cached page of the organization's guardrails.
func (c *Cache) forgetPages(orgID string) {
	c.pages.forgetIf(func(p *page) bool { return p.org == orgID })
}

// CreateGuardrail creates through the store and forgets the pages of the
// organization's guardrails.
func (c *Cache) CreateGuardrail(ctx context.Context, orgID string, create gatehouse.GuardrailCreate) (*gatehouse.Guardrail, error) {
	defer c.forgetPages(orgID)
	return c.Store.CreateGuardrail(ctx, orgID, create)
}

// UpdateWorkspace updates through the store and forgets the pages of the
// organization's guardrails, which may name the workspace by its slug.
func (c *Cache) UpdateWorkspace(ctx context.Context, orgID, ref string, u gatehouse.WorkspaceUpdate) (*gatehouse.Workspace, error) {
	defer c.forgetPages(orgID)
	return c.Store.UpdateWorkspace(ctx, orgID, ref, u)
}
