package httpapi_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"
)

// pkcePair returns a verifier (43..128 unreserved characters) built from
// seed and its S256 challenge.
func pkcePair(seed string) (verifier, challenge string) {
	verifier = (seed + strings.Repeat("v", 43))[:43+len(seed)%20]
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authCodeView is the data of a create-code answer.
type authCodeView struct {
	ID        string      `json:"id"`
	AppID     json.Number `json:"app_id"`
	CreatedAt string      `json:"created_at"`
}

// createCode creates an authorization code with key and returns it.
func (e *testEnv) createCode(key string, body map[string]any) authCodeView {
	e.t.Helper()
	var out struct {
		Data authCodeView `json:"data"`
	}
	res := e.do("POST", "/api/v1/auth/keys/code", key, body).want(e.t, http.StatusOK)
	dec := json.NewDecoder(strings.NewReader(string(res.Body)))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		e.t.Fatal(err)
	}
	return out.Data
}

// exchangeView is the answer of a code exchange.
type exchangeView struct {
	Key    string  `json:"key"`
	UserID *string `json:"user_id"`
}

// exchange exchanges a code (no credential) and returns the answer.
func (e *testEnv) exchange(body map[string]any) exchangeView {
	e.t.Helper()
	var out exchangeView
	e.do("POST", "/api/v1/auth/keys", "", body).want(e.t, http.StatusOK).decode(e.t, &out)
	return out
}

func TestCreateAuthCode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, regular := e.createKey(e.mgmt, map[string]any{"name": "app-creator"})
	_, mgmtB := e.newOrg("Org B")

	a := e.createCode(e.mgmt, map[string]any{"callback_url": "https://app.example.com/callback"})
	if len(a.ID) < 22 || a.CreatedAt != wireTime(testStart) {
		t.Errorf("code = %+v", a)
	}
	if _, err := a.AppID.Int64(); err != nil {
		t.Errorf("app_id %q is not an integer", a.AppID)
	}
	seen := map[string]bool{a.ID: true}
	apps := map[json.Number]string{a.AppID: "A https://app.example.com"}
	for _, c := range []struct {
		key, url, app string
	}{
		{e.mgmt, "https://app.example.com/other/path?x=1", "A https://app.example.com"},
		{regular, "https://app.example.com/", "A https://app.example.com"}, // any valid key of the organization
		{e.mgmt, "https://other.example.com/callback", "A https://other.example.com"},
		{e.mgmt, "https://app.example.com:8443/callback", "A https://app.example.com:8443"},
		{e.mgmt, "http://localhost:3000/cb", "A http://localhost:3000"},
		{mgmtB, "https://app.example.com/callback", "B https://app.example.com"},
		{e.mgmt, "https://other.example.com/again", "A https://other.example.com"},
		{mgmtB, "https://app.example.com/again", "B https://app.example.com"},
	} {
		b := e.createCode(c.key, map[string]any{"callback_url": c.url})
		if seen[b.ID] {
			t.Errorf("code %s issued twice", b.ID)
		}
		seen[b.ID] = true
		if _, err := b.AppID.Int64(); err != nil {
			t.Errorf("app_id %q is not an integer", b.AppID)
		}
		if prev, ok := apps[b.AppID]; ok && prev != c.app {
			t.Errorf("%s: app_id %s is also the id of %s", c.url, b.AppID, prev)
		}
		apps[b.AppID] = c.app
	}
	if len(apps) != 5 {
		t.Errorf("app ids %v: want one per organization and origin (5)", apps)
	}
}

