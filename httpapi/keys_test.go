package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
)

// keyView is the API-key object of /keys, decoded.
type keyView struct {
	Hash               string   `json:"hash"`
	Name               string   `json:"name"`
	Label              string   `json:"label"`
	Disabled           bool     `json:"disabled"`
	Limit              *float64 `json:"limit"`
	LimitRemaining     *float64 `json:"limit_remaining"`
	LimitReset         *string  `json:"limit_reset"`
	IncludeBYOKInLimit bool     `json:"include_byok_in_limit"`
	Usage              float64  `json:"usage"`
	UsageDaily         float64  `json:"usage_daily"`
	UsageWeekly        float64  `json:"usage_weekly"`
	UsageMonthly       float64  `json:"usage_monthly"`
	BYOKUsage          float64  `json:"byok_usage"`
	BYOKUsageDaily     float64  `json:"byok_usage_daily"`
	BYOKUsageWeekly    float64  `json:"byok_usage_weekly"`
	BYOKUsageMonthly   float64  `json:"byok_usage_monthly"`
	CreatedAt          string   `json:"created_at"`
	UpdatedAt          *string  `json:"updated_at"`
	ExpiresAt          *string  `json:"expires_at"`
	CreatorUserID      *string  `json:"creator_user_id"`
	WorkspaceID        string   `json:"workspace_id"`
	ExternalUser       *string  `json:"external_user"`
}

// wireTime formats t as the API renders timestamps.
func wireTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func eqF(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
func eqS(a, b *string) bool  { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func showS(p *string) string {
	if p == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *p)
}

// getKeyView fetches a key through GET /keys/{hash}.
func (e *testEnv) getKeyView(hash string) keyView {
	e.t.Helper()
	return e.keyViewAnswer("GET", hash, nil)
}

// patchKeyView updates a key and returns the answer's key object.
func (e *testEnv) patchKeyView(hash string, body any) keyView {
	e.t.Helper()
	return e.keyViewAnswer("PATCH", hash, body)
}

// keyViewAnswer sends method to /keys/{hash} and returns the key object of
// its 200 answer.
func (e *testEnv) keyViewAnswer(method, hash string, body any) keyView {
	e.t.Helper()
	var out struct {
		Data keyView `json:"data"`
	}
	e.do(method, "/api/v1/keys/"+hash, e.mgmt, body).want(e.t, http.StatusOK).decode(e.t, &out)
	return out.Data
}

// workspaceIDOf returns the UUID of a workspace named by UUID or slug.
func (e *testEnv) workspaceIDOf(mgmt, ref string) string {
	e.t.Helper()
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	e.do("GET", "/api/v1/workspaces/"+ref, mgmt, nil).want(e.t, http.StatusOK).decode(e.t, &out)
	return out.Data.ID
}

func TestCreateKeyEveryField(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	user := e.addMember(e.mgmt, "ada@example.com")
	wsID := e.createWorkspace(e.mgmt, "team-a")
	expires := time.Date(2027, 12, 31, 23, 59, 59, 0, time.UTC)
	res := e.do("POST", "/api/v1/keys", e.mgmt, map[string]any{
		"name": "Everything", "limit": 12.5, "limit_reset": "weekly", "include_byok_in_limit": true,
		"expires_at": "2027-12-31T23:59:59.000Z", "creator_user_id": user, "workspace_id": "team-a",
		"external": map[string]any{"user": "partner-user-1", "api_key": strings.Repeat("x", 32)},
	}).want(t, http.StatusCreated)
	var out struct {
		Data keyView `json:"data"`
		Key  string  `json:"key"`
	}
	res.decode(t, &out)
	if !strings.HasPrefix(out.Key, gatehouse.KeyPrefix) || len(out.Key) != len(gatehouse.KeyPrefix)+64 {
		t.Errorf("key %q: want %s + 64 hex chars", out.Key, gatehouse.KeyPrefix)
	}
	sum := sha256.Sum256([]byte(out.Key))
	if out.Data.Hash != hex.EncodeToString(sum[:]) {
		t.Errorf("hash %s is not the SHA-256 of the key", out.Data.Hash)
	}
	k := out.Data
	if k.Name != "Everything" || k.Label != "Everything" || k.Disabled || !eqF(k.Limit, new(12.5)) ||
		!eqF(k.LimitRemaining, new(12.5)) || !eqS(k.LimitReset, new("weekly")) || !k.IncludeBYOKInLimit ||
		!eqS(k.ExpiresAt, new(wireTime(expires))) || !eqS(k.CreatorUserID, &user) || k.WorkspaceID != wsID ||
		!eqS(k.ExternalUser, new("partner-user-1")) || k.CreatedAt != wireTime(testStart) || k.UpdatedAt != nil ||
		k.Usage != 0 || k.BYOKUsage != 0 {
		t.Errorf("created key = %+v", k)
	}
	if diff := cmp.Diff(k, e.getKeyView(k.Hash)); diff != "" {
		t.Errorf("GET (-want +got):\n%s", diff)
	}
	if strings.Contains(e.snapshot(), strings.Repeat("x", 32)) {
		t.Error("external.api_key is stored in plaintext")
	}
	// The key authenticates.
	e.do("GET", "/api/v1/key", out.Key, nil).want(t, http.StatusOK)
}

func TestCreateKeyDefaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var out struct {
		Data keyView `json:"data"`
	}
	e.do("POST", "/api/v1/keys", e.mgmt, map[string]any{"name": "plain"}).want(t, http.StatusCreated).decode(t, &out)
	k := out.Data
	if k.Limit != nil || k.LimitRemaining != nil || k.LimitReset != nil || k.IncludeBYOKInLimit || k.Disabled ||
		k.ExpiresAt != nil || k.CreatorUserID != nil || k.ExternalUser != nil || k.UpdatedAt != nil ||
		k.WorkspaceID != e.workspaceIDOf(e.mgmt, "default") || k.Label != "plain" {
		t.Errorf("defaults: %+v", k)
	}
	// The workspace may be named by UUID too.
	ws := e.createWorkspace(e.mgmt, "by-uuid")
	e.do("POST", "/api/v1/keys", e.mgmt, map[string]any{"name": "u", "workspace_id": ws}).want(t, http.StatusCreated).decode(t, &out)
	if out.Data.WorkspaceID != ws {
		t.Errorf("workspace_id = %s, want %s", out.Data.WorkspaceID, ws)
	}
}

