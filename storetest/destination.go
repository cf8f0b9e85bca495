package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"gatehouse"

	"github.com/google/uuid"
)

func testDestinations(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"CreateFindUpdateDelete", testDestinationLifecycle},
		{"Validation", testDestinationValidation},
		{"Fields", testDestinationFields},
		{"ConfigMerge", testDestinationConfigMerge},
		{"Headers", testDestinationHeaders},
		{"PerTypeLimit", testDestinationLimit},
		{"Pagination", testDestinationPagination},
		{"Tenancy", testDestinationTenancy},
		{"WorkspaceDelete", testDestinationWorkspaceDelete},
	})
}

// Secrets of the test destinations, long enough to be masked in part.
const (
	langfuseSecret = "sk-lf-SECRET-0123456789abcdef"
	langfusePublic = "pk-lf-public-0123456789"
	headerSecret   = "Bearer header-SECRET-42424242"
)

// langfuse returns a create request for a langfuse destination.
func langfuse(name string) gatehouse.DestinationCreate {
	return gatehouse.DestinationCreate{
		Type: "langfuse",
		DestinationUpdate: gatehouse.DestinationUpdate{
			Name: gatehouse.Val(name),
			Config: &gatehouse.ConfigPatch{
				Values: map[string]*string{"publicKey": new(langfusePublic), "secretKey": new(langfuseSecret)},
			},
		},
	}
}

// webhook returns a create request for a webhook destination.
func webhook(name string) gatehouse.DestinationCreate {
	return gatehouse.DestinationCreate{
		Type: "webhook",
		DestinationUpdate: gatehouse.DestinationUpdate{
			Name:   gatehouse.Val(name),
			Config: &gatehouse.ConfigPatch{Values: map[string]*string{"url": new("https://hooks.example.com/in")}},
		},
	}
}

// newDestination creates a destination.
func (f *fixture) newDestination(t *testing.T, orgID string, c gatehouse.DestinationCreate) *gatehouse.Destination {
	t.Helper()
	d, err := f.store.CreateDestination(f.ctx, orgID, c)
	if err != nil {
		t.Fatalf("CreateDestination(%s): %v", c.Type, err)
	}
	return d
}

// destinationIDs lists the ids of a workspace's live destinations and
// checks the total against them.
func (f *fixture) destinationIDs(t *testing.T, orgID, workspaceRef string) []string {
	t.Helper()
	list, total, err := f.store.FindDestinations(f.ctx, orgID, workspaceRef, page(0, 100))
	ok(t, err)
	if total != len(list) {
		t.Fatalf("FindDestinations: total %d for %d rows", total, len(list))
	}
	ids := []string{}
	for _, d := range list {
		ids = append(ids, d.ID)
	}
	return ids
}