func TestExchangeAuthCodeMethods(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cb := "https://app.example.com/cb"
	for i, c := range []struct {
		name      string
		method    any // nil: not sent
		challenge func(verifier, s256 string) string
		send      any // code_challenge_method sent on exchange; nil: not sent
	}{
		{"S256 explicit", "S256", func(v, s string) string { return s }, "S256"},
		{"S256 by default", nil, func(v, s string) string { return s }, nil},
		{"S256, method null on exchange", "S256", func(v, s string) string { return s }, "null"},
		{"plain", "plain", func(v, s string) string { return v }, "plain"},
		{"plain, method not sent on exchange", "plain", func(v, s string) string { return v }, nil},
	} {
		verifier, s256 := pkcePair(fmt.Sprintf("m%d", i))
		body := map[string]any{"callback_url": cb, "code_challenge": c.challenge(verifier, s256)}
		if c.method != nil {
			body["code_challenge_method"] = c.method
		}
		code := e.createCode(e.mgmt, body)
		x := map[string]any{"code": code.ID, "code_verifier": verifier}
		switch c.send {
		case nil:
		case "null":
			x["code_challenge_method"] = nil
		default:
			x["code_challenge_method"] = c.send
		}
		got := e.exchange(x)
		if !strings.HasPrefix(got.Key, gatehouse.KeyPrefix) || got.UserID != nil {
			t.Errorf("%s: %+v", c.name, got)
		}
		e.do("GET", "/api/v1/key", got.Key, nil).want(t, http.StatusOK)
	}
	// A code without a challenge needs no verifier.
	code := e.createCode(e.mgmt, map[string]any{"callback_url": cb})
	got := e.exchange(map[string]any{"code": code.ID})
	e.do("GET", "/api/v1/key", got.Key, nil).want(t, http.StatusOK)
}

