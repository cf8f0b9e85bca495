package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Reads of keys and guardrails by id are served from each instance's cache;
// what one instance writes, another shows within the staleness bound of
// 1 s: key changes and usage, and lists of guardrails (read again once the
// cached copy is 1 s old), guardrail changes (announced by the database as
// they commit).

// seenWithin polls check until it holds, failing the test if a check that
// began more than limit after since still saw the old state.
func seenWithin(t *testing.T, what string, since time.Time, limit time.Duration, check func() bool) {
	t.Helper()
	for {
		began := time.Now()
		if check() {
			t.Logf("%s: seen %v after the write", what, time.Since(since).Round(time.Millisecond))
			return
		}
		if began.Sub(since) > limit {
			t.Fatalf("%s: not seen %v after the write (a read that began then still showed the old state)", what, began.Sub(since))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestInstancesShowEachOthersWrites: two instances on one PostgreSQL
// database; each write on A, read through B's cache before and after.
func TestInstancesShowEachOthersWrites(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"echo",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500}}`))
	}))
	defer upstream.Close()
	vars, mgmt := pgInstances(t)
	vars["GATEHOUSE_PROVIDERS_FILE"] = writeProviders(t, t.TempDir(), upstream.URL+"/v1")
	vars["FAKE_API_KEY"] = "upstream-key"
	servers := startInstances(t, vars, 2)
	a, b := servers[0], servers[1]
	const bound = time.Second

	status, body := a.do("POST", "/api/v1/keys", mgmt, map[string]any{"name": "shared"})
	if status != http.StatusCreated {
		t.Fatalf("create key on A: %d %v", status, body)
	}
	hash, key := str(body["data"].(map[string]any)["hash"]), str(body["key"])
	// field returns a field of B's answer to GET path with key.
	field := func(path, key, name string) any {
		status, body := b.do("GET", path, key, nil)
		if status != http.StatusOK {
			t.Fatalf("GET %s on B: %d %v", path, status, body)
		}
		return body["data"].(map[string]any)[name]
	}
	for range 3 { // B caches the key
		field("/api/v1/keys/"+hash, mgmt, "name")
		field("/api/v1/key", key, "usage")
	}

	t.Run("key renamed on A", func(t *testing.T) {
		if status, body := a.do("PATCH", "/api/v1/keys/"+hash, mgmt, map[string]any{"name": "renamed"}); status != http.StatusOK {
			t.Fatalf("rename on A: %d %v", status, body)
		}
		seenWithin(t, "GET /keys/{hash} on B", time.Now(), bound, func() bool {
			return field("/api/v1/keys/"+hash, mgmt, "name") == "renamed"
		})
	})

	t.Run("usage spent through A", func(t *testing.T) {
		field("/api/v1/keys/"+hash, mgmt, "usage") // cached again, before the spend
		status, body := a.do("POST", "/api/v1/chat/completions", key, map[string]any{
			"model": "fake/echo", "messages": []any{map[string]any{"role": "user", "content": "hello"}}})
		if status != http.StatusOK {
			t.Fatalf("completion on A: %d %v", status, body)
		}
		spent := time.Now()
		// 1000 prompt tokens at $1/M and 500 completion tokens at $2/M.
		seenWithin(t, "usage in GET /keys/{hash} on B", spent, bound, func() bool {
			return field("/api/v1/keys/"+hash, mgmt, "usage") == 0.002
		})
		seenWithin(t, "usage in GET /key on B", spent, bound, func() bool {
			return field("/api/v1/key", key, "usage") == 0.002
		})
	})

	t.Run("guardrail created, changed and deleted on A", func(t *testing.T) {
		// total returns the total_count of B's first page of guardrails.
		total := func() float64 {
			status, body := b.do("GET", "/api/v1/guardrails?limit=100", mgmt, nil)
			if status != http.StatusOK {
				t.Fatalf("list on B: %d %v", status, body)
			}
			return body["total_count"].(float64)
		}
		before := total() // B caches the page
		status, body := a.do("POST", "/api/v1/guardrails", mgmt, map[string]any{"name": "shared"})
		if status != http.StatusCreated {
			t.Fatalf("create guardrail on A: %d %v", status, body)
		}
		seenWithin(t, "guardrail created, in B's list", time.Now(), bound, func() bool { return total() == before+1 })
		path := "/api/v1/guardrails/" + str(body["data"].(map[string]any)["id"])
		for range 3 { // B caches the guardrail
			field(path, mgmt, "name")
		}
		if status, body := a.do("PATCH", path, mgmt, map[string]any{"name": "renamed"}); status != http.StatusOK {
			t.Fatalf("rename on A: %d %v", status, body)
		}
		seenWithin(t, "guardrail renamed, on B", time.Now(), bound, func() bool { return field(path, mgmt, "name") == "renamed" })
		if status, body := a.do("DELETE", path, mgmt, nil); status != http.StatusOK {
			t.Fatalf("delete on A: %d %v", status, body)
		}
		seenWithin(t, "guardrail deleted, on B", time.Now(), bound, func() bool {
			status, _ := b.do("GET", path, mgmt, nil)
			return status == http.StatusNotFound
		})
	})
}
