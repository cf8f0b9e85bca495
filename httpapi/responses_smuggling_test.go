package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"gatehouse"
)

// smuggledResponses are Responses bodies that Go's decoder and a
// case-sensitive provider could read differently, or that make the
// provider spend what Gatehouse can neither see nor bound. Each asks
// Gatehouse for 1 token and the provider for much more; each must be a 400
// naming the field (and saying why).
var smuggledResponses = []struct {
	name, body, field string
}{
	{"case-folded cap beside the real one", `{"model":"acme/exact","input":"hi","max_output_tokens":1000,"Max_Output_Tokens":1}`, "Max_Output_Tokens"},
	{"Unicode-folded cap", `{"model":"acme/exact","input":"hi","max_output_tokens":1000,"max_output_tokenſ":1}`, "max_output_tokenſ"},
	{"escaped duplicate cap", `{"model":"acme/exact","input":"hi","max_output_tokens":1000,"max\u005foutput_tokens":1}`, "max_output_tokens"},
	{"plain duplicate cap", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"max_output_tokens":1000}`, "max_output_tokens"},
	{"a chat cap the provider may honour", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"max_tokens":1000}`, "max_tokens"},
	{"several responses", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"n":10}`, "n"},
	{"stored context: previous response", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"previous_response_id":"resp_123"}`, "previous_response_id"},
	{"stored context: conversation", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"conversation":"conv_123"}`, "conversation"},
	{"stored prompt template", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"prompt":{"id":"pmpt_1"}}`, "prompt"},
	{"stored item", `{"model":"acme/exact","input":[{"type":"item_reference","id":"msg_1"}],"max_output_tokens":1}`, "input[0].type"},
	{"reasoning to decrypt", `{"model":"acme/exact","input":[{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAAA"}],"max_output_tokens":1}`, "input[0].type"},
	{"a background run", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"background":true}`, "background"},
	{"stored at the provider", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"store":true}`, "store"},
	{"a dearer tier", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"service_tier":"priority"}`, "service_tier"},
	{"an unknown fallback model", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"models":["acme/nope"]}`, "models[0]"},
	{"plugins", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"plugins":[{"id":"web"}]}`, "plugins"},
	{"a web search tool", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"tools":[{"type":"web_search"}]}`, "tools[0].type"},
	{"an MCP server", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"tools":[{"type":"mcp","server_label":"x","server_url":"https://mcp.example.com"}]}`, "tools[0].type"},
	{"a code interpreter", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"tools":[{"type":"code_interpreter","container":{"type":"auto"}}]}`, "tools[0].type"},
	{"a function tool spelt twice", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"tools":[{"type":"function","name":"f","Type":"web_search"}]}`, "tools[0].Type"},
	{"a server tool choice", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"tool_choice":{"type":"web_search_preview"}}`, "tool_choice.type"},
	{"server tool output included", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"include":["file_search_call.results"]}`, "include[0]"},
	{"an image", `{"model":"acme/exact","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://example.com/a.png"}]}],"max_output_tokens":1}`, "input[0].content[0].type"},
	{"a file", `{"model":"acme/exact","input":[{"role":"user","content":[{"type":"input_file","file_id":"file_1"}]}],"max_output_tokens":1}`, "input[0].content[0].type"},
	{"duplicate message content", `{"model":"acme/exact","input":[{"role":"user","content":"hi","Content":"a much longer text"}],"max_output_tokens":1}`, "input[0].Content"},
	{"image output", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"modalities":["image"]}`, "modalities"},
	{"cache writes", `{"model":"acme/exact","input":"hi","max_output_tokens":1,"cache_control":{"type":"ephemeral"}}`, "cache_control"},
}