func TestOAuthKeyProperties(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	user := e.addMember(e.mgmt, "ada@example.com")
	wsID := e.createWorkspace(e.mgmt, "apps")
	_, creator := e.createKey(e.mgmt, map[string]any{"name": "creator", "creator_user_id": user, "workspace_id": "apps"})
	expires := time.Date(2027, 6, 30, 12, 0, 0, 0, time.UTC)
	verifier, challenge := pkcePair("props")
	code := e.createCode(creator, map[string]any{
		"callback_url": "http://127.0.0.1:8976/callback", "code_challenge": challenge, "code_challenge_method": "S256",
		"limit": 5.5, "usage_limit_type": "weekly", "expires_at": "2027-06-30T12:00:00Z",
		"key_label": "My App", "workspace_id": "apps",
	})
	// The exchange needs no credential, and ignores one if sent.
	req := httptest.NewRequest("POST", "/api/v1/auth/keys",
		strings.NewReader(fmt.Sprintf(`{"code": %q, "code_verifier": %q}`, code.ID, verifier)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-gh-v1-not-a-real-key")
	var got exchangeView
	e.send(req).want(t, http.StatusOK).decode(t, &got)
	if got.UserID == nil || *got.UserID != user {
		t.Errorf("user_id = %s, want %q (the creator_user_id of the key that created the code)", showS(got.UserID), user)
	}
	cur := e.do("GET", "/api/v1/key", got.Key, nil).want(t, http.StatusOK).json(t)["data"].(map[string]any)
	for field, want := range map[string]any{
		"label": "My App", "limit": 5.5, "limit_remaining": 5.5, "limit_reset": "weekly",
		"expires_at": wireTime(expires), "workspace_id": wsID, "creator_user_id": user, "is_management_key": false,
	} {
		if fmt.Sprint(cur[field]) != fmt.Sprint(want) {
			t.Errorf("new key %s = %v, want %v", field, cur[field], want)
		}
	}
	k := e.getKeyView(gatehouse.HashKey(got.Key))
	if k.Name != "My App" || k.WorkspaceID != wsID {
		t.Errorf("GET /keys/{hash} = %+v", k)
	}

	// A regular key's codes land in its own workspace (README decision);
	// naming another workspace is 403.
	e.unchanged("regular key, other workspace", func() {
		e.do("POST", "/api/v1/auth/keys/code", creator, map[string]any{
			"callback_url": "https://app.example.com/cb", "workspace_id": "default"}).want(t, http.StatusForbidden)
	})
	own := e.createCode(creator, map[string]any{"callback_url": "https://app.example.com/cb"})
	if k := e.getKeyView(gatehouse.HashKey(e.exchange(map[string]any{"code": own.ID}).Key)); k.WorkspaceID != wsID {
		t.Errorf("code of a regular key without workspace_id: key in %s, want %s", k.WorkspaceID, wsID)
	}

	// Defaults: label "OAuth key", no limit, no expiry, default workspace;
	// a management key has no creator_user_id, so user_id is null.
	plain := e.createCode(e.mgmt, map[string]any{"callback_url": "https://app.example.com/cb"})
	req = httptest.NewRequest("POST", "/api/v1/auth/keys", strings.NewReader(`{"code": "`+plain.ID+`"}`))
	req.Header.Set("Authorization", "Basic Zm9vOmJhcg==") // a malformed credential is ignored too
	var got2 exchangeView
	e.send(req).want(t, http.StatusOK).decode(t, &got2)
	if got2.UserID != nil {
		t.Errorf("user_id = %s, want null", showS(got2.UserID))
	}
	k2 := e.getKeyView(gatehouse.HashKey(got2.Key))
	if k2.Name != "OAuth key" || k2.Limit != nil || k2.LimitReset != nil || k2.ExpiresAt != nil ||
		k2.WorkspaceID != e.workspaceIDOf(e.mgmt, "default") || k2.CreatorUserID != nil {
		t.Errorf("default OAuth key = %+v", k2)
	}
}

func TestExchangeAuthCodeErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cb := "https://app.example.com/cb"
	verifier, challenge := pkcePair("errors")
	wrong, _ := pkcePair("wrong-verifier")
	code := e.createCode(e.mgmt, map[string]any{"callback_url": cb, "code_challenge": challenge})

	post := func(body any) *response {
		t.Helper()
		return e.do("POST", "/api/v1/auth/keys", "", body)
	}
	expect := func(what string, res *response, status int, msgPart string) {
		t.Helper()
		if res.Status != status {
			t.Errorf("%s: status %d, want %d: %s", what, res.Status, status, res.Body)
		} else if msg := res.errorMessage(t); !strings.Contains(msg, msgPart) {
			t.Errorf("%s: message %q lacks %q", what, msg, msgPart)
		}
	}
	// Malformed requests are 400 and count as no attempt at all.
	e.unchanged("400s", func() {
		expect("no code", post(map[string]any{}), 400, "code")
		expect("empty code", post(map[string]any{"code": ""}), 400, "code")
		expect("null code", post(map[string]any{"code": nil}), 400, "code")
		expect("short verifier", post(map[string]any{"code": code.ID, "code_verifier": "short"}), 400, "code_verifier")
		expect("verifier with bad characters", post(map[string]any{"code": code.ID, "code_verifier": strings.Repeat("a+", 22)}), 400, "code_verifier")
		expect("verifier too long", post(map[string]any{"code": code.ID, "code_verifier": strings.Repeat("a", 129)}), 400, "code_verifier")
		expect("unknown method", post(map[string]any{"code": code.ID, "code_verifier": verifier, "code_challenge_method": "S512"}), 400, "code_challenge_method")
		expect("lower-case method", post(map[string]any{"code": code.ID, "code_verifier": verifier, "code_challenge_method": "s256"}), 400, "code_challenge_method")
		expect("method mismatch", post(map[string]any{"code": code.ID, "code_verifier": verifier, "code_challenge_method": "plain"}), 400, "code_challenge_method")
		expect("unknown code", post(map[string]any{"code": "ghc_doesnotexist", "code_verifier": verifier}), 403, "")
	})
	// Wrong or missing verifiers are 403; they do not consume the code.
	expect("wrong verifier", post(map[string]any{"code": code.ID, "code_verifier": wrong}), 403, "code_verifier")
	expect("missing verifier", post(map[string]any{"code": code.ID}), 403, "code_verifier")
	expect("null verifier", post(map[string]any{"code": code.ID, "code_verifier": nil}), 400, "code_verifier")
	expect("plain verifier on S256", post(map[string]any{"code": code.ID, "code_verifier": challenge}), 403, "code_verifier")
	e.exchange(map[string]any{"code": code.ID, "code_verifier": verifier}) // the fifth attempt succeeds
	e.unchanged("used code", func() {
		expect("used code", post(map[string]any{"code": code.ID, "code_verifier": verifier}), 403, "")
	})

	// Five failed attempts burn the code.
	verifier2, challenge2 := pkcePair("burn")
	burned := e.createCode(e.mgmt, map[string]any{"callback_url": cb, "code_challenge": challenge2})
	for i := range gatehouse.MaxVerifierAttempts {
		expect(fmt.Sprintf("failure %d", i+1), post(map[string]any{"code": burned.ID, "code_verifier": wrong}), 403, "")
	}
	e.unchanged("burned code", func() {
		expect("burned code", post(map[string]any{"code": burned.ID, "code_verifier": verifier2}), 403, "")
	})

	// A code expires 10 minutes after creation.
	start := testStart.Add(time.Hour)
	e.clock.Set(start)
	verifier3, challenge3 := pkcePair("expiry-a")
	late := e.createCode(e.mgmt, map[string]any{"callback_url": cb, "code_challenge": challenge3})
	verifier4, challenge4 := pkcePair("expiry-b")
	onTime := e.createCode(e.mgmt, map[string]any{"callback_url": cb, "code_challenge": challenge4})
	e.clock.Set(start.Add(gatehouse.AuthCodeTTL - time.Millisecond))
	e.exchange(map[string]any{"code": onTime.ID, "code_verifier": verifier4})
	e.clock.Set(start.Add(gatehouse.AuthCodeTTL))
	e.unchanged("expired code", func() {
		expect("expired code", post(map[string]any{"code": late.ID, "code_verifier": verifier3}), 403, "")
	})
}

func TestAuthCodeDuplicateChallenge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cb := "https://app.example.com/cb"
	verifier, challenge := pkcePair("dup")
	code := e.createCode(e.mgmt, map[string]any{"callback_url": cb, "code_challenge": challenge})
	e.unchanged("duplicate challenge", func() {
		res := e.do("POST", "/api/v1/auth/keys/code", e.mgmt,
			map[string]any{"callback_url": "https://other.example.com/cb", "code_challenge": challenge}).want(t, http.StatusConflict)
		if msg := res.errorMessage(t); !strings.Contains(msg, "code_challenge") {
			t.Errorf("message %q", msg)
		}
	})
	// Once the first code is used, the challenge is free again.
	e.exchange(map[string]any{"code": code.ID, "code_verifier": verifier})
	e.createCode(e.mgmt, map[string]any{"callback_url": cb, "code_challenge": challenge})
}

func TestAuthCodeCallbackURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, ok := range []string{
		"https://app.example.com/cb", "https://app.example.com:8443/a/b?c=d",
		"http://localhost/cb", "http://localhost:3000/cb", "http://127.0.0.1:8080/cb", "http://127.0.0.1/",
	} {
		e.createCode(e.mgmt, map[string]any{"callback_url": ok})
	}
	e.unchanged("bad callback URLs", func() {
		for _, bad := range []any{
			"http://app.example.com/cb", "http://localhost.example.com/cb", "http://10.0.0.1/cb",
			"ftp://localhost/cb", "javascript:alert(1)", "/relative/cb", "app.example.com/cb", "https://", "", nil,
		} {
			body := map[string]any{"callback_url": bad}
			res := e.do("POST", "/api/v1/auth/keys/code", e.mgmt, body)
			if res.Status != http.StatusBadRequest {
				t.Errorf("callback_url %v: status %d: %s", bad, res.Status, res.Body)
			} else if msg := res.errorMessage(t); !strings.Contains(msg, "callback_url") {
				t.Errorf("callback_url %v: message %q", bad, msg)
			}
		}
		res := e.do("POST", "/api/v1/auth/keys/code", e.mgmt, map[string]any{}).want(t, http.StatusBadRequest)
		if msg := res.errorMessage(t); !strings.Contains(msg, "callback_url") {
			t.Errorf("missing callback_url: message %q", msg)
		}
	})
}

func TestAuthCodeWorkspace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, mgmtB := e.newOrg("Org B")
	wsB := e.createWorkspace(mgmtB, "b-apps")
	e.unchanged("unknown workspaces", func() {
		for _, ws := range []string{"nope", "7a0c4d0e-3f5b-4c1a-9d2e-1f2a3b4c5d6e", wsB} {
			res := e.do("POST", "/api/v1/auth/keys/code", e.mgmt,
				map[string]any{"callback_url": "https://app.example.com/cb", "workspace_id": ws}).want(t, http.StatusNotFound)
			if msg := res.errorMessage(t); !strings.Contains(msg, "workspace") {
				t.Errorf("workspace %s: message %q", ws, msg)
			}
		}
	})
}

