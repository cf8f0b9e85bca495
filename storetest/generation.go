package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"gatehouse"
)

// testGenerations checks what the ledger keeps of generations besides
// their cost: attribution, content and feedback.
func testGenerations(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"Attribution", testGenerationAttribution},
		{"ContentWhereLogged", testGenerationContentWhereLogged},
		{"ContentPrivacy", testGenerationContentPrivacy},
		{"ContentSampled", testGenerationContentSampled},
		{"ContentCutoffAndPrune", testGenerationContentPrune},
		{"ContentReseal", testGenerationContentReseal},
		{"ContentTenancy", testGenerationContentTenancy},
		{"Feedback", testGenerationFeedback},
		{"FeedbackInvalid", testGenerationFeedbackInvalid},
	})
}

// settleWith reserves for k and settles g.
func (f *fixture) settleWith(t *testing.T, k *gatehouse.Key, g *gatehouse.Generation) {
	t.Helper()
	r := f.mustReserve(t, k, g.Cost, g.BYOK, f.budgets(t, k))
	ok(t, f.store.Settle(f.ctx, r.ID, g))
}

// logIO turns the I/O logging of a workspace on or off, at a sampling rate.
func (f *fixture) logIO(t *testing.T, orgID, workspace string, on bool, rate float64) {
	t.Helper()
	_, err := f.store.UpdateWorkspace(f.ctx, orgID, workspace, gatehouse.WorkspaceUpdate{
		IsObservabilityIOLoggingEnabled: gatehouse.Val(on), IOLoggingSamplingRate: gatehouse.Val(rate)})
	ok(t, err)
}

