package httpapi_test

import (
	"database/sql"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDestinationUpdate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const secret, public = "sk-lf-original-secret-0123", "pk-lf-public"
	d := e.createDestination(e.mgmt, map[string]any{"name": "lf", "type": "langfuse",
		"config": map[string]any{"publicKey": public, "secretKey": secret, "headers": map[string]any{"X-Team": "team-secret-header-value"}}})
	id := d["id"].(string)
	path := "/api/v1/observability/destinations/" + id
	patch := func(body map[string]any) map[string]any {
		t.Helper()
		return resData(t, e.do("PATCH", path, e.mgmt, body).want(t, http.StatusOK))
	}
	cfg := func(d map[string]any) map[string]any { return d["config"].(map[string]any) }

	t.Run("masked value sent back keeps the secret", func(t *testing.T) {
		e := e.sub(t)
		masked := cfg(d)["secretKey"].(string)
		got := patch(map[string]any{"config": map[string]any{"secretKey": masked}})
		if cfg(got)["secretKey"] != masked {
			t.Errorf("secretKey = %v", cfg(got)["secretKey"])
		}
		// The whole configuration as GET shows it, sent back unchanged.
		got = patch(map[string]any{"config": cfg(resData(t, e.do("GET", path, e.mgmt, nil).want(t, http.StatusOK)))})
		if diff := cmp.Diff(cfg(d), cfg(got)); diff != "" {
			t.Errorf("config after sending it back (-want +got):\n%s", diff)
		}
		stored := e.storedConfig(id)
		if stored.Values["secretKey"] != secret || stored.Headers["X-Team"] != "team-secret-header-value" || stored.Values["publicKey"] != public {
			t.Errorf("stored config = %v %v: the masked values replaced the secrets", stored.Values, stored.Headers)
		}
	})

	t.Run("new value replaces the secret", func(t *testing.T) {
		e := e.sub(t)
		const next = "sk-lf-replacement-9876543210"
		got := patch(map[string]any{"config": map[string]any{"secretKey": next}})
		resMasked(t, "secretKey", next, cfg(got)["secretKey"])
		if cfg(got)["publicKey"] != public {
			t.Errorf("publicKey changed: %v", cfg(got)["publicKey"])
		}
		if s := e.storedConfig(id).Values["secretKey"]; s != next {
			t.Errorf("stored secretKey = %q, want %q", s, next)
		}
		// A short secret is fully masked, and its mask sent back keeps it too.
		got = patch(map[string]any{"config": map[string]any{"secretKey": "tiny"}})
		resMasked(t, "secretKey", "tiny", cfg(got)["secretKey"])
		patch(map[string]any{"config": map[string]any{"secretKey": cfg(got)["secretKey"]}})
		if s := e.storedConfig(id).Values["secretKey"]; s != "tiny" {
			t.Errorf("stored secretKey = %q, want tiny", s)
		}
		// Masks count characters, not bytes, so that they survive JSON and
		// compare equal when sent back.
		const wide = "ключ-секрет-0123456789"
		got = patch(map[string]any{"config": map[string]any{"secretKey": wide}})
		resMasked(t, "secretKey", wide, cfg(got)["secretKey"])
		patch(map[string]any{"config": map[string]any{"secretKey": cfg(got)["secretKey"]}})
		if s := e.storedConfig(id).Values["secretKey"]; s != wide {
			t.Errorf("stored secretKey = %q, want %q", s, wide)
		}
	})

	t.Run("config merges key by key", func(t *testing.T) {
		e := e.sub(t)
		// Moving the destination needs its secrets again, in clear.
		again := map[string]any{"secretKey": secret, "headers": map[string]any{"X-Team": "team-secret-header-value"}}
		got := patch(map[string]any{"config": merged(again, "baseUrl", "https://eu.cloud.langfuse.com")})
		if c := cfg(got); c["baseUrl"] != "https://eu.cloud.langfuse.com" || c["publicKey"] != public || c["secretKey"] == nil || c["headers"] == nil {
			t.Errorf("config after merging baseUrl = %v", c)
		}
		// null removes an optional key (which falls back to its default).
		got = patch(map[string]any{"config": merged(again, "baseUrl", nil)})
		if c := cfg(got); c["baseUrl"] != "https://us.cloud.langfuse.com" {
			t.Errorf("baseUrl after null = %v, want the default", c["baseUrl"])
		}
		got = patch(map[string]any{"config": map[string]any{"headers": nil}})
		if _, ok := cfg(got)["headers"]; ok {
			t.Errorf("headers after null = %v", cfg(got)["headers"])
		}
		if e.storedConfig(id).Headers != nil {
			t.Errorf("stored headers remain")
		}
	})

	t.Run("null removes an optional key without default", func(t *testing.T) {
		e := e.sub(t)
		s3 := e.createDestination(e.mgmt, map[string]any{"name": "s3", "type": "s3", "config": map[string]any{
			"accessKeyId": "AKIA", "secretAccessKey": "secret-access-key-0123456789", "bucketName": "b",
			"region": "eu-west-1", "sessionToken": "session-token-0123456789"}})
		got := resData(t, e.do("PATCH", "/api/v1/observability/destinations/"+s3["id"].(string), e.mgmt,
			map[string]any{"config": map[string]any{"region": nil, "sessionToken": nil, "secretAccessKey": "secret-access-key-0123456789"}}).want(t, http.StatusOK))
		c := cfg(got)
		if _, ok := c["region"]; ok {
			t.Errorf("region after null = %v", c["region"])
		}
		if _, ok := c["sessionToken"]; ok {
			t.Errorf("sessionToken after null = %v", c["sessionToken"])
		}
		if c["bucketName"] != "b" || c["accessKeyId"] != "AKIA" {
			t.Errorf("other keys changed: %v", c)
		}
		if _, ok := e.storedConfig(s3["id"].(string)).Values["sessionToken"]; ok {
			t.Errorf("stored sessionToken remains")
		}
	})

	t.Run("other fields", func(t *testing.T) {
		e := e.sub(t)
		k, _ := e.createKey(e.mgmt, map[string]any{"name": "k"})
		cur := resData(t, e.do("GET", path, e.mgmt, nil).want(t, http.StatusOK))
		for _, c := range []struct {
			body map[string]any
			want map[string]any
		}{
			{map[string]any{"name": "renamed"}, nil},
			{map[string]any{"enabled": false, "privacy_mode": true}, nil},
			{map[string]any{"sampling_rate": 0.5}, nil},
			{map[string]any{"api_key_hashes": []any{k}}, nil},
			{map[string]any{"api_key_hashes": nil}, nil},
			{map[string]any{"regions": []any{"eu"}}, map[string]any{"regions": []any{"europe"}}},
			{map[string]any{"filter_rules": map[string]any{"groups": []any{}}}, map[string]any{"filter_rules": map[string]any{"enabled": true, "groups": []any{}}}},
			{map[string]any{"filter_rules": nil}, nil},
			{map[string]any{"broadcast_generation_cost": true, "broadcast_generation_identity": true, "broadcast_generation_request_context": true}, nil},
			{map[string]any{}, nil},
		} {
			e.tick()
			got := patch(c.body)
			want := resPatched(cur, c.body, c.want)
			want["updated_at"] = e.now()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("PATCH %v (-want +got):\n%s", c.body, diff)
			}
			cur = got
		}
	})

	t.Run("refused", func(t *testing.T) {
		e := e.sub(t)
		for _, c := range []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"type", map[string]any{"type": "webhook"}, "type"},
			{"workspace_id", map[string]any{"workspace_id": "default"}, "workspace_id"},
			{"unknown config key", map[string]any{"config": map[string]any{"bogus": "x"}}, "config.bogus"},
			{"required removed", map[string]any{"config": map[string]any{"secretKey": nil}}, "config.secretKey"},
			{"required emptied", map[string]any{"config": map[string]any{"publicKey": ""}}, "config.publicKey"},
			{"bad url", map[string]any{"config": map[string]any{"baseUrl": "file:///etc/passwd"}}, "config.baseUrl"},
			{"config null", map[string]any{"config": nil}, "config"},
			{"name null", map[string]any{"name": nil}, "name"},
			{"enabled null", map[string]any{"enabled": nil}, "enabled"},
			{"regions null", map[string]any{"regions": nil}, "regions"},
			{"sampling 0", map[string]any{"sampling_rate": 0}, "sampling_rate"},
			{"sampling 2", map[string]any{"sampling_rate": 2}, "sampling_rate"},
			{"bad operator", map[string]any{"filter_rules": map[string]any{"groups": []any{map[string]any{"rules": []any{
				map[string]any{"field": "model", "operator": "near", "value": "x"}}}}}}, "operator"},
		} {
			e.runUnchanged(t, c.name, func(t *testing.T, e *testEnv) {
				resWantError(t, e.do("PATCH", path, e.mgmt, c.body), http.StatusBadRequest, c.field)
			})
		}
	})
}

