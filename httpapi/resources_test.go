package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Helpers shared by the workspace, guardrail, destination and tenancy tests.

// sub returns e bound to the subtest t, so that its checks fail t.
func (e *testEnv) sub(t testing.TB) *testEnv {
	c := *e
	c.t = t
	return &c
}

// runUnchanged runs fn as the subtest name, with e bound to it, and fails
// if fn changed the database.
func (e *testEnv) runUnchanged(t *testing.T, name string, fn func(t *testing.T, e *testEnv)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		e := e.sub(t)
		e.unchanged(name, func() { fn(t, e) })
	})
}

// tick advances the test clock by a second, so that what is created next
// sorts after what was created before.
func (e *testEnv) tick() { e.clock.Set(e.clock.Now().Add(time.Second)) }

// now is the test clock as the API renders it.
func (e *testEnv) now() string { return wireTime(e.clock.Now()) }

// resErr is a decoded error body.
type resErr struct {
	Code     int            `json:"code"`
	Message  string         `json:"message"`
	Metadata map[string]any `json:"metadata"`
}

// resWantError checks the status of an error response and that its message
// contains substr, and returns the error.
func resWantError(t testing.TB, r *response, status int, substr string) resErr {
	t.Helper()
	r.want(t, status)
	var body struct {
		Error resErr `json:"error"`
	}
	r.decode(t, &body)
	if body.Error.Code != status {
		t.Errorf("error.code = %d, want %d", body.Error.Code, status)
	}
	if !strings.Contains(body.Error.Message, substr) {
		t.Errorf("error message %q does not contain %q", body.Error.Message, substr)
	}
	return body.Error
}

// resStrings converts a JSON array of strings.
func resStrings(t testing.TB, v any) []string {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("%v (%T) is not an array", v, v)
	}
	out := make([]string, len(list))
	for i, s := range list {
		if out[i], ok = s.(string); !ok {
			t.Fatalf("%v is not an array of strings", v)
		}
	}
	return out
}

// resData returns the data object of a response.
func resData(t testing.TB, r *response) map[string]any {
	t.Helper()
	d, ok := r.json(t)["data"].(map[string]any)
	if !ok {
		t.Fatalf("no data object in %s", r.Body)
	}
	return d
}

// resList returns the data array and total_count of a list response.
func resList(t testing.TB, r *response) ([]map[string]any, int) {
	t.Helper()
	var body struct {
		Data       []map[string]any `json:"data"`
		TotalCount *int             `json:"total_count"`
	}
	r.decode(t, &body)
	if body.Data == nil {
		t.Fatalf("list without a data array: %s", r.Body)
	}
	if body.TotalCount == nil {
		t.Fatalf("list without total_count: %s", r.Body)
	}
	return body.Data, *body.TotalCount
}

// resField returns field of every item.
func resField(items []map[string]any, field string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i], _ = it[field].(string)
	}
	return out
}

// resSorted returns a sorted copy.
func resSorted(ss []string) []string {
	out := slices.Clone(ss)
	sort.Strings(out)
	return out
}

// resWantDeleted checks the exact body of a successful delete.
func resWantDeleted(t testing.TB, r *response) {
	t.Helper()
	r.want(t, http.StatusOK)
	if got := strings.TrimSpace(string(r.Body)); got != `{"deleted":true}` {
		t.Errorf("delete body = %s, want {\"deleted\":true}", got)
	}
}

// resKeys returns the sorted keys of an object.
func resKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// resWantFields fails unless obj has exactly the fields.
func resWantFields(t testing.TB, what string, obj map[string]any, fields string) {
	t.Helper()
	want := resSorted(strings.Fields(fields))
	if diff := cmp.Diff(want, resKeys(obj)); diff != "" {
		t.Errorf("%s fields (-want +got):\n%s", what, diff)
	}
}

// sendRawBody sends body verbatim with the given Content-Type ("" for none).
func (e *testEnv) sendRawBody(method, path, key, contentType, body string) *response {
	e.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return e.send(req)
}

// postWorkspace creates a workspace from a full body and returns it.
func (e *testEnv) postWorkspace(key string, body map[string]any) map[string]any {
	e.t.Helper()
	return resData(e.t, e.do("POST", "/api/v1/workspaces", key, body).want(e.t, http.StatusCreated))
}

// workspace returns a workspace by reference.
func (e *testEnv) workspace(key, ref string) map[string]any {
	e.t.Helper()
	return resData(e.t, e.do("GET", "/api/v1/workspaces/"+ref, key, nil).want(e.t, http.StatusOK))
}

// addMemberAs adds an organization member with a given role and returns its id.
func (e *testEnv) addMemberAs(key, email, role string) string {
	e.t.Helper()
	r := e.do("POST", "/api/v1/organization/members", key, map[string]any{"email": email, "role": role}).
		want(e.t, http.StatusCreated)
	return resData(e.t, r)["id"].(string)
}

// addToWorkspace adds organization members to a workspace.
func (e *testEnv) addToWorkspace(key, ws string, ids ...string) {
	e.t.Helper()
	e.do("POST", "/api/v1/workspaces/"+ws+"/members/add", key, map[string]any{"user_ids": ids}).want(e.t, http.StatusOK)
}

// workspaceMembers returns the user ids of a workspace's members.
func (e *testEnv) workspaceMembers(key, ws string) []string {
	e.t.Helper()
	items, total := resList(e.t, e.do("GET", "/api/v1/workspaces/"+ws+"/members?limit=100", key, nil).want(e.t, http.StatusOK))
	if total != len(items) {
		e.t.Errorf("members of %s: total_count %d, %d items", ws, total, len(items))
	}
	return resSorted(resField(items, "user_id"))
}

// count counts rows of a query.
func (e *testEnv) count(query string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.readDB().QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// resIDs returns n distinct user ids.
func resIDs(n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// resCopy returns a shallow copy of m.
func resCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// resPatched returns what a PATCH of body makes of the object cur: cur with
// the changes of apply, or of body itself when apply is nil.
func resPatched(cur, body, apply map[string]any) map[string]any {
	want := resCopy(cur)
	if apply == nil {
		apply = body
	}
	for k, v := range apply {
		want[k] = v
	}
	return want
}

// resBad builds a resBadInput; contentType is optional.
func resBad(name, method, path, body string, status int, substr string, contentType ...string) resBadInput {
	c := resBadInput{name: name, method: method, path: path, body: body, status: status, substr: substr}
	if len(contentType) > 0 {
		c.contentType = contentType[0]
	}
	return c
}

// resBadInput is one malformed request: it must be refused with status and a
// message containing substr, and change nothing.
type resBadInput struct {
	name        string
	method      string
	path        string
	body        string
	status      int
	substr      string
	contentType string // "" means application/json (none when the body is empty)
}

func (e *testEnv) runBadInput(t *testing.T, cases []resBadInput) {
	t.Helper()
	before := e.snapshot()
	for _, c := range cases {
		ct := c.contentType
		if ct == "" && c.body != "" {
			ct = "application/json"
		}
		t.Run(c.name, func(t *testing.T) {
			e := e.sub(t)
			resWantError(t, e.sendRawBody(c.method, c.path, e.mgmt, ct, c.body), c.status, c.substr)
			// Each snapshot is the "before" of the next case.
			if after := e.snapshot(); after != before {
				t.Errorf("%s changed the database:\nbefore:\n%s\nafter:\n%s", c.name, before, after)
				before = after
			}
		})
	}
}