func testDestinationLifecycle(t *testing.T, open Opener) {
	f := newFixture(t, open)
	c := langfuse("traces")
	c.Config.Headers, c.Config.HeadersSet = map[string]string{"Authorization": headerSecret}, true
	d := f.newDestination(t, f.org.ID, c)
	ws, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	now := f.clock.Now()
	want := &gatehouse.Destination{
		ID: d.ID, OrganizationID: f.org.ID, WorkspaceID: ws.ID, Name: new("traces"), Type: "langfuse",
		Config: gatehouse.DestinationConfig{
			Values: map[string]string{"publicKey": langfusePublic, "secretKey": langfuseSecret,
				"baseUrl": "https://us.cloud.langfuse.com"},
			Headers: map[string]string{"Authorization": headerSecret},
		},
		Enabled: true, SamplingRate: 1, Regions: []string{"global"}, CreatedAt: now, UpdatedAt: now,
	}
	wantEqual(t, "created destination", want, d)
	got, err := f.store.FindDestination(f.ctx, f.org.ID, d.ID)
	ok(t, err)
	wantEqual(t, "found destination (secrets in plaintext)", want, got)
	masked := got.Config.Masked()
	if v := masked.Values["secretKey"]; v != "********cdef" {
		t.Fatalf("masked secretKey = %q", v)
	}
	if v := masked.Values["publicKey"]; v != langfusePublic {
		t.Fatalf("masked publicKey = %q, want it shown", v)
	}
	if v := masked.Headers["Authorization"]; strings.Contains(v, "SECRET") {
		t.Fatalf("masked header = %q", v)
	}

	f.clock.Add(time.Minute)
	got, err = f.store.UpdateDestination(f.ctx, f.org.ID, d.ID, gatehouse.DestinationUpdate{
		Name: gatehouse.Val("renamed"), Enabled: gatehouse.Val(false)})
	ok(t, err)
	want.Name, want.Enabled, want.UpdatedAt = new("renamed"), false, f.clock.Now()
	wantEqual(t, "updated destination", want, got)
	got, err = f.store.FindDestination(f.ctx, f.org.ID, d.ID)
	ok(t, err)
	wantEqual(t, "destination after update", want, got)
	if ids := f.destinationIDs(t, f.org.ID, ""); !slices.Equal(ids, []string{d.ID}) {
		t.Fatalf("FindDestinations = %v, want [%s]", ids, d.ID)
	}

	f.clock.Add(time.Minute)
	ok(t, f.store.DeleteDestination(f.ctx, f.org.ID, d.ID))
	_, err = f.store.FindDestination(f.ctx, f.org.ID, d.ID)
	wantMessage(t, err, gatehouse.ENOTFOUND, "destination not found")
	_, err = f.store.UpdateDestination(f.ctx, f.org.ID, d.ID, gatehouse.DestinationUpdate{Name: gatehouse.Val("x")})
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantCode(t, f.store.DeleteDestination(f.ctx, f.org.ID, d.ID), gatehouse.ENOTFOUND)
	if ids := f.destinationIDs(t, f.org.ID, ""); len(ids) != 0 {
		t.Fatalf("FindDestinations after delete = %v, want none", ids)
	}
}

func testDestinationValidation(t *testing.T, open Opener) {
	f := newFixture(t, open)
	for _, tc := range []struct {
		name   string
		change func(c *gatehouse.DestinationCreate)
		code   string
		prefix string
	}{
		{"name missing", func(c *gatehouse.DestinationCreate) { c.Name = gatehouse.Patch[string]{} }, gatehouse.EINVALID, "name: is required"},
		{"type missing", func(c *gatehouse.DestinationCreate) { c.Type = "" }, gatehouse.EINVALID, "type: is required"},
		{"type unknown", func(c *gatehouse.DestinationCreate) { c.Type = "carrier-pigeon" }, gatehouse.EINVALID, "type: "},
		{"config missing", func(c *gatehouse.DestinationCreate) { c.Config = nil }, gatehouse.EINVALID, "config: is required"},
		{"required key missing", func(c *gatehouse.DestinationCreate) { delete(c.Config.Values, "secretKey") },
			gatehouse.EINVALID, "config.secretKey: "},
		{"unknown key", func(c *gatehouse.DestinationCreate) { c.Config.Values["apiKey"] = new("x") },
			gatehouse.EINVALID, "config.apiKey: "},
		{"bad url", func(c *gatehouse.DestinationCreate) { c.Config.Values["baseUrl"] = new("ftp://x") },
			gatehouse.EINVALID, "config.baseUrl: "},
		{"sampling rate", func(c *gatehouse.DestinationCreate) { c.SamplingRate = gatehouse.Val(0.0) },
			gatehouse.EINVALID, "sampling_rate: "},
		{"regions empty", func(c *gatehouse.DestinationCreate) { c.Regions = gatehouse.Val([]string{}) },
			gatehouse.EINVALID, "regions: "},
		{"unknown workspace", func(c *gatehouse.DestinationCreate) { c.WorkspaceID = "nope" },
			gatehouse.ENOTFOUND, "workspace not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := langfuse("x")
			tc.change(&c)
			_, err := f.store.CreateDestination(f.ctx, f.org.ID, c)
			wantMessage(t, err, tc.code, tc.prefix)
		})
	}
	other := f.newOrg(t, "Other")
	foreign := f.newWorkspace(t, other.ID, "foreign")
	c := langfuse("x")
	c.WorkspaceID = foreign.ID
	_, err := f.store.CreateDestination(f.ctx, f.org.ID, c)
	wantCode(t, err, gatehouse.ENOTFOUND)
	if ids := f.destinationIDs(t, f.org.ID, ""); len(ids) != 0 {
		t.Fatalf("failed creates left destinations %v", ids)
	}

	d := f.newDestination(t, f.org.ID, langfuse("x"))
	for _, u := range []gatehouse.DestinationUpdate{
		{Name: gatehouse.Null[string]()},
		{Enabled: gatehouse.Null[bool]()},
		{SamplingRate: gatehouse.Val(2.0)},
		{Config: &gatehouse.ConfigPatch{Values: map[string]*string{"secretKey": nil}}},
	} {
		_, err := f.store.UpdateDestination(f.ctx, f.org.ID, d.ID, u)
		wantCode(t, err, gatehouse.EINVALID)
	}
	got, err := f.store.FindDestination(f.ctx, f.org.ID, d.ID)
	ok(t, err)
	wantEqual(t, "destination after failed updates", d, got)
}

