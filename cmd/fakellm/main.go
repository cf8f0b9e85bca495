// Command fakellm is a tiny stand-in for an OpenAI-compatible model server,
// for trying Gatehouse without one and for its compatibility suite:
//
//	go run ./cmd/fakellm --addr 127.0.0.1:8090
//
// It is not a model. It answers every chat completion with "You said: "
// followed by the last user message, deterministically, whole or streamed
// as server-sent events. Its token counts are whitespace-separated words:
// prompt_tokens counts the words of every message's content, and
// completion_tokens the words of the answer. max_tokens (or
// max_completion_tokens) cuts the answer to that many words, with
// finish_reason "length". Any model name is accepted and echoed back; any
// API key is accepted. Offered function tools, it calls one (see tools.go).
// It serves POST /v1/chat/completions,
// POST /v1/responses (the same answer in OpenAI's Responses API, whole or
// as its event stream, input_tokens the words of the instructions and the
// input messages, max_output_tokens cutting the answer with status
// incomplete), POST /v1/embeddings (one small vector per input, as JSON
// numbers or, with encoding_format base64, as OpenAI's base64 of
// little-endian float32s; prompt_tokens the words of the texts, or the
// number of token ids) and
// GET /v1/models, and logs one line per request. It speaks two native
// APIs too, strictly, as internal/standin describes: Anthropic's Messages
// API (POST /v1/messages, any x-api-key) and the Gemini API (POST
// /v1beta/models/{model}:generateContent and :streamGenerateContent, any
// x-goog-api-key), for providers of type anthropic and gemini whose
// base_url is fakellm's address without /v1. Its first log line names
// the address it listens on, so that --addr 127.0.0.1:0 takes any free port.
// For the tests of routing, it fails on command (see failure.go).
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"gatehouse/internal/standin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "fakellm:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends. The "listening" line is logged once the
// address is bound and served, so that a script waiting for it (or for an
// answer) can connect at once; a busy address fails without it.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("fakellm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8090", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := log.New(stderr, "fakellm ", log.LstdFlags)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (give --addr a free address)", *addr, err)
	}
	srv := &http.Server{Handler: newHandler(logger), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	// The address listened on, so that port 0 tells which port it got.
	logger.Printf("listening on http://%s/v1", ln.Addr())
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

// newHandler serves the API, logging one line per request.
func newHandler(logger *log.Logger) http.Handler {
	mux := http.NewServeMux()
	c := &control{}
	c.serve(mux)
	mux.HandleFunc("POST /v1/chat/completions", c.wrap(chatCompletions))
	mux.HandleFunc("POST /v1/embeddings", c.wrap(embeddings))
	mux.HandleFunc("POST /v1/responses", c.wrap(responses))
	mux.Handle("POST /v1/messages", &standin.Anthropic{})
	mux.Handle("POST /v1beta/models/", &standin.Gemini{})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "echo", "object": "model", "created": 0, "owned_by": "fakellm"}}})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start, rec := time.Now(), &recorder{ResponseWriter: w, status: http.StatusOK}
		mux.ServeHTTP(rec, r)
		logger.Printf("%s %s %d %s%s", r.Method, r.URL.Path, rec.status, time.Since(start).Round(time.Microsecond), rec.note)
	})
}

// recorder remembers the status, and what the handler notes, for the log line.
type recorder struct {
	http.ResponseWriter
	status int
	note   string
}

func (r *recorder) WriteHeader(status int)      { r.status = status; r.ResponseWriter.WriteHeader(status) }
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string, or a list of parts
}