// TestExchangeIsAtomic races ten exchanges of one code through the handler:
// exactly one may win.
func TestExchangeIsAtomic(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	verifier, challenge := pkcePair("race")
	code := e.createCode(e.mgmt, map[string]any{"callback_url": "https://app.example.com/cb", "code_challenge": challenge})
	body := map[string]any{"code": code.ID, "code_verifier": verifier}

	const n = 10
	statuses := make([]int, n)
	keys := make([]string, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res := e.do("POST", "/api/v1/auth/keys", "", body) // e.do is safe for concurrent use; no Fatal here
			statuses[i] = res.Status
			var x exchangeView
			if json.Unmarshal(res.Body, &x) == nil {
				keys[i] = x.Key
			}
		}()
	}
	close(start)
	wg.Wait()
	count := map[int]int{}
	var winner string
	for i, s := range statuses {
		count[s]++
		if s == http.StatusOK {
			winner = keys[i]
		}
	}
	if count[http.StatusOK] != 1 || count[http.StatusForbidden] != n-1 {
		t.Fatalf("statuses %v: want one 200 and %d 403", statuses, n-1)
	}
	var list struct {
		Data []keyView `json:"data"`
	}
	e.do("GET", "/api/v1/keys?include_disabled=true", e.mgmt, nil).want(t, http.StatusOK).decode(t, &list)
	if len(list.Data) != 1 || list.Data[0].Hash != gatehouse.HashKey(winner) {
		t.Errorf("keys after the race: %+v", list.Data)
	}
}

func TestOAuthBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cb := `"callback_url": "https://app.example.com/cb"`
	_, challenge := pkcePair("bad-input")
	t.Run("create code", func(t *testing.T) {
		e.checkInputCases(t, "POST", "/api/v1/auth/keys/code", e.mgmt, []inputCase{
			{name: "malformed JSON", body: `{` + cb, message: "malformed JSON"},
			{name: "empty body", body: ``, message: "request body is required"},
			{name: "not an object", body: `[]`, message: "JSON object"},
			{name: "trailing data", body: `{` + cb + `}]`, message: "nothing after it"},
			{name: "duplicate key", body: `{` + cb + `, ` + cb + `}`, message: "callback_url: appears more than once"},
			{name: "unknown field", body: `{` + cb + `, "scope": "all"}`, message: "scope: unknown field"},
			{name: "callback_url a number", body: `{"callback_url": 5}`, message: "callback_url"},
			{name: "callback_url null", body: `{"callback_url": null}`, message: "callback_url"},
			{name: "code_challenge a number", body: `{` + cb + `, "code_challenge": 5}`, message: "code_challenge"},
			{name: "code_challenge too short", body: `{` + cb + `, "code_challenge": "abc"}`, message: "code_challenge"},
			{name: "code_challenge bad characters", body: `{` + cb + `, "code_challenge": "` + strings.Repeat("a/", 22) + `"}`, message: "code_challenge"},
			{name: "method unknown", body: `{` + cb + `, "code_challenge": "` + challenge + `", "code_challenge_method": "S512"}`, message: "code_challenge_method"},
			{name: "method without challenge", body: `{` + cb + `, "code_challenge_method": "S256"}`, message: "code_challenge_method"},
			{name: "limit negative", body: `{` + cb + `, "limit": -1}`, message: "limit"},
			{name: "limit a string", body: `{` + cb + `, "limit": "1"}`, message: "limit"},
			{name: "limit 1e12", body: `{` + cb + `, "limit": 1e12}`, message: "limit"},
			{name: "usage_limit_type unknown", body: `{` + cb + `, "usage_limit_type": "hourly"}`, message: "usage_limit_type"},
			{name: "expires_at past", body: `{` + cb + `, "expires_at": "2020-01-01T00:00:00Z"}`, message: "expires_at"},
			{name: "expires_at date only", body: `{` + cb + `, "expires_at": "2028-01-01"}`, message: "expires_at"},
			{name: "key_label too long", body: `{` + cb + `, "key_label": "` + strings.Repeat("l", 101) + `"}`, message: "key_label"},
			{name: "key_label empty", body: `{` + cb + `, "key_label": ""}`, message: "key_label"},
			{name: "key_label a number", body: `{` + cb + `, "key_label": 1}`, message: "key_label"},
			{name: "workspace_id a number", body: `{` + cb + `, "workspace_id": 1}`, message: "workspace_id"},
			{name: "oversized body", body: bigBody("callback_url"), status: 413, message: "at most"},
			{name: "text/plain", body: `{` + cb + `}`, contentType: "text/plain", status: 415, message: "Content-Type"},
		})
	})
	t.Run("exchange", func(t *testing.T) {
		e.checkInputCases(t, "POST", "/api/v1/auth/keys", "", []inputCase{
			{name: "malformed JSON", body: `{"code": "x"`, message: "malformed JSON"},
			{name: "empty body", body: ``, message: "request body is required"},
			{name: "not an object", body: `"ghc_x"`, message: "JSON object"},
			{name: "trailing data", body: `{"code": "x"} 1`, message: "nothing after it"},
			{name: "duplicate key", body: `{"code": "x", "code": "y"}`, message: "code: appears more than once"},
			{name: "unknown field", body: `{"code": "x", "client_id": "y"}`, message: "client_id: unknown field"},
			{name: "code a number", body: `{"code": 5}`, message: "code"},
			{name: "code too long", body: `{"code": "` + strings.Repeat("c", 300) + `"}`, message: "code"},
			{name: "code_verifier a number", body: `{"code": "x", "code_verifier": 5}`, message: "code_verifier"},
			{name: "code_challenge_method a bool", body: `{"code": "x", "code_challenge_method": true}`, message: "code_challenge_method"},
			{name: "oversized body", body: bigBody("code"), status: 413, message: "at most"},
			{name: "text/plain", body: `{"code": "x"}`, contentType: "text/plain", status: 415, message: "Content-Type"},
		})
	})
}

