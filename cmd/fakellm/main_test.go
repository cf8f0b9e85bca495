package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuffer collects the log, which the server writes while the test reads.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func start(t *testing.T) (*httptest.Server, *logBuffer) {
	logs := &logBuffer{}
	srv := httptest.NewServer(newHandler(log.New(logs, "", 0)))
	t.Cleanup(srv.Close)
	return srv, logs
}

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

type completion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Message      struct{ Role, Content string } `json:"message"`
		Delta        struct{ Content string }       `json:"delta"`
		FinishReason *string                        `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

func TestCompletion(t *testing.T) {
	srv, logs := start(t)
	tests := []struct {
		body, answer, finish string
		prompt, completion   int
	}{
		{`{"model":"m1","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hello there world"}]}`,
			"You said: hello there world", "stop", 5, 5},
		{`{"model":"m2","max_tokens":3,"messages":[{"role":"user","content":[{"type":"text","text":"one two"}]}]}`,
			"You said: one", "length", 2, 3},
	}
	for _, tt := range tests {
		resp := post(t, srv.URL, tt.body)
		var c completion
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, decode: %v", resp.StatusCode, err)
		}
		if !strings.HasPrefix(c.ID, "chatcmpl-") || c.Object != "chat.completion" || !strings.Contains(tt.body, `"`+c.Model+`"`) ||
			len(c.Choices) != 1 || c.Choices[0].Message.Content != tt.answer || c.Choices[0].Message.Role != "assistant" ||
			*c.Choices[0].FinishReason != tt.finish {
			t.Errorf("answer = %+v, want %q finishing %s", c, tt.answer, tt.finish)
		}
		if u := c.Usage; u == nil || u.PromptTokens != tt.prompt || u.CompletionTokens != tt.completion || u.TotalTokens != tt.prompt+tt.completion {
			t.Errorf("usage = %+v, want %d + %d", u, tt.prompt, tt.completion)
		}
	}
	if resp := post(t, srv.URL, `{"model":"m"}`); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("no messages: status %d, want 400", resp.StatusCode)
	}
	if n := strings.Count(logs.String(), "POST /v1/chat/completions"); n != 3 {
		t.Errorf("%d log lines for 3 requests:\n%s", n, logs)
	}
}

func TestStream(t *testing.T) {
	srv, _ := start(t)
	for _, includeUsage := range []bool{true, false} {
		opts := `,"stream_options":{"include_usage":false}`
		if includeUsage {
			opts = `,"stream_options":{"include_usage":true}`
		}
		resp := post(t, srv.URL, `{"model":"m","stream":true`+opts+`,"messages":[{"role":"user","content":"a b c"}]}`)
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("Content-Type = %q", ct)
		}
		var text strings.Builder
		var events []string
		var usage, finish int
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			events = append(events, data)
			if data == "[DONE]" {
				continue
			}
			var c completion
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				t.Fatalf("chunk %q: %v", data, err)
			}
			if c.Object != "chat.completion.chunk" || c.Model != "m" || !strings.HasPrefix(c.ID, "chatcmpl-") {
				t.Errorf("chunk = %s", data)
			}
			if c.Usage != nil {
				usage++
				if len(c.Choices) != 0 || c.Usage.PromptTokens != 3 || c.Usage.CompletionTokens != 5 {
					t.Errorf("usage chunk = %s, want 3 + 5 tokens and no choices", data)
				}
			}
			for _, ch := range c.Choices {
				text.WriteString(ch.Delta.Content)
				if ch.FinishReason != nil && *ch.FinishReason == "stop" {
					finish++
				}
			}
		}
		if text.String() != "You said: a b c" || finish != 1 || events[len(events)-1] != "[DONE]" {
			t.Errorf("stream: text %q, %d finish reasons, last event %q", text.String(), finish, events[len(events)-1])
		}
		if want := map[bool]int{true: 1, false: 0}[includeUsage]; usage != want {
			t.Errorf("include_usage %t: %d usage chunks, want %d", includeUsage, usage, want)
		}
		if includeUsage && !strings.Contains(events[len(events)-2], `"usage":{`) {
			t.Errorf("the usage chunk is not the last before [DONE]: %s", events[len(events)-2])
		}
	}
}

func TestModels(t *testing.T) {
	srv, _ := start(t)
	resp, err := http.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"id":"echo"`) {
		t.Errorf("GET /v1/models = %d %s", resp.StatusCode, raw)
	}
}

func TestEmbeddings(t *testing.T) {
	srv, logs := start(t)
	for _, c := range []struct {
		input        string
		inputs, want int
	}{
		{`"hello there world"`, 1, 3},
		{`["one two", "three"]`, 2, 3},
		{`[5, 6, 7, 8]`, 1, 4},
		{`[[1, 2], [3]]`, 2, 3},
	} {
		resp := postEmbeddings(t, srv.URL, `{"model":"embed","input":`+c.input+`}`)
		var got struct {
			Object string `json:"object"`
			Model  string `json:"model"`
			Data   []struct {
				Object    string    `json:"object"`
				Index     int       `json:"index"`
				Embedding []float64 `json:"embedding"`
			} `json:"data"`
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
				TotalTokens  int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || got.Object != "list" || got.Model != "embed" || len(got.Data) != c.inputs ||
			got.Data[0].Object != "embedding" || len(got.Data[0].Embedding) != 3 ||
			got.Usage.PromptTokens != c.want || got.Usage.TotalTokens != c.want {
			t.Errorf("%s: %d %+v", c.input, resp.StatusCode, got)
		}
	}
	if resp := postEmbeddings(t, srv.URL, `{"input":"x"}`); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("no model: %d", resp.StatusCode)
	}
	if !strings.Contains(logs.String(), "POST /v1/embeddings 200") {
		t.Errorf("log: %s", logs.String())
	}
}