func testDestinationFields(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws := f.newWorkspace(t, f.org.ID, "team")
	key := f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: ws.ID})
	c := gatehouse.DestinationCreate{Type: "s3", WorkspaceID: ws.Slug, DestinationUpdate: gatehouse.DestinationUpdate{
		Name: gatehouse.Val("bucket"),
		Config: &gatehouse.ConfigPatch{Values: map[string]*string{
			"accessKeyId": new("AKIAEXAMPLE"), "secretAccessKey": new("s3-SECRET-abcdefgh"), "bucketName": new("traces"),
			"sessionToken": new("session-SECRET-1234"), "region": new("eu-west-1")}},
		Enabled: gatehouse.Val(false), PrivacyMode: gatehouse.Val(true), SamplingRate: gatehouse.Val(0.25),
		APIKeyHashes: gatehouse.Val([]string{key.Hash}),
		FilterRules: gatehouse.Val(gatehouse.FilterRules{Groups: []gatehouse.FilterRule{{Logic: "or", Rules: []gatehouse.Condition{
			{Field: "model", Operator: "starts_with", Value: "openai/"},
			{Field: "total_cost", Operator: "gt", Value: 0.5},
			{Field: "user_id", Operator: "exists"},
		}}}}),
		Regions:                           gatehouse.Val([]string{"eu", "us"}),
		BroadcastGenerationCost:           gatehouse.Val(true),
		BroadcastGenerationIdentity:       gatehouse.Val(true),
		BroadcastGenerationRequestContext: gatehouse.Val(true),
	}}
	d := f.newDestination(t, f.org.ID, c)
	if d.WorkspaceID != ws.ID || !slices.Equal(d.Regions, []string{"europe", "us"}) || d.FilterRules == nil ||
		!*d.FilterRules.Enabled || d.Config.Values["prefix"] != "openrouter-traces" {
		t.Fatalf("created destination = %+v", d)
	}
	got, err := f.store.FindDestination(f.ctx, f.org.ID, d.ID)
	ok(t, err)
	wantEqual(t, "found destination", d, got)

	got, err = f.store.UpdateDestination(f.ctx, f.org.ID, d.ID, gatehouse.DestinationUpdate{
		FilterRules: gatehouse.Null[gatehouse.FilterRules](), APIKeyHashes: gatehouse.Null[[]string](),
		Regions: gatehouse.Val([]string{"global"}), SamplingRate: gatehouse.Val(1.0), PrivacyMode: gatehouse.Val(false)})
	ok(t, err)
	d.FilterRules, d.APIKeyHashes, d.Regions, d.SamplingRate, d.PrivacyMode = nil, nil, []string{"global"}, 1, false
	wantEqual(t, "updated destination", d, got)
	got, err = f.store.FindDestination(f.ctx, f.org.ID, d.ID)
	ok(t, err)
	wantEqual(t, "destination after update", d, got)

	_, err = f.store.UpdateDestination(f.ctx, f.org.ID, d.ID, gatehouse.DestinationUpdate{APIKeyHashes: gatehouse.Val([]string{})})
	ok(t, err)
	if got, _ := f.store.FindDestination(f.ctx, f.org.ID, d.ID); got.APIKeyHashes == nil || len(got.APIKeyHashes) != 0 {
		t.Fatalf("api_key_hashes [] read back as %#v, want an empty list", got.APIKeyHashes)
	}
}