// TestResponsesRefused: every ambiguous or cost-multiplying body is a 400
// naming the field (and, for what the provider would bill unseen, saying
// why); management keys, missing and unknown keys are refused, and so is a
// stream the key cannot pay for, before any event. Nothing reaches the
// provider, nothing is charged.
func TestResponsesRefused(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, adversarialUpstream, nil)
	for _, c := range smuggledResponses {
		t.Run(c.name, func(t *testing.T) {
			r := e.respondRaw(e.key, c.body)
			if r.Status != http.StatusBadRequest || !strings.Contains(r.errorMessage(t), c.field) {
				t.Errorf("status %d %s; want 400 naming %s", r.Status, r.Body, c.field)
			}
		})
	}
	for field, why := range map[string]string{
		`"previous_response_id":"resp_1"`:  "pulls in context the provider stored",
		`"background":true`:                "runs on after the answer",
		`"store":true`:                     "store nothing",
		`"service_tier":"flex"`:            "billed at other prices",
		`"tools":[{"type":"file_search"}]`: "server tools are billed apart from tokens",
	} {
		msg := e.respondRaw(e.key, `{"model":"acme/chat","input":"hi",`+field+`}`).want(t, http.StatusBadRequest).errorMessage(t)
		if !strings.Contains(msg, why) {
			t.Errorf("%s: %q does not say %q", field, msg, why)
		}
	}
	if msg := e.respond(e.mgmt, respondBody("acme/chat")).want(t, http.StatusForbidden).errorMessage(t); !strings.Contains(msg, "management key") {
		t.Errorf("management key: %q", msg)
	}
	e.respond("", respondBody("acme/chat")).want(t, http.StatusUnauthorized)
	e.respond(gatehouse.NewKeySecret(false), respondBody("acme/chat")).want(t, http.StatusUnauthorized)
	poorHash, poor := e.createKey(e.mgmt, map[string]any{"name": "poor", "limit": 0.01})
	res := e.respond(poor, respondBody("acme/exact", "stream", true, "max_output_tokens", 100)).want(t, http.StatusPaymentRequired)
	if strings.Contains(string(res.Body), "response.created") {
		t.Errorf("answer %s", res.Body)
	}
	if n := len(e.up.requests()); n != 0 {
		t.Errorf("the provider was called %d times", n)
	}
	e.wantNothingCharged(e.hash)
	e.wantNothingCharged(poorHash)
}

// honestResponse asks for exactly 100 tokens of acme/exact: $0.10.
const honestResponse = `{"model":"acme/exact","input":"hi","max_output_tokens":100}`

// TestResponsesOverspend fires 50 concurrent requests at a $1.00 limit
// (the key's, or a guardrail budget's), half of them honest (each
// reserving and costing $0.10) and half smuggled bodies, against a
// provider that bills 400 tokens past the cap: exactly 10 are served, the
// smuggled ones are refused, the spend is exactly $1, and every body the
// provider received carries exactly the reserved cap.
func TestResponsesOverspend(t *testing.T) {
	t.Parallel()
	for name, limit := range map[string]func(e *chatEnv){
		"key limit": nil,
		"guardrail budget": func(e *chatEnv) {
			e.assign(e.guardrail(map[string]any{"limit_usd": 1, "reset_interval": "daily"}), "keys", e.hash)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			keyBody := map[string]any{"limit": 1, "limit_reset": "daily"}
			if limit != nil {
				keyBody = nil
			}
			e := newChatEnv(t, adversarialUpstream, keyBody)
			refused := http.StatusPaymentRequired
			if limit != nil {
				limit(e)
				refused = http.StatusForbidden
			}
			statuses := e.postConcurrently(t, 50, "/api/v1/responses", func(int) string { return e.key }, func(i int) string {
				if i%2 == 1 {
					return smuggledResponses[(i/2)%len(smuggledResponses)].body
				}
				return honestResponse
			})
			t.Logf("%s: %v", testEngine, statuses)
			want := map[int]int{http.StatusOK: 10, http.StatusBadRequest: 25, refused: 15}
			if len(statuses) != len(want) || statuses[200] != 10 || statuses[400] != 25 || statuses[refused] != 15 {
				t.Errorf("statuses %v, want %v", statuses, want)
			}
			_, costs, held := e.ledger(e.hash)
			var sum gatehouse.Money
			for _, c := range costs {
				sum += c
			}
			if m := e.money(e.hash); m.Usage != gatehouse.USD(1) || sum != gatehouse.USD(1) || len(costs) != 10 || held != 0 {
				t.Errorf("spent %s, ledger %d entries summing to %s, %d held; want exactly $1 in 10", m.Usage, len(costs), sum, held)
			}
			reqs := e.up.requests()
			for _, b := range reqs {
				if b["max_output_tokens"] != 100.0 || b["store"] != false || b["background"] != nil {
					t.Errorf("the provider received %v, want exactly the reserved cap 100 and store false", b)
				}
			}
			if len(reqs) != 10 {
				t.Errorf("the provider was called %d times, want 10", len(reqs))
			}
		})
	}
}
