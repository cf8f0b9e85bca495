// Package storetest is the conformance suite of gatehouse.Store: one set of
// tests that every storage engine runs, as testing/fstest.TestFS checks a
// file system. An engine's test calls Run with a function that opens a new,
// empty store.
package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"gatehouse"
)

// Opener returns a new, empty store whose transactions take the time from
// now. The store is closed by the test's cleanup.
type Opener func(t *testing.T, now gatehouse.Clock) gatehouse.Store

// Run runs the whole suite against stores made by open.
func Run(t *testing.T, open Opener) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"Organizations", testOrganizations},
		{"Keys", testKeys},
		{"KeySearch", testKeySearch},
		{"Usage", testUsage},
		{"UsagePlane", testUsagePlane},
		{"Budgets", testBudgets},
		{"Analytics", testAnalytics},
		{"OAuth", testOAuth},
		{"Workspaces", testWorkspaces},
		{"Guardrails", testGuardrails},
		{"Destinations", testDestinations},
		{"BYOKKeys", testBYOKKeys},
		{"Audit", testAudit},
		{"Generations", testGenerations},
		{"Presets", testPresets},
		{"Retention", testRetention},
		{"Accounts", testAccounts},
		{"SSO", testSSO},
		{"SCIM", testSCIM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each test opens stores of its own
			tc.fn(t, open)
		})
	}
}

// Clock is a settable clock for tests.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Add moves the clock forward by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fixture is a store with one organization, ready for a test.
type fixture struct {
	ctx   context.Context
	store gatehouse.Store
	clock *Clock
	org   *gatehouse.Organization
}

// newFixture opens a store at a fixed instant (a Wednesday in a leap year's
// February) and creates an organization in it.
func newFixture(t *testing.T, open Opener) *fixture {
	t.Helper()
	clock := NewClock(time.Date(2028, 2, 23, 12, 0, 0, 0, time.UTC))
	f := &fixture{ctx: context.Background(), clock: clock}
	f.store = open(t, clock.Now)
	f.org = f.newOrg(t, "Acme")
	return f
}

// newOrg creates another organization.
func (f *fixture) newOrg(t *testing.T, name string) *gatehouse.Organization {
	t.Helper()
	org, err := f.store.CreateOrganization(f.ctx, name)
	if err != nil {
		t.Fatalf("CreateOrganization: %v", err)
	}
	return org
}

// newMember adds a member to org.
func (f *fixture) newMember(t *testing.T, orgID, email string) *gatehouse.Member {
	t.Helper()
	m, err := f.store.CreateMember(f.ctx, orgID, gatehouse.MemberCreate{Email: email})
	if err != nil {
		t.Fatalf("CreateMember(%s): %v", email, err)
	}
	return m
}

// newKey creates a regular key in org.
func (f *fixture) newKey(t *testing.T, orgID string, c gatehouse.KeyCreate) *gatehouse.Key {
	t.Helper()
	if c.Name == "" {
		c.Name = "test key"
	}
	k, _, err := f.store.CreateKey(f.ctx, orgID, c)
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	return k
}

// newWorkspace creates a workspace in org.
func (f *fixture) newWorkspace(t *testing.T, orgID, slug string) *gatehouse.Workspace {
	t.Helper()
	w, err := f.store.CreateWorkspace(f.ctx, orgID, gatehouse.WorkspaceUpdate{
		Name: gatehouse.Val("Workspace " + slug), Slug: gatehouse.Val(slug)}, nil)
	if err != nil {
		t.Fatalf("CreateWorkspace(%s): %v", slug, err)
	}
	return w
}

// wantCode fails the test unless err has the wanted gatehouse error code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := gatehouse.ErrorCode(err); got != code {
		t.Fatalf("error code = %q (%v), want %q", got, err, code)
	}
}

// ok fails the test on a non-nil error.
func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// page returns a Page.
func page(offset, limit int) gatehouse.Page { return gatehouse.Page{Offset: offset, Limit: limit} }
