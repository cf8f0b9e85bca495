package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// memberView is an organization member, decoded.
type memberView struct {
	ID        string  `json:"id"`
	Email     string  `json:"email"`
	FirstName *string `json:"first_name"`
	LastName  *string `json:"last_name"`
	Role      string  `json:"role"`
}

// memberPage is one page of GET /organization/members.
type memberPage struct {
	Data       []memberView `json:"data"`
	TotalCount int          `json:"total_count"`
}

func TestListMembers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, mgmtB := e.newOrg("Org B")
	e.addMember(mgmtB, "b@example.com")
	var ids []string
	for i := range 5 {
		e.clock.Set(testStart.Add(time.Duration(i) * time.Second))
		ids = append(ids, e.addMember(e.mgmt, fmt.Sprintf("m%d@example.com", i)))
	}
	list := func(query string) memberPage {
		t.Helper()
		var p memberPage
		e.do("GET", "/api/v1/organization/members"+query, e.mgmt, nil).want(t, http.StatusOK).decode(t, &p)
		return p
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", ids},
		{"?limit=2", ids[:2]},
		{"?limit=2&offset=2", ids[2:4]},
		{"?offset=4&limit=2", ids[4:]},
		{"?offset=5", nil},
		{"?offset=1000", nil},
		{"?limit=100", ids},
		{"?limit=1&offset=0", ids[:1]},
	} {
		p := list(c.query)
		var got []string
		for _, m := range p.Data {
			got = append(got, m.ID)
		}
		if diff := cmp.Diff(c.want, got); diff != "" || p.TotalCount != 5 {
			t.Errorf("GET /organization/members%s (total %d, want 5) (-want +got):\n%s", c.query, p.TotalCount, diff)
		}
	}
	for _, c := range []struct{ query, field string }{
		{"?offset=-1", "offset"}, {"?offset=x", "offset"}, {"?offset=1.5", "offset"},
		{"?limit=0", "limit"}, {"?limit=101", "limit"}, {"?limit=x", "limit"}, {"?limit=-5", "limit"}, {"?limit=", "limit"},
		{"?limit=5&limit=6", "limit"}, {"?offset=", "offset"},
	} {
		res := e.do("GET", "/api/v1/organization/members"+c.query, e.mgmt, nil)
		resWantError(t, res, http.StatusBadRequest, c.field)
		if msg := res.errorMessage(t); !strings.HasPrefix(msg, c.field+":") {
			t.Errorf("%s: message %q does not name %s", c.query, msg, c.field)
		}
	}
}

func TestAddMember(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var out struct {
		Data memberView `json:"data"`
	}
	e.do("POST", "/api/v1/organization/members", e.mgmt, map[string]any{"email": "ada@example.com"}).
		want(t, http.StatusCreated).decode(t, &out)
	generated := out.Data
	if !strings.HasPrefix(generated.ID, "user_") || len(generated.ID) <= len("user_")+8 ||
		generated.Email != "ada@example.com" || generated.Role != "org:member" ||
		generated.FirstName != nil || generated.LastName != nil {
		t.Errorf("generated member = %+v", generated)
	}
	e.clock.Set(testStart.Add(time.Second)) // lists are ordered by creation
	e.do("POST", "/api/v1/organization/members", e.mgmt, map[string]any{
		"id": "user_grace", "email": "Grace@Example.com", "first_name": "Grace", "last_name": "Hopper", "role": "org:admin",
	}).want(t, http.StatusCreated).decode(t, &out)
	want := memberView{ID: "user_grace", Email: "Grace@Example.com", FirstName: new("Grace"), LastName: new("Hopper"), Role: "org:admin"}
	if diff := cmp.Diff(want, out.Data); diff != "" {
		t.Errorf("explicit member (-want +got):\n%s", diff)
	}
	var p memberPage
	e.do("GET", "/api/v1/organization/members", e.mgmt, nil).want(t, http.StatusOK).decode(t, &p)
	if diff := cmp.Diff([]memberView{generated, want}, p.Data); diff != "" || p.TotalCount != 2 {
		t.Errorf("list (total %d, want 2) (-want +got):\n%s", p.TotalCount, diff)
	}

	e.unchanged("rejected members", func() {
		for _, c := range []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"duplicate email", map[string]any{"email": "ada@example.com"}, "email"},
			{"duplicate email, other case", map[string]any{"email": "GRACE@example.COM"}, "email"},
			{"duplicate id", map[string]any{"id": "user_grace", "email": "new@example.com"}, "id"},
			{"generated id taken", map[string]any{"id": generated.ID, "email": "new@example.com"}, "id"},
			{"bad email", map[string]any{"email": "not-an-email"}, "email"},
			{"email with name", map[string]any{"email": "Ada <ada2@example.com>"}, "email"},
			{"email missing", map[string]any{"first_name": "X"}, "email"},
			{"email blank", map[string]any{"email": "  "}, "email"},
			{"bad role", map[string]any{"email": "r@example.com", "role": "admin"}, "role"},
			{"owner role", map[string]any{"email": "r@example.com", "role": "org:owner"}, "role"},
			{"id with space", map[string]any{"id": "user x", "email": "s@example.com"}, "id"},
			{"id too long", map[string]any{"id": strings.Repeat("u", 129), "email": "s@example.com"}, "id"},
			{"first_name too long", map[string]any{"email": "s@example.com", "first_name": strings.Repeat("f", 101)}, "first_name"},
		} {
			res := e.do("POST", "/api/v1/organization/members", e.mgmt, c.body)
			if res.Status != http.StatusBadRequest {
				t.Errorf("%s: status %d: %s", c.name, res.Status, res.Body)
			} else if msg := res.errorMessage(t); !strings.HasPrefix(msg, c.field+":") {
				t.Errorf("%s: message %q does not name %s", c.name, msg, c.field)
			}
		}
	})

	// Emails and ids are unique per organization only.
	_, mgmtB := e.newOrg("Org B")
	e.do("POST", "/api/v1/organization/members", mgmtB, map[string]any{"id": "user_grace", "email": "grace@example.com"}).
		want(t, http.StatusCreated)
}