// TestDestinationSoftDelete checks the seed's delete: with an empty JSON
// object or no body, a soft delete after which the destination is gone from
// the API but its row remains.
func TestDestinationSoftDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hook := map[string]any{"name": "h", "type": "webhook", "config": map[string]any{"url": "https://e.com"}}
	keep := e.createDestination(e.mgmt, hook)["id"].(string)
	for _, c := range []struct {
		name string
		send func(path string) *response
	}{
		{"empty JSON object", func(path string) *response { return e.do("DELETE", path, e.mgmt, map[string]any{}) }},
		{"no body", func(path string) *response { return e.do("DELETE", path, e.mgmt, nil) }},
		{"empty body with Content-Type", func(path string) *response {
			return e.sendRawBody("DELETE", path, e.mgmt, "application/json", "")
		}},
		{"whitespace body", func(path string) *response {
			return e.sendRawBody("DELETE", path, e.mgmt, "application/json", " \n")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := e.sub(t)
			id := e.createDestination(e.mgmt, hook)["id"].(string)
			path := "/api/v1/observability/destinations/" + id
			e.tick()
			resWantDeleted(t, c.send(path))
			deletedAt := e.clock.Now().UnixMilli()
			e.tick()
			e.unchanged("after delete", func() {
				resWantError(t, e.do("GET", path, e.mgmt, nil), http.StatusNotFound, "not found")
				resWantError(t, e.do("PATCH", path, e.mgmt, map[string]any{"name": "back"}), http.StatusNotFound, "not found")
				resWantError(t, e.do("DELETE", path, e.mgmt, nil), http.StatusNotFound, "not found")
				resWantError(t, e.do("DELETE", path, e.mgmt, map[string]any{}), http.StatusNotFound, "not found")
			})
			items, total := resList(t, e.do("GET", "/api/v1/observability/destinations", e.mgmt, nil).want(t, http.StatusOK))
			if diff := cmp.Diff([]string{keep}, resField(items, "id")); diff != "" || total != 1 {
				t.Errorf("list after delete (total %d, want 1) (-want +got):\n%s", total, diff)
			}
			var at sql.NullInt64
			var name string
			if err := e.readDB().QueryRow(`SELECT deleted_at, name FROM destinations WHERE id = $1`, id).Scan(&at, &name); err != nil {
				t.Fatalf("the row of a soft-deleted destination: %v", err)
			}
			if !at.Valid || at.Int64 != deletedAt || name != "h" {
				t.Errorf("row: deleted_at %v name %q, want deleted_at %d", at, name, deletedAt)
			}
		})
	}
	e.unchanged("refused deletes", func() {
		path := "/api/v1/observability/destinations/" + keep
		resWantError(t, e.do("DELETE", path, e.mgmt, map[string]any{"force": true}), http.StatusBadRequest, "force")
		resWantError(t, e.sendRawBody("DELETE", path, e.mgmt, "application/json", "{"), http.StatusBadRequest, "malformed JSON")
		resWantError(t, e.sendRawBody("DELETE", path, e.mgmt, "application/json", "[]"), http.StatusBadRequest, "JSON object")
		resWantError(t, e.sendRawBody("DELETE", path, e.mgmt, "text/plain", "{}"), http.StatusUnsupportedMediaType, "Content-Type")
		resWantError(t, e.sendRawBody("DELETE", path, e.mgmt, "application/json", `{"a":"`+strings.Repeat("x", 1<<20)+`"}`),
			http.StatusRequestEntityTooLarge, "bytes")
		for _, bad := range []string{"nope", "123", "00000000-0000-4000-8000-000000000000"} {
			for _, m := range []string{"GET", "DELETE"} {
				resWantError(t, e.do(m, "/api/v1/observability/destinations/"+bad, e.mgmt, nil), http.StatusNotFound, "not found")
			}
			resWantError(t, e.do("PATCH", "/api/v1/observability/destinations/"+bad, e.mgmt, map[string]any{}), http.StatusNotFound, "not found")
		}
	})
}