// TestOAuthCodeBoundByCreator: the key a regular key's code yields has at
// most what the creator has left (never resetting), expires no later, and
// is held by the creator's guardrail.
func TestOAuthCodeBoundByCreator(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	user := e.addMember(e.mgmt, "ada@example.com")
	creatorExpires := testStart.Add(24 * time.Hour)
	creatorHash, creator := e.createKey(e.mgmt, map[string]any{"name": "creator", "creator_user_id": user,
		"limit": 0.01, "limit_reset": "daily", "expires_at": wireTime(creatorExpires)})
	g := e.guardrail(map[string]any{"allowed_models": []string{"acme/exact"}})
	e.assign(g, "keys", creatorHash)

	code := e.createCode(creator, map[string]any{"callback_url": "https://app.example.com/cb",
		"limit": 5, "usage_limit_type": "monthly", "expires_at": "2028-01-01T00:00:00Z"})
	got := e.exchange(map[string]any{"code": code.ID})
	hash := gatehouse.HashKey(got.Key)
	k := e.getKeyView(hash)
	if k.Limit == nil || *k.Limit != 0.01 || k.LimitReset != nil || k.ExpiresAt == nil ||
		*k.ExpiresAt != wireTime(creatorExpires) || k.WorkspaceID != e.workspaceIDOf(e.mgmt, "default") ||
		k.CreatorUserID == nil || *k.CreatorUserID != user {
		t.Errorf("exchanged key = %+v, want limit 0.01 never reset, expiry %s", k, wireTime(creatorExpires))
	}
	var list struct {
		Data []struct {
			KeyHash string `json:"key_hash"`
		} `json:"data"`
	}
	e.do("GET", "/api/v1/guardrails/"+g+"/assignments/keys", e.mgmt, nil).want(t, http.StatusOK).decode(t, &list)
	inherited := false
	for _, a := range list.Data {
		inherited = inherited || a.KeyHash == hash
	}
	if !inherited {
		t.Errorf("assignments of the creator's guardrail %+v lack the new key", list.Data)
	}
	e.unchanged("blocked model", func() { wantBlocked(t, e.chat(got.Key, chatBody("acme/chat")), g, "allowed_models") })

	// A creator with nothing left cannot create a code at all (402).
	_, spent := e.createKey(e.mgmt, map[string]any{"name": "spent", "limit": 0})
	e.unchanged("spent creator", func() {
		e.do("POST", "/api/v1/auth/keys/code", spent, map[string]any{"callback_url": "https://app.example.com/cb"}).
			want(t, http.StatusPaymentRequired)
	})
}