func TestCreateKeyRejects(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, mgmtB := e.newOrg("Org B")
	outsider := e.addMember(mgmtB, "bob@example.com") // a member of B only
	wsB := e.createWorkspace(mgmtB, "b-only")
	for _, c := range []struct {
		name    string
		body    map[string]any
		status  int
		message string
	}{
		{"creator not a member", map[string]any{"name": "k", "creator_user_id": "user_nobody"}, 400, "creator_user_id"},
		{"creator of another org", map[string]any{"name": "k", "creator_user_id": outsider}, 400, "creator_user_id"},
		{"unknown workspace slug", map[string]any{"name": "k", "workspace_id": "nope"}, 404, "workspace"},
		{"unknown workspace uuid", map[string]any{"name": "k", "workspace_id": "7a0c4d0e-3f5b-4c1a-9d2e-1f2a3b4c5d6e"}, 404, "workspace"},
		{"workspace of another org", map[string]any{"name": "k", "workspace_id": wsB}, 404, "workspace"},
		{"expires in the past", map[string]any{"name": "k", "expires_at": "2020-01-01T00:00:00Z"}, 400, "expires_at"},
		{"expires now", map[string]any{"name": "k", "expires_at": testStart.Format(time.RFC3339)}, 400, "expires_at"},
	} {
		e.unchanged(c.name, func() {
			res := e.do("POST", "/api/v1/keys", e.mgmt, c.body)
			if res.Status != c.status {
				t.Errorf("%s: status %d, want %d: %s", c.name, res.Status, c.status, res.Body)
			} else if msg := res.errorMessage(t); !strings.Contains(msg, c.message) {
				t.Errorf("%s: message %q lacks %q", c.name, msg, c.message)
			}
		})
	}
}

func TestListKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, mgmtB := e.newOrg("Org B")
	e.createKey(mgmtB, map[string]any{"name": "b-key"})
	ws := e.createWorkspace(e.mgmt, "team")
	var hashes []string
	for i := range 6 {
		e.clock.Set(testStart.Add(time.Duration(i) * time.Second))
		body := map[string]any{"name": fmt.Sprintf("k%d", i)}
		if i%2 == 1 {
			body["workspace_id"] = "team"
		}
		h, _ := e.createKey(e.mgmt, body)
		hashes = append(hashes, h)
	}
	e.patchKeyView(hashes[2], map[string]any{"disabled": true})

	list := func(query string) []string {
		t.Helper()
		res := e.do("GET", "/api/v1/keys"+query, e.mgmt, nil).want(t, http.StatusOK)
		raw := res.json(t)
		if _, ok := raw["total_count"]; ok {
			t.Errorf("GET /keys%s has total_count", query)
		}
		var out struct {
			Data []keyView `json:"data"`
		}
		res.decode(t, &out)
		var got []string
		for _, k := range out.Data {
			got = append(got, k.Hash)
		}
		return got
	}
	pick := func(idx ...int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, hashes[i])
		}
		return out
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", pick(0, 1, 3, 4, 5)},
		{"?include_disabled=false", pick(0, 1, 3, 4, 5)},
		{"?include_disabled=true", pick(0, 1, 2, 3, 4, 5)},
		{"?include_disabled=true&offset=2", pick(2, 3, 4, 5)},
		{"?offset=4", pick(5)},
		{"?offset=99", nil},
		{"?workspace_id=team", pick(1, 3, 5)},
		{"?workspace_id=" + ws + "&offset=1", pick(3, 5)},
		{"?workspace_id=default&include_disabled=1", pick(0, 2, 4)},
		{"?limit=2", pick(0, 1)},
		{"?limit=2&offset=2", pick(3, 4)},
		{"?include_disabled=true&limit=3&offset=1", pick(1, 2, 3)},
		{"?limit=100", pick(0, 1, 3, 4, 5)},
		{"?workspace_id=team&limit=1&offset=1", pick(3)},
	} {
		if got := list(c.query); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("GET /keys%s = %v, want %v", c.query, got, c.want)
		}
	}
	for _, c := range []struct {
		query   string
		status  int
		message string
	}{
		{"?workspace_id=nope", 404, "workspace"},
		{"?offset=-1", 400, "offset"},
		{"?offset=x", 400, "offset"},
		{"?include_disabled=maybe", 400, "include_disabled"},
		{"?limit=0", 400, "limit"},
		{"?limit=101", 400, "limit"},
		{"?limit=ten", 400, "limit"},
		{"?limit=-5", 400, "limit"},
	} {
		res := e.do("GET", "/api/v1/keys"+c.query, e.mgmt, nil).want(t, c.status)
		if msg := res.errorMessage(t); !strings.Contains(msg, c.message) {
			t.Errorf("GET /keys%s: message %q lacks %q", c.query, msg, c.message)
		}
	}
}