// TestDestinationBadInput sends malformed destination requests: each is
// refused, naming what was wrong, and changes nothing.
func TestDestinationBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createDestination(e.mgmt, map[string]any{"name": "h", "type": "webhook", "config": map[string]any{"url": "https://e.com"}})["id"].(string)
	const create = "/api/v1/observability/destinations"
	dp := create + "/" + id
	hook := `"name":"h","type":"webhook","config":{"url":"https://e.com"}`
	rules := func(inner string) string { return `{` + hook + `,"filter_rules":` + inner + `}` }
	e.runBadInput(t, []resBadInput{
		resBad("malformed", "POST", create, `{"name":"h",`, 400, "malformed JSON"),
		resBad("not an object", "POST", create, `null`, 400, "JSON object"),
		resBad("empty body", "POST", create, ``, 400, "request body"),
		resBad("trailing", "POST", create, `{`+hook+`}]`, 400, ""),
		resBad("config string", "POST", create, `{"name":"h","type":"webhook","config":"https://e.com"}`, 400, "config"),
		resBad("config array", "POST", create, `{"name":"h","type":"webhook","config":["x"]}`, 400, "config"),
		resBad("config value number", "POST", create, `{"name":"h","type":"webhook","config":{"url":5}}`, 400, "config.url"),
		resBad("config headers string", "POST", create, `{"name":"h","type":"webhook","config":{"url":"https://e.com","headers":"x"}}`, 400, "config.headers"),
		resBad("config header number", "POST", create, `{"name":"h","type":"webhook","config":{"url":"https://e.com","headers":{"X-A":1}}}`, 400, "config.headers"),
		resBad("config unknown key", "POST", create, `{"name":"h","type":"webhook","config":{"url":"https://e.com","secret":"x"}}`, 400, "config.secret"),
		resBad("type number", "POST", create, `{"name":"h","type":1,"config":{}}`, 400, "type"),
		resBad("type null", "POST", create, `{"name":"h","type":null,"config":{}}`, 400, "type"),
		resBad("config null", "POST", create, `{"name":"h","type":"webhook","config":null}`, 400, "config"),
		resBad("name null", "POST", create, `{"name":null,"type":"webhook","config":{"url":"https://e.com"}}`, 400, "name"),
		resBad("enabled string", "POST", create, `{`+hook+`,"enabled":"true"}`, 400, "enabled"),
		resBad("enabled null", "POST", create, `{`+hook+`,"enabled":null}`, 400, "enabled"),
		resBad("sampling string", "POST", create, `{`+hook+`,"sampling_rate":"1"}`, 400, "sampling_rate"),
		resBad("sampling 0", "POST", create, `{`+hook+`,"sampling_rate":0}`, 400, "sampling_rate"),
		resBad("sampling -1", "POST", create, `{`+hook+`,"sampling_rate":-1}`, 400, "sampling_rate"),
		resBad("sampling 101", "POST", create, `{`+hook+`,"sampling_rate":101}`, 400, "sampling_rate"),
		resBad("regions string", "POST", create, `{`+hook+`,"regions":"global"}`, 400, "regions"),
		resBad("regions empty", "POST", create, `{`+hook+`,"regions":[]}`, 400, "regions"),
		resBad("api_key_hashes string", "POST", create, `{`+hook+`,"api_key_hashes":"x"}`, 400, "api_key_hashes"),
		resBad("unknown field", "POST", create, `{`+hook+`,"secret":"x"}`, 400, "secret"),
		resBad("duplicate key", "POST", create, `{`+hook+`,"name":"again"}`, 400, "name"),
		resBad("duplicate config key", "POST", create, `{"name":"h","type":"webhook","config":{"url":"https://a.com","url":"https://b.com"}}`, 400, "config.url"),
		resBad("filter_rules array", "POST", create, rules(`[]`), 400, "filter_rules"),
		resBad("filter_rules unknown", "POST", create, rules(`{"groups":[],"mode":"x"}`), 400, "filter_rules.mode"),
		resBad("filter group unknown", "POST", create, rules(`{"groups":[{"rules":[],"negate":true}]}`), 400, "filter_rules.groups[0].negate"),
		resBad("filter rule unknown", "POST", create, rules(`{"groups":[{"rules":[{"field":"model","operator":"exists","case":1}]}]}`), 400, "filter_rules.groups[0].rules[0].case"),
		resBad("filter rule wrong type", "POST", create, rules(`{"groups":[{"rules":[{"field":1,"operator":"exists"}]}]}`), 400, "field"),
		resBad("filter enabled string", "POST", create, rules(`{"enabled":"yes","groups":[]}`), 400, "enabled"),
		resBad("filter bad operator", "POST", create, rules(`{"groups":[{"rules":[{"field":"model","operator":"~","value":"x"}]}]}`), 400, "filter_rules.groups[0].rules[0].operator"),
		resBad("name 201", "POST", create, `{"name":"`+strings.Repeat("n", 201)+`","type":"webhook","config":{"url":"https://e.com"}}`, 400, "name"),
		resBad("oversized", "POST", create, `{`+hook+`,"name":"`+strings.Repeat("n", 1<<20)+`"}`, 413, "bytes"),
		resBad("text/plain", "POST", create, `{`+hook+`}`, 415, "Content-Type", "text/plain"),
		resBad("unknown workspace", "POST", create, `{`+hook+`,"workspace_id":"nope"}`, 404, "workspace"),
		// update
		resBad("update malformed", "PATCH", dp, `{"name":"x"`, 400, "malformed JSON"),
		resBad("update type", "PATCH", dp, `{"type":"webhook"}`, 400, "type"),
		resBad("update workspace_id", "PATCH", dp, `{"workspace_id":"default"}`, 400, "workspace_id"),
		resBad("update config value", "PATCH", dp, `{"config":{"url":true}}`, 400, "config.url"),
		resBad("update nested unknown", "PATCH", dp, `{"filter_rules":{"groups":[{"rules":[{"field":"model","operator":"exists","x":1}]}]}}`, 400, "filter_rules.groups[0].rules[0].x"),
		resBad("update duplicate", "PATCH", dp, `{"enabled":true,"enabled":false}`, 400, "enabled"),
		resBad("update privacy null", "PATCH", dp, `{"privacy_mode":null}`, 400, "privacy_mode"),
		resBad("update broadcast string", "PATCH", dp, `{"broadcast_generation_cost":"no"}`, 400, "broadcast_generation_cost"),
		resBad("update sampling 1.0001", "PATCH", dp, `{"sampling_rate":1.0001}`, 400, "sampling_rate"),
		resBad("update text/plain", "PATCH", dp, `{}`, 415, "Content-Type", "text/plain"),
		resBad("update oversized", "PATCH", dp, `{"name":"`+strings.Repeat("n", 1<<20)+`"}`, 413, "bytes"),
		resBad("update non-uuid", "PATCH", create+"/x", `{}`, 404, "not found"),
		resBad("delete unknown field", "DELETE", dp, `{"id":"x"}`, 400, "id"),
		resBad("delete text/plain", "DELETE", dp, `{}`, 415, "Content-Type", "text/plain"),
		resBad("delete non-uuid", "DELETE", create+"/"+id+"x", ``, 404, "not found"),
	})
}