// TestOAuthCodeDiesWithCreator: once the creator key is disabled or
// deleted, or has expired, its pending code yields no key (403).
func TestOAuthCodeDiesWithCreator(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		kill func(e *testEnv, hash string)
	}{
		{"disabled", func(e *testEnv, hash string) { e.patchKeyView(hash, map[string]any{"disabled": true}) }},
		{"deleted", func(e *testEnv, hash string) {
			e.do("DELETE", "/api/v1/keys/"+hash, e.mgmt, nil).want(e.t, http.StatusOK)
		}},
		{"expired", func(e *testEnv, _ string) { e.clock.Set(testStart.Add(time.Hour)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			user := e.addMember(e.mgmt, "ada@example.com")
			hash, creator := e.createKey(e.mgmt, map[string]any{"name": "creator", "creator_user_id": user,
				"expires_at": wireTime(testStart.Add(time.Hour))})
			e.clock.Set(testStart.Add(time.Hour - time.Minute))
			code := e.createCode(creator, map[string]any{"callback_url": "https://app.example.com/cb"})
			c.kill(e, hash)
			res := e.do("POST", "/api/v1/auth/keys", "", map[string]any{"code": code.ID}).want(t, http.StatusForbidden)
			if msg := res.errorMessage(t); !strings.Contains(msg, "created this authorization code") {
				t.Errorf("message %q does not say the creator is gone", msg)
			}
			var list struct {
				Data []keyView `json:"data"`
			}
			e.do("GET", "/api/v1/keys?include_disabled=true", e.mgmt, nil).want(t, http.StatusOK).decode(t, &list)
			for _, k := range list.Data {
				if k.Hash != hash {
					t.Errorf("a key was created: %+v", k)
				}
			}
		})
	}
}

// TestOAuthCodeOfRemovedMember: a member's key and its pending code block
// their removal; once the key is disabled its code is dead, so the member
// can go, and the code then yields no key (403).
func TestOAuthCodeOfRemovedMember(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	user := e.addMember(e.mgmt, "ada@example.com")
	e.createWorkspace(e.mgmt, "apps")
	e.do("POST", "/api/v1/workspaces/apps/members/add", e.mgmt, map[string]any{"user_ids": []string{user}}).want(t, http.StatusOK)
	hash, creator := e.createKey(e.mgmt, map[string]any{"name": "creator", "creator_user_id": user, "workspace_id": "apps"})
	code := e.createCode(creator, map[string]any{"callback_url": "https://app.example.com/cb"})
	e.unchanged("blocked removals", func() {
		e.do("POST", "/api/v1/workspaces/apps/members/remove", e.mgmt, map[string]any{"user_ids": []string{user}}).
			want(t, http.StatusBadRequest)
		e.do("DELETE", "/api/v1/organization/members/"+user, e.mgmt, nil).want(t, http.StatusBadRequest)
	})
	e.patchKeyView(hash, map[string]any{"disabled": true})
	e.do("POST", "/api/v1/workspaces/apps/members/remove", e.mgmt, map[string]any{"user_ids": []string{user}}).want(t, http.StatusOK)
	e.do("DELETE", "/api/v1/organization/members/"+user, e.mgmt, nil).want(t, http.StatusOK)
	e.do("POST", "/api/v1/auth/keys", "", map[string]any{"code": code.ID}).want(t, http.StatusForbidden)
	var list struct {
		Data []keyView `json:"data"`
	}
	e.do("GET", "/api/v1/keys?include_disabled=true", e.mgmt, nil).want(t, http.StatusOK).decode(t, &list)
	if len(list.Data) != 1 || list.Data[0].Hash != hash {
		t.Errorf("keys after the refused exchange: %+v", list.Data)
	}
}