func TestListKeysAtMost100(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	for i := range 105 {
		e.clock.Set(testStart.Add(time.Duration(i) * time.Millisecond))
		if _, _, err := e.db.CreateKey(ctx, e.org.ID, gatehouse.KeyCreate{Name: fmt.Sprintf("k%03d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var out struct {
		Data []keyView `json:"data"`
	}
	e.do("GET", "/api/v1/keys", e.mgmt, nil).want(t, http.StatusOK).decode(t, &out)
	if len(out.Data) != 100 || out.Data[0].Name != "k000" || out.Data[99].Name != "k099" {
		t.Fatalf("got %d keys (first %v)", len(out.Data), out.Data[0].Name)
	}
	e.do("GET", "/api/v1/keys?offset=100", e.mgmt, nil).want(t, http.StatusOK).decode(t, &out)
	if len(out.Data) != 5 || out.Data[0].Name != "k100" {
		t.Fatalf("offset=100: got %d keys", len(out.Data))
	}
	// limit pages through them in smaller steps.
	var names []string
	for offset := 0; ; offset += 40 {
		e.do("GET", fmt.Sprintf("/api/v1/keys?limit=40&offset=%d", offset), e.mgmt, nil).want(t, http.StatusOK).decode(t, &out)
		if len(out.Data) > 40 {
			t.Fatalf("limit=40 returned %d keys", len(out.Data))
		}
		if len(out.Data) == 0 {
			break
		}
		for _, k := range out.Data {
			names = append(names, k.Name)
		}
	}
	if len(names) != 105 || names[0] != "k000" || names[104] != "k104" || !slices.IsSorted(names) {
		t.Fatalf("pages of 40 listed %d keys (%v...)", len(names), names[:min(3, len(names))])
	}
	// Management keys are never listed.
	for _, k := range out.Data {
		if k.Name == "mgmt" {
			t.Error("management key listed")
		}
	}
}

func TestGetKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var created struct {
		Data keyView `json:"data"`
	}
	e.do("POST", "/api/v1/keys", e.mgmt, map[string]any{"name": "g", "limit": 1}).want(t, http.StatusCreated).decode(t, &created)
	if diff := cmp.Diff(created.Data, e.getKeyView(created.Data.Hash)); diff != "" {
		t.Errorf("GET (-want +got):\n%s", diff)
	}
	mgmtHash := gatehouse.HashKey(e.mgmt)
	_, mgmtB := e.newOrg("Org B")
	for _, path := range []string{
		"/api/v1/keys/" + mgmtHash,                           // a management key is not an API-key object
		"/api/v1/keys/" + strings.Repeat("0", 64),            // unknown
		"/api/v1/keys/" + strings.ToUpper(created.Data.Hash), // not lowercase hex
		"/api/v1/keys/" + created.Data.Hash[:63],             // too short
		"/api/v1/keys/" + created.Data.Hash + "0",            // too long
		"/api/v1/keys/" + strings.Repeat("g", 64),            // not hex
		"/api/v1/keys/not-a-hash",
	} {
		e.unchanged(path, func() {
			for _, method := range []string{"GET", "PATCH", "DELETE"} {
				var body any
				if method == "PATCH" {
					body = map[string]any{"name": "x"}
				}
				res := e.do(method, path, e.mgmt, body).want(t, http.StatusNotFound)
				if msg := res.errorMessage(t); msg != "key not found" {
					t.Errorf("%s %s: message %q", method, path, msg)
				}
			}
		})
	}
	// Another organization's key is not found either.
	e.unchanged("other org", func() {
		e.do("GET", "/api/v1/keys/"+created.Data.Hash, mgmtB, nil).want(t, http.StatusNotFound)
	})
}

func TestUpdateKeySeedRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hash, key := e.createKey(e.mgmt, map[string]any{"name": "before", "limit": 10, "limit_reset": "daily"})
	ctx := context.Background()
	if _, err := e.db.RecordUsage(ctx, hash, gatehouse.USD(3), false); err != nil {
		t.Fatal(err)
	}

	// Label follows name after a rename.
	e.clock.Set(testStart.Add(time.Minute))
	k := e.patchKeyView(hash, map[string]any{"name": "after"})
	if k.Name != "after" || k.Label != "after" || !eqS(k.UpdatedAt, new(wireTime(testStart.Add(time.Minute)))) {
		t.Errorf("rename: %+v", k)
	}
	if cur := e.do("GET", "/api/v1/key", key, nil).want(t, http.StatusOK).json(t)["data"].(map[string]any); cur["label"] != "after" {
		t.Errorf("GET /key label = %v", cur["label"])
	}

	// Each field changes and round-trips; usage is never reset.
	steps := []struct {
		body  map[string]any
		check func(k keyView) bool
	}{
		{map[string]any{"limit": 20}, func(k keyView) bool { return eqF(k.Limit, new(20.0)) && eqF(k.LimitRemaining, new(17.0)) }},
		{map[string]any{"limit_reset": "weekly"}, func(k keyView) bool { return eqS(k.LimitReset, new("weekly")) && eqF(k.LimitRemaining, new(17.0)) }},
		{map[string]any{"limit_reset": "monthly", "limit": 2.5}, func(k keyView) bool {
			return eqS(k.LimitReset, new("monthly")) && eqF(k.Limit, new(2.5)) && eqF(k.LimitRemaining, new(0.0))
		}},
		{map[string]any{"include_byok_in_limit": true}, func(k keyView) bool { return k.IncludeBYOKInLimit }},
		{map[string]any{"include_byok_in_limit": false}, func(k keyView) bool { return !k.IncludeBYOKInLimit }},
		{map[string]any{"disabled": true}, func(k keyView) bool { return k.Disabled }},
		{map[string]any{"disabled": false}, func(k keyView) bool { return !k.Disabled }},
		{map[string]any{"limit": nil, "limit_reset": nil}, func(k keyView) bool {
			return k.Limit == nil && k.LimitRemaining == nil && k.LimitReset == nil
		}},
		{map[string]any{"limit": 0}, func(k keyView) bool { return eqF(k.Limit, new(0.0)) && eqF(k.LimitRemaining, new(0.0)) }},
		{map[string]any{"limit": 100, "limit_reset": nil}, func(k keyView) bool {
			return eqF(k.Limit, new(100.0)) && k.LimitReset == nil && eqF(k.LimitRemaining, new(97.0))
		}},
	}
	for i, s := range steps {
		got := e.patchKeyView(hash, s.body)
		if !s.check(got) {
			t.Errorf("step %d %v: answer %+v", i, s.body, got)
		}
		if diff := cmp.Diff(got, e.getKeyView(hash)); diff != "" {
			t.Errorf("step %d: GET against the PATCH answer (-PATCH +GET):\n%s", i, diff)
		}
		if got.Usage != 3 || got.UsageDaily != 3 || got.UsageWeekly != 3 || got.UsageMonthly != 3 {
			t.Errorf("step %d %v: usage reset: %+v", i, s.body, got)
		}
	}

	// {} is valid and changes nothing.
	before := e.getKeyView(hash)
	e.clock.Set(testStart.Add(time.Hour))
	e.unchanged("PATCH {}", func() {
		if diff := cmp.Diff(before, e.patchKeyView(hash, map[string]any{})); diff != "" {
			t.Errorf("PATCH {} (-want +got):\n%s", diff)
		}
	})

	// name, disabled and include_byok_in_limit cannot be cleared.
	for _, field := range []string{"name", "disabled", "include_byok_in_limit"} {
		e.unchanged(field+": null", func() {
			res := e.do("PATCH", "/api/v1/keys/"+hash, e.mgmt, map[string]any{field: nil}).want(t, http.StatusBadRequest)
			if msg := res.errorMessage(t); !strings.HasPrefix(msg, field+":") {
				t.Errorf("%s: null: message %q", field, msg)
			}
		})
	}
}

func TestDeleteKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hash, key := e.createKey(e.mgmt, map[string]any{"name": "doomed"})
	other, _ := e.createKey(e.mgmt, map[string]any{"name": "stays"})
	var g struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	e.do("POST", "/api/v1/guardrails", e.mgmt, map[string]any{"name": "g"}).want(t, http.StatusCreated).decode(t, &g)
	e.do("POST", "/api/v1/guardrails/"+g.Data.ID+"/assignments/keys", e.mgmt,
		map[string]any{"key_hashes": []string{hash, other}}).want(t, http.StatusOK)

	res := e.do("DELETE", "/api/v1/keys/"+hash, e.mgmt, nil).want(t, http.StatusOK)
	compareJSONObjects(t, "DELETE /keys/{hash}", res.json(t), map[string]any{"deleted": true})
	e.unchanged("after delete", func() {
		e.do("GET", "/api/v1/keys/"+hash, e.mgmt, nil).want(t, http.StatusNotFound)
		e.do("PATCH", "/api/v1/keys/"+hash, e.mgmt, map[string]any{"name": "x"}).want(t, http.StatusNotFound)
		e.do("DELETE", "/api/v1/keys/"+hash, e.mgmt, nil).want(t, http.StatusNotFound)
		e.do("GET", "/api/v1/key", key, nil).want(t, http.StatusUnauthorized)
	})
	var list struct {
		Data []struct {
			KeyHash string `json:"key_hash"`
		} `json:"data"`
		TotalCount int `json:"total_count"`
	}
	e.do("GET", "/api/v1/guardrails/"+g.Data.ID+"/assignments/keys", e.mgmt, nil).want(t, http.StatusOK).decode(t, &list)
	if list.TotalCount != 1 || len(list.Data) != 1 || list.Data[0].KeyHash != other {
		t.Errorf("assignments after delete: %+v", list)
	}
	// A management key cannot be deleted through /keys.
	e.unchanged("delete management key", func() {
		e.do("DELETE", "/api/v1/keys/"+gatehouse.HashKey(e.mgmt), e.mgmt, nil).want(t, http.StatusNotFound)
	})
}