func testDestinationConfigMerge(t *testing.T, open Opener) {
	f := newFixture(t, open)
	c := gatehouse.DestinationCreate{Type: "langsmith", DestinationUpdate: gatehouse.DestinationUpdate{
		Name: gatehouse.Val("smith"),
		Config: &gatehouse.ConfigPatch{Values: map[string]*string{
			"apiKey": new("lsv2-SECRET-aaaabbbbcccc"), "workspaceId": new("ws-1"), "project": new("alpha")}},
	}}
	d := f.newDestination(t, f.org.ID, c)
	update := func(values map[string]*string) (*gatehouse.Destination, error) {
		t.Helper()
		return f.store.UpdateDestination(f.ctx, f.org.ID, d.ID, gatehouse.DestinationUpdate{
			Config: &gatehouse.ConfigPatch{Values: values}})
	}
	check := func(want map[string]string) {
		t.Helper()
		got, err := f.store.FindDestination(f.ctx, f.org.ID, d.ID)
		ok(t, err)
		wantEqual(t, "config", want, got.Config.Values)
	}
	const endpoint = "https://api.smith.langchain.com"

	// The masked secret sent back, as a client echoes a GET, keeps it.
	masked := d.Config.Masked().Values["apiKey"]
	_, err := update(map[string]*string{"apiKey": &masked})
	ok(t, err)
	check(map[string]string{"apiKey": "lsv2-SECRET-aaaabbbbcccc", "workspaceId": "ws-1", "project": "alpha", "endpoint": endpoint})
	// But not to move the destination: that needs the secret in clear.
	_, err = update(map[string]*string{"apiKey": &masked, "project": new("beta")})
	wantMessage(t, err, gatehouse.EINVALID, "changing project changes where this destination sends its secrets: send config.apiKey again")

	// A new value replaces it; keys not sent stay.
	_, err = update(map[string]*string{"apiKey": new("lsv2-NEW-ddddeeeeffff"), "project": new("beta")})
	ok(t, err)
	check(map[string]string{"apiKey": "lsv2-NEW-ddddeeeeffff", "workspaceId": "ws-1", "project": "beta", "endpoint": endpoint})

	// null removes an optional key; one with a default returns to it.
	_, err = update(map[string]*string{"workspaceId": nil, "project": nil, "apiKey": new("lsv2-NEW-ddddeeeeffff")})
	ok(t, err)
	check(map[string]string{"apiKey": "lsv2-NEW-ddddeeeeffff", "project": "main", "endpoint": endpoint})

	// Unknown keys and required keys removed are refused, changing nothing.
	_, err = update(map[string]*string{"bogus": new("x"), "project": new("gamma")})
	wantMessage(t, err, gatehouse.EINVALID, "config.bogus: ")
	_, err = update(map[string]*string{"apiKey": nil})
	wantMessage(t, err, gatehouse.EINVALID, "config.apiKey: ")
	check(map[string]string{"apiKey": "lsv2-NEW-ddddeeeeffff", "project": "main", "endpoint": endpoint})
}