// withContent returns a generation of k that carries content.
func withContent(k *gatehouse.Key, text string) *gatehouse.Generation {
	g := generation(k, cents(1), false)
	completion, reasoning := "You said: "+text, "thinking about "+text
	g.Content = &gatehouse.GenerationContent{
		Messages:   json.RawMessage(`[{"role":"user","content":` + mustJSON(text) + `}]`),
		Completion: &completion, Reasoning: &reasoning,
	}
	return g
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// content reads a generation's content as of cutoff.
func (f *fixture) content(t *testing.T, orgID, id string, cutoff time.Time) *gatehouse.StoredContent {
	t.Helper()
	sc, err := f.store.FindGenerationContent(f.ctx, orgID, id, cutoff)
	ok(t, err)
	return sc
}

func testGenerationAttribution(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	g := generation(k, cents(2), false)
	g.HTTPReferer, g.AppTitle, g.UserAgent = new("https://app.example.com/chat?x=1"), new("Example App"), new("curl/8.5")
	g.ExternalUser = new("end-user-7")
	f.settleWith(t, k, g)
	found, err := f.store.FindGeneration(f.ctx, f.org.ID, g.ID)
	ok(t, err)
	wantEqual(t, "generation without an application", g, found)

	// The organization's application of the referer's origin: the one its
	// OAuth codes name.
	code := f.newCode(t, nil, gatehouse.AuthCodeCreate{CallbackURL: "https://app.example.com/oauth/callback"})
	found, err = f.store.FindGeneration(f.ctx, f.org.ID, g.ID)
	ok(t, err)
	if found.AppID == nil || *found.AppID != code.AppID {
		t.Fatalf("AppID = %v, want the application %d of https://app.example.com", found.AppID, code.AppID)
	}
	// Another origin, or a referer that is no URL, names no application.
	for _, ref := range []string{"https://other.example.com/", "app.example.com", "ftp://app.example.com/x"} {
		g := generation(k, cents(1), false)
		g.HTTPReferer = new(ref)
		f.settleWith(t, k, g)
		found, err := f.store.FindGeneration(f.ctx, f.org.ID, g.ID)
		ok(t, err)
		if found.AppID != nil || *found.HTTPReferer != ref {
			t.Errorf("referer %q: AppID = %v, HTTPReferer = %v; want no application and the referer kept", ref, found.AppID, *found.HTTPReferer)
		}
	}
}

func testGenerationContentWhereLogged(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	f.logIO(t, f.org.ID, k.WorkspaceID, true, 1)
	g := withContent(k, "hello there")
	broken := "the client disconnected before the answer was complete"
	g.Content.Error = &gatehouse.GenerationError{Message: broken, Provider: new("openai")}
	f.settleWith(t, k, g)

	sc := f.content(t, f.org.ID, g.ID, f.clock.Now().Add(-time.Hour))
	if !sc.Logged || sc.Generation.ID != g.ID {
		t.Fatalf("stored content: logged %t, generation %s; want logged, %s", sc.Logged, sc.Generation.ID, g.ID)
	}
	wantEqual(t, "content", g.Content, sc.Content)
	got, err := sc.Readable(time.Hour)
	ok(t, err)
	wantEqual(t, "readable content", g.Content, got)

	// A generation without content (its call kept none) has none.
	plain := generation(k, cents(1), false)
	f.settleWith(t, k, plain)
	sc = f.content(t, f.org.ID, plain.ID, f.clock.Now().Add(-time.Hour))
	if sc.Content != nil {
		t.Errorf("content of a generation settled without any: %+v", sc.Content)
	}
	_, err = sc.Readable(time.Hour)
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testGenerationContentPrivacy(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	// I/O logging is off by default: the workspace is private.
	private := withContent(k, "not for the record")
	f.settleWith(t, k, private)
	sc := f.content(t, f.org.ID, private.ID, f.clock.Now().Add(-time.Hour))
	if sc.Logged || sc.Content != nil {
		t.Fatalf("private workspace: logged %t, content %+v; want neither", sc.Logged, sc.Content)
	}
	_, err := sc.Readable(time.Hour)
	wantCode(t, err, gatehouse.EFORBIDDEN)

	// Logging from now on stores later calls only.
	f.logIO(t, f.org.ID, k.WorkspaceID, true, 1)
	logged := withContent(k, "for the record")
	f.settleWith(t, k, logged)
	if sc := f.content(t, f.org.ID, private.ID, f.clock.Now().Add(-time.Hour)); sc.Content != nil {
		t.Errorf("a call made while private got content once logging started: %+v", sc.Content)
	}
	if sc := f.content(t, f.org.ID, logged.ID, f.clock.Now().Add(-time.Hour)); sc.Content == nil {
		t.Fatal("no content for a call made while the workspace logged I/O")
	}

	// Turning logging off again hides what was stored.
	f.logIO(t, f.org.ID, k.WorkspaceID, false, 1)
	sc = f.content(t, f.org.ID, logged.ID, f.clock.Now().Add(-time.Hour))
	if sc.Logged {
		t.Error("the workspace still logs I/O after turning it off")
	}
	_, err = sc.Readable(time.Hour)
	wantCode(t, err, gatehouse.EFORBIDDEN)

	// Another workspace's setting does not count.
	w := f.newWorkspace(t, f.org.ID, "loud")
	f.logIO(t, f.org.ID, w.ID, true, 1)
	again := withContent(k, "still private")
	f.settleWith(t, k, again)
	if sc := f.content(t, f.org.ID, again.ID, f.clock.Now().Add(-time.Hour)); sc.Content != nil || sc.Logged {
		t.Errorf("content stored under another workspace's setting: %+v", sc)
	}
}

// testGenerationContentSampled: a workspace logs a fraction of its calls;
// at the lowest rate, almost none of 40 (the chance that 3 or more are
// kept is below one in a million).
func testGenerationContentSampled(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	f.logIO(t, f.org.ID, k.WorkspaceID, true, 0.0001)
	kept := 0
	for i := range 40 {
		g := withContent(k, "call "+mustJSON(i))
		f.settleWith(t, k, g)
		if f.content(t, f.org.ID, g.ID, f.clock.Now().Add(-time.Hour)).Content != nil {
			kept++
		}
	}
	if kept > 2 {
		t.Errorf("kept the content of %d of 40 calls at a sampling rate of 0.0001", kept)
	}
}

func testGenerationContentPrune(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	f.logIO(t, f.org.ID, k.WorkspaceID, true, 1)
	start := f.clock.Now()
	var gens []*gatehouse.Generation
	for i := range 5 {
		f.clock.Set(start.Add(time.Duration(i) * time.Hour))
		g := withContent(k, "call at hour "+mustJSON(i))
		f.settleWith(t, k, g)
		gens = append(gens, g)
	}
	// Reads honour the cutoff before pruning has run.
	cutoff := start.Add(2 * time.Hour)
	for i, g := range gens {
		if has := f.content(t, f.org.ID, g.ID, cutoff).Content != nil; has != (i >= 2) {
			t.Errorf("generation of hour %d: content %t with the cutoff at hour 2", i, has)
		}
	}
	// Pruning deletes what is older than the cutoff, a bounded batch at a
	// time, oldest first.
	n, err := f.store.PruneGenerationContent(f.ctx, cutoff, 1)
	wantCount(t, "first prune", n, err, 1)
	if f.content(t, f.org.ID, gens[0].ID, start).Content != nil || f.content(t, f.org.ID, gens[1].ID, start).Content == nil {
		t.Fatal("the first batch of one did not delete exactly the oldest content")
	}
	n, err = f.store.PruneGenerationContent(f.ctx, cutoff, 100)
	wantCount(t, "second prune", n, err, 1)
	n, err = f.store.PruneGenerationContent(f.ctx, cutoff, 100)
	wantCount(t, "nothing left to prune", n, err, 0)
	for i, g := range gens {
		if has := f.content(t, f.org.ID, g.ID, start).Content != nil; has != (i >= 2) {
			t.Errorf("generation of hour %d: content %t after pruning before hour 2", i, has)
		}
	}
	// The ledger entries stay.
	for _, g := range gens {
		_, err := f.store.FindGeneration(f.ctx, f.org.ID, g.ID)
		ok(t, err)
	}
}

func testGenerationContentReseal(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	f.logIO(t, f.org.ID, k.WorkspaceID, true, 1)
	var gens []*gatehouse.Generation
	for i := range 3 {
		g := withContent(k, "resealed "+mustJSON(i))
		f.settleWith(t, k, g)
		gens = append(gens, g)
	}
	total, after := 0, ""
	for {
		r, err := f.store.ResealGenerationContent(f.ctx, after, 2)
		ok(t, err)
		if r.Resealed+r.Unreadable == 0 {
			break
		}
		if r.Unreadable != 0 {
			t.Fatalf("%d contents unreadable", r.Unreadable)
		}
		total, after = total+r.Resealed, r.Last
	}
	if total != 3 {
		t.Fatalf("re-sealed %d contents, want 3", total)
	}
	for _, g := range gens {
		wantEqual(t, "content after re-sealing", g.Content, f.content(t, f.org.ID, g.ID, time.Time{}).Content)
	}
}

func testGenerationContentTenancy(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	f.logIO(t, f.org.ID, k.WorkspaceID, true, 1)
	g := withContent(k, "ours")
	f.settleWith(t, k, g)
	other := f.newOrg(t, "Other")
	_, err := f.store.FindGenerationContent(f.ctx, other.ID, g.ID, time.Time{})
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.FindGenerationContent(f.ctx, f.org.ID, "gen-unknown", time.Time{})
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testGenerationFeedback(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	g := generation(k, cents(1), false)
	f.settleWith(t, k, g)
	user := "user-1"
	ctx := gatehouse.WithActor(f.ctx, gatehouse.Actor{KeyHash: "mgmt-hash", UserID: &user})
	comment := "too slow\nand wrong"
	fb, err := f.store.CreateFeedback(ctx, f.org.ID, gatehouse.FeedbackCreate{GenerationID: g.ID,
		Category: gatehouse.FeedbackLatency, Comment: &comment})
	ok(t, err)
	if fb.ID == "" || fb.GenerationID != g.ID || fb.KeyHash != "mgmt-hash" || fb.UserID == nil || *fb.UserID != user ||
		!fb.CreatedAt.Equal(f.clock.Now()) {
		t.Fatalf("feedback = %+v", fb)
	}
	f.clock.Add(time.Second)
	second, err := f.store.CreateFeedback(ctx, f.org.ID, gatehouse.FeedbackCreate{GenerationID: g.ID, Category: gatehouse.FeedbackOther})
	ok(t, err)
	list, total, err := f.store.FindFeedback(f.ctx, f.org.ID, g.ID, gatehouse.Page{Limit: 10})
	ok(t, err)
	if total != 2 {
		t.Fatalf("total = %d, want 2", total)
	}
	wantEqual(t, "feedback, oldest first", []*gatehouse.Feedback{fb, second}, list)
	page, total, err := f.store.FindFeedback(f.ctx, f.org.ID, g.ID, gatehouse.Page{Offset: 1, Limit: 1})
	ok(t, err)
	if total != 2 || len(page) != 1 || page[0].ID != second.ID {
		t.Errorf("second page = %+v (total %d), want the second feedback", page, total)
	}

	// Audited, with ids and field names only.
	entries, _, err := f.store.FindAuditEntries(f.ctx, f.org.ID, gatehouse.AuditFilter{
		ResourceType: gatehouse.ResourceGeneration, Page: gatehouse.Page{Limit: 10}})
	ok(t, err)
	if len(entries) != 2 {
		t.Fatalf("audit entries = %d, want 2", len(entries))
	}
	e := entries[1] // newest first
	if e.Operation != gatehouse.OpGenerationFeedback || len(e.ResourceIDs) != 1 || e.ResourceIDs[0] != g.ID ||
		e.ActorKeyHash == nil || *e.ActorKeyHash != "mgmt-hash" || e.Details["feedback_id"] != fb.ID {
		t.Errorf("audit entry = %+v", e)
	}
	if b, _ := json.Marshal(e.Details); string(b) != `{"feedback_id":"`+fb.ID+`","fields":["category","comment"]}` {
		t.Errorf("audit details = %s: want the feedback's id and field names, never the comment", b)
	}

	// Another organization's generation is unknown.
	other := f.newOrg(t, "Other")
	_, err = f.store.CreateFeedback(ctx, other.ID, gatehouse.FeedbackCreate{GenerationID: g.ID, Category: gatehouse.FeedbackOther})
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, _, err = f.store.FindFeedback(f.ctx, other.ID, g.ID, gatehouse.Page{Limit: 10})
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.CreateFeedback(ctx, f.org.ID, gatehouse.FeedbackCreate{GenerationID: "gen-unknown", Category: gatehouse.FeedbackOther})
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testGenerationFeedbackInvalid(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	g := generation(k, cents(1), false)
	f.settleWith(t, k, g)
	long := make([]rune, gatehouse.MaxFeedbackCommentLength+1)
	for i := range long {
		long[i] = 'é'
	}
	for _, tc := range []struct {
		name   string
		create gatehouse.FeedbackCreate
		prefix string
	}{
		{"no generation", gatehouse.FeedbackCreate{Category: gatehouse.FeedbackOther}, "generation_id: is required"},
		{"NUL in the id", gatehouse.FeedbackCreate{GenerationID: "gen-\x00", Category: gatehouse.FeedbackOther}, "generation_id: must be UTF-8"},
		{"unknown category", gatehouse.FeedbackCreate{GenerationID: g.ID, Category: "rude"}, "category: must be one of"},
		{"no category", gatehouse.FeedbackCreate{GenerationID: g.ID}, "category: must be one of"},
		{"long comment", gatehouse.FeedbackCreate{GenerationID: g.ID, Category: gatehouse.FeedbackOther, Comment: new(string(long))}, "comment: must be at most"},
		{"control character", gatehouse.FeedbackCreate{GenerationID: g.ID, Category: gatehouse.FeedbackOther, Comment: new("a\x1bb")}, "comment: must not contain control"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.store.CreateFeedback(f.ctx, f.org.ID, tc.create)
			wantMessage(t, err, gatehouse.EINVALID, tc.prefix)
		})
	}
	_, total, err := f.store.FindFeedback(f.ctx, f.org.ID, g.ID, gatehouse.Page{Limit: 10})
	wantCount(t, "feedback after invalid submissions", total, err, 0)
}

// StoreContent records, in a new organization of s whose default workspace
// logs I/O, a generation whose prompt and completion are the given texts,
// and checks that they read back: for an engine's test that they are
// sealed at rest.
func StoreContent(t *testing.T, s gatehouse.Store, prompt, completion string) *gatehouse.Generation {
	t.Helper()
	f := &fixture{ctx: context.Background(), store: s, clock: NewClock(time.Now())}
	f.org = f.newOrg(t, "Content at rest")
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	f.logIO(t, f.org.ID, k.WorkspaceID, true, 1)
	g := withContent(k, prompt)
	g.Content.Completion, g.Content.Reasoning = &completion, nil
	f.settleWith(t, k, g)
	wantEqual(t, "content read back", g.Content, f.content(t, f.org.ID, g.ID, time.Time{}).Content)
	return g
}