// merged returns a copy of m with key set to v.
func merged(m map[string]any, key string, v any) map[string]any {
	out := map[string]any{key: v}
	for k, x := range m {
		out[k] = x
	}
	return out
}

// TestDestinationMoveNeedsSecrets: a change of where a destination connects
// must carry every stored secret again, in clear; else its secrets would go
// to wherever a management key pointed it. Nothing changes on refusal.
func TestDestinationMoveNeedsSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hook := e.createDestination(e.mgmt, map[string]any{"name": "hook", "type": "webhook",
		"config": map[string]any{"url": "https://hooks.example.com/in", "headers": map[string]any{"Authorization": "Bearer hook-secret-0123456789"}}})
	lf := e.createDestination(e.mgmt, map[string]any{"name": "lf", "type": "langfuse",
		"config": map[string]any{"publicKey": "pk-lf-1", "secretKey": "sk-lf-secret-0123456789"}})
	s3 := e.createDestination(e.mgmt, map[string]any{"name": "s3", "type": "s3",
		"config": map[string]any{"accessKeyId": "AKIA", "secretAccessKey": "s3-secret-0123456789", "bucketName": "b", "region": "eu-west-1"}})
	path := func(d map[string]any) string { return "/api/v1/observability/destinations/" + d["id"].(string) }
	for _, c := range []struct {
		name    string
		d       map[string]any
		config  map[string]any
		missing []string
	}{
		{"webhook url, header kept masked", hook, map[string]any{"url": "https://attacker.example/x"}, []string{"config.headers.Authorization"}},
		{"webhook url, masked header sent back", hook, map[string]any{"url": "https://attacker.example/x", "headers": map[string]any{"Authorization": "********"}}, []string{"config.headers.Authorization"}},
		{"langfuse baseUrl", lf, map[string]any{"baseUrl": "https://attacker.example"}, []string{"config.secretKey"}},
		{"langfuse baseUrl, mask sent back", lf, map[string]any{"baseUrl": "https://attacker.example", "secretKey": "********6789"}, []string{"config.secretKey"}},
		{"s3 bucket", s3, map[string]any{"bucketName": "attacker-bucket"}, []string{"config.secretAccessKey"}},
		{"s3 region", s3, map[string]any{"region": "us-east-1"}, []string{"config.secretAccessKey"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.unchanged(c.name, func() {
				res := e.do("PATCH", path(c.d), e.mgmt, map[string]any{"config": c.config}).want(t, http.StatusBadRequest)
				msg := res.errorMessage(t)
				for _, m := range c.missing {
					if !strings.Contains(msg, m) {
						t.Errorf("message %q does not name %s", msg, m)
					}
				}
			})
		})
	}
	// With the secrets given again, the move is allowed, and they are stored.
	e.do("PATCH", path(hook), e.mgmt, map[string]any{"config": map[string]any{"url": "https://hooks2.example.com/in",
		"headers": map[string]any{"Authorization": "Bearer new-hook-secret-0123"}}}).want(t, http.StatusOK)
	if h := e.storedConfig(hook["id"].(string)).Headers["Authorization"]; h != "Bearer new-hook-secret-0123" {
		t.Errorf("stored header %q", h)
	}
	// Changes that do not move it need no secrets.
	e.do("PATCH", path(lf), e.mgmt, map[string]any{"config": map[string]any{"publicKey": "pk-lf-2"}, "name": "renamed"}).want(t, http.StatusOK)
}
