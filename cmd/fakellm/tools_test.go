package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

const weatherTool = `{"type":"function","function":{"name":"weather","parameters":{"type":"object",
	"properties":{"city":{"type":"string"},"days":{"type":"integer"},"unit":{"type":"string","enum":["c","f"]},"hint":{"type":"string"}},
	"required":["city","days","unit"]}}}`

// TestChatToolCall: offered a function tool, a chat completion calls it
// with arguments of its schema, whole or streamed as OpenAI streams calls;
// tool_choice "none" answers in words; a tool's result is answered.
func TestChatToolCall(t *testing.T) {
	srv, _ := start(t)
	body := `{"model":"m","messages":[{"role":"user","content":"Paris next week"}],"tools":[` + weatherTool + `]`
	var whole struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	resp := postChat(t, srv.URL, body+`}`)
	if err := json.NewDecoder(resp.Body).Decode(&whole); err != nil {
		t.Fatal(err)
	}
	c := whole.Choices[0]
	if c.FinishReason != "tool_calls" || c.Message.Content != nil || len(c.Message.ToolCalls) != 1 ||
		c.Message.ToolCalls[0].Type != "function" || c.Message.ToolCalls[0].Function.Name != "weather" ||
		c.Message.ToolCalls[0].Function.Arguments != `{"city":"Paris next week","days":3,"unit":"c"}` ||
		!strings.HasPrefix(c.Message.ToolCalls[0].ID, "call_") || whole.Usage.CompletionTokens != 3 {
		t.Errorf("whole: %+v", whole)
	}

	// Streamed: the arguments arrive in pieces that make the same object.
	resp = postChat(t, srv.URL, body+`,"stream":true,"stream_options":{"include_usage":true}}`)
	var args, finish, name string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				FinishReason *string `json:"finish_reason"`
				Delta        struct {
					ToolCalls []struct {
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatal(err)
		}
		for _, ch := range chunk.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				name += tc.Function.Name
				args += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if name != "weather" || args != `{"city":"Paris next week","days":3,"unit":"c"}` || finish != "tool_calls" {
		t.Errorf("streamed: %q %q %q", name, args, finish)
	}

	// tool_choice none: words; a tool's result: answered.
	for _, c := range []struct{ body, want string }{
		{body + `,"tool_choice":"none"}`, "You said: Paris next week"},
		{`{"model":"m","messages":[{"role":"user","content":"Paris"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":"sunny"}],"tools":[` + weatherTool + `]}`, "The tool said: sunny"},
	} {
		var got struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(postChat(t, srv.URL, c.body).Body).Decode(&got); err != nil || got.Choices[0].Message.Content != c.want {
			t.Errorf("%s: %+v %v", c.body, got, err)
		}
	}
}

// TestResponsesToolCall: the same in the Responses API: a function_call
// output item, whole or as its event stream.
func TestResponsesToolCall(t *testing.T) {
	srv, _ := start(t)
	tool := `{"type":"function","name":"weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`
	var got struct {
		Output []struct {
			Type, Name, Arguments, Status string
			CallID                        string `json:"call_id"`
		} `json:"output"`
	}
	resp := postResponses(t, srv.URL, `{"model":"m","input":"Paris","tools":[`+tool+`]}`)
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || len(got.Output) != 1 {
		t.Fatalf("%v %+v", err, got)
	}
	if o := got.Output[0]; o.Type != "function_call" || o.Name != "weather" || o.Arguments != `{"city":"Paris"}` || o.Status != "completed" || o.CallID == "" {
		t.Errorf("whole: %+v", o)
	}
	resp = postResponses(t, srv.URL, `{"model":"m","input":"Paris","stream":true,"tools":[`+tool+`]}`)
	var deltas, done string
	var kinds []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct{ Type, Delta, Arguments string }
		_ = json.Unmarshal([]byte(data), &ev)
		kinds = append(kinds, ev.Type)
		switch ev.Type {
		case "response.function_call_arguments.delta":
			deltas += ev.Delta
		case "response.function_call_arguments.done":
			done = ev.Arguments
		}
	}
	if deltas != `{"city":"Paris"}` || done != deltas || kinds[len(kinds)-1] != "response.completed" {
		t.Errorf("streamed: %q %q %v", deltas, done, kinds)
	}
}

func postChat(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
