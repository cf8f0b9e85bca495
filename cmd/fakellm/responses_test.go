package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func postResponses(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// responseObject is the part of a response object the tests read.
type responseObject struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Model             string `json:"model"`
	Status            string `json:"status"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

func TestResponses(t *testing.T) {
	srv, logs := start(t)
	for _, c := range []struct {
		body, text, status  string
		input, output       int
		incompleteForTokens bool
	}{
		{`{"model":"m","input":"hello there"}`, "You said: hello there", "completed", 2, 4, false},
		{`{"model":"m","instructions":"Be brief.","input":[{"role":"user","content":[{"type":"input_text","text":"one two"}]},
			{"type":"function_call_output","call_id":"c1","output":"three"}],"max_output_tokens":3}`, "The tool said:", "incomplete", 5, 3, true},
	} {
		var got responseObject
		resp := postResponses(t, srv.URL, c.body)
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%d: %v", resp.StatusCode, err)
		}
		if !strings.HasPrefix(got.ID, "resp_") || got.Object != "response" || got.Model != "m" || got.Status != c.status ||
			len(got.Output) != 1 || got.Output[0].Content[0].Text != c.text || got.Output[0].Role != "assistant" {
			t.Errorf("%s: answer %+v", c.body, got)
		}
		if (got.IncompleteDetails != nil && got.IncompleteDetails.Reason == "max_output_tokens") != c.incompleteForTokens {
			t.Errorf("%s: incomplete_details %+v", c.body, got.IncompleteDetails)
		}
		if u := got.Usage; u == nil || u.InputTokens != c.input || u.OutputTokens != c.output || u.TotalTokens != c.input+c.output {
			t.Errorf("%s: usage %+v, want %d + %d", c.body, u, c.input, c.output)
		}
	}
	if resp := postResponses(t, srv.URL, `{"model":"m"}`); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("no input: %d", resp.StatusCode)
	}
	if !strings.Contains(logs.String(), "POST /v1/responses 200") {
		t.Errorf("log: %s", logs)
	}
}

func TestResponsesStream(t *testing.T) {
	srv, _ := start(t)
	resp := postResponses(t, srv.URL, `{"model":"m","stream":true,"input":"a b c"}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	var kinds []string
	var text strings.Builder
	var final responseObject
	sc := bufio.NewScanner(resp.Body)
	event := ""
	for seq := 0; sc.Scan(); {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			event = name
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type     string          `json:"type"`
			Sequence int             `json:"sequence_number"`
			Delta    string          `json:"delta"`
			Response json.RawMessage `json:"response"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.Type != event || ev.Sequence != seq {
			t.Fatalf("event %q (named %q, want sequence %d): %v", data, event, seq, err)
		}
		seq++
		kinds = append(kinds, ev.Type)
		if ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
		if ev.Type == "response.completed" {
			_ = json.Unmarshal(ev.Response, &final)
		}
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.completed"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if text.String() != "You said: a b c" || final.Usage == nil || final.Usage.InputTokens != 3 || final.Usage.OutputTokens != 5 ||
		final.Status != "completed" {
		t.Errorf("text %q, final %+v", text.String(), final)
	}
}