type request struct {
	Model               string    `json:"model"`
	Messages            []message `json:"messages"`
	Stream              bool      `json:"stream"`
	MaxTokens           int       `json:"max_tokens"`
	MaxCompletionTokens int       `json:"max_completion_tokens"`
	StreamOptions       struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools      json.RawMessage `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

// text returns a message's text: its content string, or its text parts.
func (m message) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct{ Text string }
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text + " ")
	}
	return b.String()
}

func chatCompletions(w http.ResponseWriter, r *http.Request) {
	var req request
	if err := json.NewDecoder(io.LimitReader(r.Body, 10<<20)).Decode(&req); err != nil || req.Model == "" || len(req.Messages) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"message": "want a JSON body with model and a non-empty messages list", "type": "invalid_request_error"}})
		return
	}
	prompt, last := 0, ""
	for _, m := range req.Messages {
		prompt += len(strings.Fields(m.text()))
		if m.Role == "user" {
			last = m.text()
		}
	}
	said := "You said: " + last
	if end := req.Messages[len(req.Messages)-1]; end.Role == "tool" {
		said = "The tool said: " + end.text()
	} else if t := chooseTool(chatTools(req.Tools), req.ToolChoice); t != nil {
		answerChatToolCall(w, req, toolCall{id: "call_" + randomHex(12), name: t.Name, arguments: arguments(t.Parameters, last)}, prompt)
		return
	}
	words, finish := strings.Fields(said), "stop"
	if limit := max(req.MaxCompletionTokens, req.MaxTokens); limit > 0 && len(words) > limit {
		words, finish = words[:limit], "length"
	}
	id, created := "chatcmpl-"+randomHex(12), time.Now().Unix()
	usage := map[string]int{"prompt_tokens": prompt, "completion_tokens": len(words), "total_tokens": prompt + len(words)}
	if rec, ok := w.(*recorder); ok {
		rec.note = fmt.Sprintf(" model=%s stream=%t prompt_tokens=%d completion_tokens=%d finish_reason=%s", req.Model, req.Stream, prompt, len(words), finish)
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": finish,
				"message": map[string]any{"role": "assistant", "content": strings.Join(words, " ")}}},
			"usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	send := func(choices []any, usage any) {
		chunk := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model, "choices": choices}
		if req.StreamOptions.IncludeUsage {
			chunk["usage"] = usage // null on every chunk but the last
		}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		_ = rc.Flush()
	}
	delta := func(d map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}
	}
	send(delta(map[string]any{"role": "assistant", "content": ""}, nil), nil)
	for i, word := range words {
		if i > 0 {
			word = " " + word
		}
		send(delta(map[string]any{"content": word}, nil), nil)
	}
	send(delta(map[string]any{}, finish), nil)
	if req.StreamOptions.IncludeUsage {
		send([]any{}, usage)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

// embeddings answers an embeddings request: for each input (a string, a
// token id array, or the items of an array of either) a vector of its
// word (or token) count, its length in bytes and 1.
func embeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model          string          `json:"model"`
		Input          json.RawMessage `json:"input"`
		EncodingFormat *string         `json:"encoding_format"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 10<<20)).Decode(&req); err != nil || req.Model == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"message": "want a JSON body with model and input", "type": "invalid_request_error"}})
		return
	}
	format := "float"
	if req.EncodingFormat != nil {
		format = *req.EncodingFormat
	}
	if format != "float" && format != "base64" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"message": fmt.Sprintf("%q is not one of ['float', 'base64'] - 'encoding_format'", format),
			"type":    "invalid_request_error", "param": "encoding_format", "code": nil}})
		return
	}
	var inputs []json.RawMessage
	if json.Unmarshal(req.Input, &inputs) != nil {
		inputs = []json.RawMessage{req.Input}
	} else if len(inputs) > 0 && !strings.HasPrefix(string(inputs[0]), "\"") && !strings.HasPrefix(string(inputs[0]), "[") {
		inputs = []json.RawMessage{req.Input} // one array of token ids
	}
	prompt, data := 0, make([]any, 0, len(inputs))
	for i, in := range inputs {
		var s string
		var tokens []int
		n := 0
		if json.Unmarshal(in, &s) == nil {
			n = len(strings.Fields(s))
		} else if json.Unmarshal(in, &tokens) == nil {
			n = len(tokens)
		}
		prompt += n
		data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": vector(format, float32(n), float32(len(in)), 1)})
	}
	if rec, ok := w.(*recorder); ok {
		rec.note = fmt.Sprintf(" model=%s inputs=%d prompt_tokens=%d", req.Model, len(inputs), prompt)
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "model": req.Model, "data": data,
		"usage": map[string]int{"prompt_tokens": prompt, "total_tokens": prompt}})
}

// vector is an embedding as an encoding_format asks: float, a JSON array
// of numbers; base64, the little-endian float32 values in base64, as
// OpenAI sends them (and its clients decode them by default).
func vector(format string, v ...float32) any {
	if format == "float" {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