func testDestinationHeaders(t *testing.T, open Opener) {
	f := newFixture(t, open)
	c := webhook("hook")
	c.Config.Headers = map[string]string{"Authorization": headerSecret, "X-Team": "platform-team"}
	c.Config.HeadersSet = true
	d := f.newDestination(t, f.org.ID, c)
	headers := func() map[string]string {
		t.Helper()
		got, err := f.store.FindDestination(f.ctx, f.org.ID, d.ID)
		ok(t, err)
		return got.Config.Headers
	}
	wantEqual(t, "headers", c.Config.Headers, headers())

	// Headers are replaced whole; a masked value sent back keeps its value.
	masked := d.Config.Masked().Headers
	_, err := f.store.UpdateDestination(f.ctx, f.org.ID, d.ID, gatehouse.DestinationUpdate{Config: &gatehouse.ConfigPatch{
		Headers: map[string]string{"Authorization": masked["Authorization"], "X-New": "value-12345678"}, HeadersSet: true}})
	ok(t, err)
	wantEqual(t, "headers after update", map[string]string{"Authorization": headerSecret, "X-New": "value-12345678"}, headers())

	// A config update without headers leaves them alone.
	_, err = f.store.UpdateDestination(f.ctx, f.org.ID, d.ID, gatehouse.DestinationUpdate{Config: &gatehouse.ConfigPatch{
		Values: map[string]*string{"method": new("PUT")}}})
	ok(t, err)
	wantEqual(t, "headers after a values update", map[string]string{"Authorization": headerSecret, "X-New": "value-12345678"}, headers())

	// null clears them.
	_, err = f.store.UpdateDestination(f.ctx, f.org.ID, d.ID, gatehouse.DestinationUpdate{Config: &gatehouse.ConfigPatch{HeadersSet: true}})
	ok(t, err)
	if h := headers(); h != nil {
		t.Fatalf("headers after null = %v, want nil", h)
	}
	got, err := f.store.FindDestination(f.ctx, f.org.ID, d.ID)
	ok(t, err)
	if got.Config.Values["method"] != "PUT" || got.Config.Values["url"] != "https://hooks.example.com/in" {
		t.Fatalf("config = %v", got.Config.Values)
	}
}

func testDestinationLimit(t *testing.T, open Opener) {
	f := newFixture(t, open)
	var hooks []*gatehouse.Destination
	for range gatehouse.MaxDestinationsPerType {
		hooks = append(hooks, f.newDestination(t, f.org.ID, webhook("hook")))
	}
	_, err := f.store.CreateDestination(f.ctx, f.org.ID, webhook("one too many"))
	wantMessage(t, err, gatehouse.ECONFLICT, "the workspace already has 5 destinations of type webhook; delete one first")
	f.newDestination(t, f.org.ID, langfuse("another type")) // the limit is per type

	ws := f.newWorkspace(t, f.org.ID, "team")
	c := webhook("elsewhere")
	c.WorkspaceID = ws.ID
	f.newDestination(t, f.org.ID, c) // and per workspace

	ok(t, f.store.DeleteDestination(f.ctx, f.org.ID, hooks[2].ID))
	f.newDestination(t, f.org.ID, webhook("replacement")) // deleted ones do not count
	_, err = f.store.CreateDestination(f.ctx, f.org.ID, webhook("one too many"))
	wantCode(t, err, gatehouse.ECONFLICT)
	if n := len(f.destinationIDs(t, f.org.ID, "")); n != gatehouse.MaxDestinationsPerType+1 {
		t.Fatalf("live destinations = %d, want %d", n, gatehouse.MaxDestinationsPerType+1)
	}
}