func TestRemoveMember(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keeper := e.addMember(e.mgmt, "keeper@example.com")
	leaver := e.addMember(e.mgmt, "leaver@example.com")
	hash, _ := e.createKey(e.mgmt, map[string]any{"name": "leaver's", "creator_user_id": leaver})
	e.createKey(e.mgmt, map[string]any{"name": "keeper's", "creator_user_id": keeper,
		"expires_at": testStart.Add(time.Hour).Format(time.RFC3339)})
	_, mgmtB := e.newOrg("Org B")

	// Blocked while the user has an active key.
	e.unchanged("blocked removal", func() {
		res := e.do("DELETE", "/api/v1/organization/members/"+leaver, e.mgmt, nil).want(t, http.StatusBadRequest)
		body := res.json(t)["error"].(map[string]any)
		if !strings.Contains(body["message"].(string), "active") {
			t.Errorf("message %q", body["message"])
		}
		if meta, _ := body["metadata"].(map[string]any); fmt.Sprint(meta["user_ids"]) != "["+leaver+"]" {
			t.Errorf("metadata %v, want user_ids [%s]", body["metadata"], leaver)
		}
		e.do("DELETE", "/api/v1/organization/members/"+keeper, e.mgmt, nil).want(t, http.StatusBadRequest)
	})
	// Another organization cannot see them; unknown ids are 404.
	e.unchanged("not found", func() {
		for _, c := range []struct{ key, id string }{
			{mgmtB, leaver}, {mgmtB, keeper}, {e.mgmt, "user_nobody"}, {e.mgmt, "%20"},
		} {
			e.do("DELETE", "/api/v1/organization/members/"+c.id, c.key, nil).want(t, http.StatusNotFound)
		}
	})
	// A disabled key no longer blocks; neither does an expired one.
	e.patchKeyView(hash, map[string]any{"disabled": true})
	res := e.do("DELETE", "/api/v1/organization/members/"+leaver, e.mgmt, nil).want(t, http.StatusOK)
	compareJSONObjects(t, "DELETE member", res.json(t), map[string]any{"deleted": true})
	e.clock.Set(testStart.Add(time.Hour))
	e.do("DELETE", "/api/v1/organization/members/"+keeper, e.mgmt, nil).want(t, http.StatusOK)
	e.unchanged("already removed", func() {
		e.do("DELETE", "/api/v1/organization/members/"+leaver, e.mgmt, nil).want(t, http.StatusNotFound)
	})
	var p memberPage
	e.do("GET", "/api/v1/organization/members", e.mgmt, nil).want(t, http.StatusOK).decode(t, &p)
	if p.TotalCount != 0 || len(p.Data) != 0 {
		t.Errorf("members after removal: %+v", p)
	}
}

func TestMembersBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.addMember(e.mgmt, "taken@example.com")
	em := `"email": "new@example.com"`
	e.checkInputCases(t, "POST", "/api/v1/organization/members", e.mgmt, []inputCase{
		{name: "malformed JSON", body: `{` + em, message: "malformed JSON"},
		{name: "empty body", body: ``, message: "request body is required"},
		{name: "not an object", body: `"new@example.com"`, message: "JSON object"},
		{name: "trailing data", body: `{` + em + `}{}`, message: "nothing after it"},
		{name: "duplicate key", body: `{` + em + `, ` + em + `}`, message: "email: appears more than once"},
		{name: "unknown field", body: `{` + em + `, "name": "X"}`, message: "name: unknown field"},
		{name: "missing email", body: `{}`, message: "email: is required"},
		{name: "email null", body: `{"email": null}`, message: "email: must not be null"},
		{name: "email a number", body: `{"email": 5}`, message: "email: must be a string"},
		{name: "email an array", body: `{"email": ["a@example.com"]}`, message: "email"},
		{name: "email too long", body: `{"email": "` + strings.Repeat("a", 250) + `@example.com"}`, message: "email"},
		{name: "email taken", body: `{"email": "TAKEN@example.com"}`, message: "email"},
		{name: "id a number", body: `{` + em + `, "id": 5}`, message: "id: must be a string"},
		{name: "id null", body: `{` + em + `, "id": null}`, message: "id: must not be null"},
		{name: "id with control character", body: `{` + em + `, "id": "user\u0001x"}`, message: "id"},
		{name: "role null", body: `{` + em + `, "role": null}`, message: "role: must not be null"},
		{name: "role unknown", body: `{` + em + `, "role": "org:owner"}`, message: "role"},
		{name: "first_name a bool", body: `{` + em + `, "first_name": true}`, message: "first_name"},
		{name: "last_name too long", body: `{` + em + `, "last_name": "` + strings.Repeat("l", 101) + `"}`, message: "last_name"},
		{name: "oversized body", body: bigBody("email"), status: 413, message: "at most"},
		{name: "text/plain", body: `{` + em + `}`, contentType: "text/plain", status: 415, message: "Content-Type"},
	})
}