// TestEmbeddingsBase64: encoding_format base64 answers each vector as
// OpenAI does, the base64 of its little-endian float32s (what the openai
// and LangChain clients ask for by default, and decode); float is the
// default; any other format is refused as OpenAI refuses it.
func TestEmbeddingsBase64(t *testing.T) {
	srv, _ := start(t)
	var got struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
	}
	resp := postEmbeddings(t, srv.URL, `{"model":"embed","input":["one two", "three"],"encoding_format":"base64"}`)
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || len(got.Data) != 2 {
		t.Fatalf("%v %+v", err, got)
	}
	for i, want := range [][]float32{{2, 9, 1}, {1, 7, 1}} {
		raw, err := base64.StdEncoding.DecodeString(got.Data[i].Embedding)
		if err != nil || len(raw) != 12 {
			t.Fatalf("embedding %d: %q (%v)", i, got.Data[i].Embedding, err)
		}
		for j, w := range want {
			if v := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:])); v != w {
				t.Errorf("embedding %d[%d] = %v, want %v", i, j, v, w)
			}
		}
	}
	if resp := postEmbeddings(t, srv.URL, `{"model":"embed","input":"x","encoding_format":"float"}`); resp.StatusCode != http.StatusOK {
		t.Errorf("float: %d", resp.StatusCode)
	}
	resp = postEmbeddings(t, srv.URL, `{"model":"embed","input":"x","encoding_format":"int8"}`)
	if raw, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), "encoding_format") {
		t.Errorf("int8: %d %s", resp.StatusCode, raw)
	}
}

func postEmbeddings(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url+"/v1/embeddings", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

var listeningLine = regexp.MustCompile(`listening on (http://\S+/v1)`)

// TestListeningOnceBound: the "listening" line comes once the address is
// bound and served (the URL it names answers at once), and a busy address
// fails without one.
func TestListeningOnceBound(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &logBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--addr", "127.0.0.1:0"}, logs) }()
	var url string
	for deadline := time.Now().Add(10 * time.Second); url == ""; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no listening line:\n%s", logs)
		}
		if m := listeningLine.FindStringSubmatch(logs.String()); m != nil {
			url = m[1]
		}
	}
	resp, err := http.Get(url + "/models") // at once, no retry
	if err != nil {
		t.Fatalf("GET %s/models right after the listening line: %v", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /v1/models = %d", resp.StatusCode)
	}

	busy := &logBuffer{}
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/v1")
	err = run(ctx, []string{"--addr", addr}, busy)
	if err == nil || !strings.Contains(err.Error(), addr) || strings.Contains(busy.String(), "listening") {
		t.Errorf("run on a busy address: %v, log %q; want an error naming it and no listening line", err, busy)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run after cancel: %v", err)
	}
}

// TestFailureOnCommand: the control endpoints make the model endpoints
// fail as commanded (a status with Retry-After, a cut connection, a
// delay; for a count of calls or until cleared), and count the calls.
func TestFailureOnCommand(t *testing.T) {
	srv, _ := start(t)
	command := func(method, body string) int {
		req, _ := http.NewRequest(method, srv.URL+"/fakellm/failure", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	chat := func() (*http.Response, error) {
		return http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	}
	if got := command("POST", `{"status": 503, "retry_after": 7, "count": 2}`); got != 200 {
		t.Fatalf("POST /fakellm/failure: %d", got)
	}
	for i := range 3 {
		resp, err := chat()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want, retry := 503, "7"
		if i == 2 {
			want, retry = 200, "" // the count is spent
		}
		if resp.StatusCode != want || resp.Header.Get("Retry-After") != retry {
			t.Errorf("call %d: %d, Retry-After %q", i, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	command("POST", `{"cut": true}`)
	if resp, err := chat(); err == nil {
		resp.Body.Close()
		t.Errorf("a cut connection answered %d", resp.StatusCode)
	}
	command("POST", `{"delay": "300ms"}`)
	start := time.Now()
	if resp, err := chat(); err != nil || resp.StatusCode != 200 || time.Since(start) < 300*time.Millisecond {
		t.Errorf("a delay: %v after %s", err, time.Since(start))
	}
	if got := command("DELETE", ""); got != 204 {
		t.Errorf("DELETE: %d", got)
	}
	for _, bad := range []string{`{"status": 200}`, `{"delay": "soon"}`, `{"status": 503, "extra": 1}`, `not json`} {
		if got := command("POST", bad); got != 400 {
			t.Errorf("%s: %d, want 400", bad, got)
		}
	}
	resp, err := http.Get(srv.URL + "/fakellm/calls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var calls struct{ Calls int }
	if json.NewDecoder(resp.Body).Decode(&calls); calls.Calls != 5 {
		t.Errorf("calls %d, want 5", calls.Calls)
	}
}