func testDestinationPagination(t *testing.T, open Opener) {
	f := newFixture(t, open)
	var made []*gatehouse.Destination
	for i, step := range []time.Duration{0, 0, time.Millisecond, 0, time.Hour, 0} {
		f.clock.Add(step)
		c := webhook("hook")
		if i%2 == 1 {
			c = langfuse("lf")
		}
		made = append(made, f.newDestination(t, f.org.ID, c))
	}
	ok(t, f.store.DeleteDestination(f.ctx, f.org.ID, made[3].ID))
	made = slices.Delete(made, 3, 4)
	slices.SortStableFunc(made, func(a, b *gatehouse.Destination) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	want := make([]string, len(made))
	for i, d := range made {
		want[i] = d.ID
	}
	var got []string
	for offset := 0; offset <= len(made); offset += 2 {
		list, total, err := f.store.FindDestinations(f.ctx, f.org.ID, "default", page(offset, 2))
		ok(t, err)
		if total != len(made) {
			t.Fatalf("total = %d, want %d (live only)", total, len(made))
		}
		for _, d := range list {
			got = append(got, d.ID)
		}
	}
	wantEqual(t, "ids in page order", want, got)
}

func testDestinationTenancy(t *testing.T, open Opener) {
	f := newFixture(t, open)
	mine := f.newDestination(t, f.org.ID, langfuse("mine"))
	other := f.newOrg(t, "Other")
	theirs := f.newDestination(t, other.ID, langfuse("theirs"))
	for _, id := range []string{theirs.ID, "not-a-uuid", "", uuid.NewString(), mine.ID + "0"} {
		_, err := f.store.FindDestination(f.ctx, f.org.ID, id)
		wantMessage(t, err, gatehouse.ENOTFOUND, "destination not found")
		_, err = f.store.UpdateDestination(f.ctx, f.org.ID, id, gatehouse.DestinationUpdate{Name: gatehouse.Val("x")})
		wantCode(t, err, gatehouse.ENOTFOUND)
		wantCode(t, f.store.DeleteDestination(f.ctx, f.org.ID, id), gatehouse.ENOTFOUND)
	}
	if ids := f.destinationIDs(t, f.org.ID, ""); !slices.Equal(ids, []string{mine.ID}) {
		t.Fatalf("FindDestinations = %v, want only %s", ids, mine.ID)
	}
	got, err := f.store.FindDestination(f.ctx, other.ID, theirs.ID)
	ok(t, err)
	if *got.Name != "theirs" {
		t.Fatalf("another organization renamed the destination to %q", *got.Name)
	}
	otherWS, err := f.store.FindWorkspace(f.ctx, other.ID, "")
	ok(t, err)
	_, _, err = f.store.FindDestinations(f.ctx, f.org.ID, otherWS.ID, page(0, 10))
	wantCode(t, err, gatehouse.ENOTFOUND)
	// The other organization's limit is its own.
	for range gatehouse.MaxDestinationsPerType - 1 {
		f.newDestination(t, other.ID, langfuse("theirs"))
	}
	f.newDestination(t, f.org.ID, langfuse("mine too"))
}

func testDestinationWorkspaceDelete(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws := f.newWorkspace(t, f.org.ID, "team")
	var gone []*gatehouse.Destination
	for _, c := range []gatehouse.DestinationCreate{webhook("a"), langfuse("b")} {
		c.WorkspaceID = ws.ID
		gone = append(gone, f.newDestination(t, f.org.ID, c))
	}
	kept := f.newDestination(t, f.org.ID, webhook("default"))
	ok(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, ws.ID, false))
	for _, d := range gone {
		_, err := f.store.FindDestination(f.ctx, f.org.ID, d.ID)
		wantCode(t, err, gatehouse.ENOTFOUND)
		wantCode(t, f.store.DeleteDestination(f.ctx, f.org.ID, d.ID), gatehouse.ENOTFOUND)
	}
	_, err := f.store.FindDestination(f.ctx, f.org.ID, kept.ID)
	ok(t, err)
	_, _, err = f.store.FindDestinations(f.ctx, f.org.ID, ws.ID, page(0, 10))
	wantCode(t, err, gatehouse.ENOTFOUND)
	if ids := f.destinationIDs(t, f.org.ID, ""); !slices.Equal(ids, []string{kept.ID}) {
		t.Fatalf("default workspace destinations = %v, want [%s]", ids, kept.ID)
	}
}
