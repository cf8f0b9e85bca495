package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"gatehouse"
	"gatehouse/internal/jsonobj"
)

// What the dialects other than openai share: reading the OpenAI chat
// request they translate, and writing the OpenAI answers, chunks and
// errors they translate into.

// chatRequest is an OpenAI chat request as the dialects read it: decoded
// once, its keys listed apart so that a dialect refuses those it does not
// know. The body is Gatehouse's own encoding of the request it checked
// (exact names, each once), so encoding/json's folding of names finds
// nothing to fold.
type chatRequest struct {
	Messages          []chatMessage   `json:"messages"`
	MaxTokens         int64           `json:"max_tokens"`
	Stream            bool            `json:"stream"`
	Temperature       json.RawMessage `json:"temperature"`
	TopP              json.RawMessage `json:"top_p"`
	TopK              json.RawMessage `json:"top_k"`
	Seed              json.RawMessage `json:"seed"`
	PresencePenalty   json.RawMessage `json:"presence_penalty"`
	FrequencyPenalty  json.RawMessage `json:"frequency_penalty"`
	Stop              json.RawMessage `json:"stop"`
	Tools             []chatTool      `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	User              *string         `json:"user"`
	N                 json.RawMessage `json:"n"`
	ResponseFormat    json.RawMessage `json:"response_format"`
	Logprobs          json.RawMessage `json:"logprobs"`
	TopLogprobs       json.RawMessage `json:"top_logprobs"`
	Reasoning         json.RawMessage `json:"reasoning"`
	ReasoningEffort   json.RawMessage `json:"reasoning_effort"`
	// keys are the request's keys, in order.
	keys []string
}

// readChat reads a chat request: a JSON object whose values have the
// types of chatRequest's fields (a value of another type is a 400 naming
// it).
func readChat(body []byte) (*chatRequest, error) {
	var r chatRequest
	if err := json.Unmarshal(body, &r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, gatehouse.FieldError(te.Field, "has the wrong type: a %s is not accepted here", te.Value)
		}
		return nil, gatehouse.Errorf(gatehouse.EINVALID, "the request is not a JSON object")
	}
	ms, _ := jsonobj.Members(body) // valid JSON, as Unmarshal found
	r.keys = make([]string, len(ms))
	for i, m := range ms {
		r.keys[i] = m.Key
	}
	for i, t := range r.Tools {
		if t.Type != "function" || t.Function.Name == "" {
			return nil, gatehouse.FieldError(fmt.Sprintf("tools[%d]", i), `must be {"type": "function", "function": {"name": ..., "parameters": ...}}`)
		}
	}
	return &r, nil
}

// given returns a parameter's value, nil when it is absent or null.
func given(v json.RawMessage) json.RawMessage {
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}

// numbers checks that the parameters named are numbers (or absent).
func numbers(params map[string]json.RawMessage) error {
	for name, v := range params {
		if given(v) != nil {
			if _, err := number(v, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// chatMessage is a message of an OpenAI chat request, as Gatehouse checked
// it (httpapi's chatbody: known fields only, each spelt once).
type chatMessage struct {
	Role             string            `json:"role"`
	Content          json.RawMessage   `json:"content"`
	Name             string            `json:"name"`
	ToolCalls        []chatToolCall    `json:"tool_calls"`
	ToolCallID       string            `json:"tool_call_id"`
	ReasoningDetails []reasoningDetail `json:"reasoning_details"`
	FunctionCall     json.RawMessage   `json:"function_call"`
}

// chatToolCall is a tool call of an assistant message, or of an answer.
// CacheControl, a request's only, is a Gatehouse and OpenRouter member of
// the chat form (Anthropic's cache_control on a tool_use block), checked
// as a part's is (httpapi's chatbody).
type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// reasoningDetail is a part of an answer's reasoning as OpenRouter gives
// it (reasoning_details), which a client sends back with the assistant's
// message: reasoning.text (with its signature) or reasoning.encrypted.
type reasoningDetail struct {
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
	Format    string `json:"format,omitempty"`
	Index     int    `json:"index"`
}

// chatPart is a content part of a chat message.
type chatPart struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	CacheControl json.RawMessage `json:"cache_control"`
	ImageURL     *struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

// parts reads a message's content: a string (one text part), an array of
// parts, or nothing (null, absent).
func parts(content json.RawMessage, where string) ([]chatPart, error) {
	c := bytes.TrimSpace(content)
	if len(c) == 0 || string(c) == "null" {
		return nil, nil
	}
	if c[0] == '"' {
		var s string
		if err := json.Unmarshal(c, &s); err != nil {
			return nil, gatehouse.FieldError(where, "must be a string or an array of content parts")
		}
		return []chatPart{{Type: "text", Text: s}}, nil
	}
	var ps []chatPart
	if err := json.Unmarshal(c, &ps); err != nil {
		return nil, gatehouse.FieldError(where, "must be a string or an array of content parts")
	}
	for i, p := range ps {
		switch {
		case p.Type == "image_url" && (p.ImageURL == nil || p.ImageURL.URL == ""):
			return nil, gatehouse.FieldError(fmt.Sprintf("%s[%d].image_url.url", where, i), "is required")
		case p.Type != "text" && p.Type != "image_url":
			return nil, gatehouse.FieldError(fmt.Sprintf("%s[%d].type", where, i), "%q is not a content part this provider takes (text, image_url)", p.Type)
		}
	}
	return ps, nil
}

// dataURL splits a data: URL of base64 data into its media type and data.
func dataURL(u string) (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", false
	}
	meta, data, ok := strings.Cut(rest, ",")
	mediaType, base64, _ := strings.Cut(meta, ";")
	if !ok || base64 != "base64" || mediaType == "" {
		return "", "", false
	}
	return mediaType, data, true
}

// stopSequences reads OpenAI's stop: a string or an array of strings.
func stopSequences(raw json.RawMessage) ([]string, error) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, gatehouse.FieldError("stop", "must be a string or an array of strings")
	}
	return many, nil
}

// number checks that a parameter is a JSON number, and returns it as it is.
func number(raw json.RawMessage, name string) (json.RawMessage, error) {
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return nil, gatehouse.FieldError(name, "must be a number")
	}
	return raw, nil
}

// chatTool is a tool of a chat request: a function.
type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// toolChoice reads OpenAI's tool_choice: its mode (auto, none, required),
// or the function it names (mode "function").
func toolChoice(raw json.RawMessage) (mode, name string, err error) {
	if json.Unmarshal(raw, &mode) == nil {
		if mode != "auto" && mode != "none" && mode != "required" {
			return "", "", gatehouse.FieldError("tool_choice", "must be auto, none, required or a function")
		}
		return mode, "", nil
	}
	var f struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &f) != nil || f.Type != "function" || f.Function.Name == "" {
		return "", "", gatehouse.FieldError("tool_choice", `must be auto, none, required or {"type": "function", "function": {"name": ...}}`)
	}
	return "function", f.Function.Name, nil
}

// reasoningConfig is OpenRouter's reasoning parameter (and OpenAI's
// reasoning_effort): how much the model may think.
type reasoningConfig struct {
	Effort    string `json:"effort"`
	MaxTokens *int64 `json:"max_tokens"`
	Exclude   bool   `json:"exclude"`
	Enabled   *bool  `json:"enabled"`
	// off says the request turns reasoning off (effort none, enabled
	// false).
	off bool
}

// readReasoning reads reasoning and reasoning_effort; nil when neither is
// given.
func readReasoning(reasoning, effort json.RawMessage) (*reasoningConfig, error) {
	var r reasoningConfig
	if raw := given(reasoning); raw != nil {
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, gatehouse.FieldError("reasoning", "must be an object: {\"effort\": \"high\"} or {\"max_tokens\": 2048}")
		}
	}
	if raw := given(effort); raw != nil {
		if err := json.Unmarshal(raw, &r.Effort); err != nil {
			return nil, gatehouse.FieldError("reasoning_effort", "must be a string")
		}
	}
	if given(reasoning) == nil && given(effort) == nil {
		return nil, nil
	}
	r.off = r.Enabled != nil && !*r.Enabled || r.Effort == "none"
	if r.MaxTokens != nil && *r.MaxTokens < 0 {
		return nil, gatehouse.FieldError("reasoning.max_tokens", "must be a whole number of tokens")
	}
	return &r, nil
}

// budget is the thinking budget of a reasoning setting under a completion
// cap: its max_tokens, or its effort's share of the cap (OpenRouter's
// shares: xhigh 0.95, high 0.8, medium 0.5, low 0.2, minimal 0.1), at most
// 32,000 tokens; medium when it only says enabled.
func (r *reasoningConfig) budget(capTokens int64) (int64, error) {
	if r.MaxTokens != nil {
		return *r.MaxTokens, nil
	}
	shares := map[string]float64{"xhigh": 0.95, "high": 0.8, "medium": 0.5, "low": 0.2, "minimal": 0.1, "": 0.5}
	share, ok := shares[r.Effort]
	if !ok {
		return 0, gatehouse.FieldError("reasoning.effort", "%q is not one of xhigh, high, medium, low, minimal, none", r.Effort)
	}
	return min(int64(float64(capTokens)*share), 32000), nil
}

// The OpenAI answers a dialect writes.

type oaUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details,omitempty"`
}

type oaMessage struct {
	Role             string            `json:"role"`
	Content          *string           `json:"content"`
	Reasoning        *string           `json:"reasoning,omitempty"`
	ReasoningDetails []reasoningDetail `json:"reasoning_details,omitempty"`
	ToolCalls        []chatToolCall    `json:"tool_calls,omitempty"`
}

type oaCompletion struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index        int       `json:"index"`
		Message      oaMessage `json:"message"`
		FinishReason string    `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaUsage `json:"usage,omitempty"`
}

// completion returns a whole chat completion of one choice.
func completion(id, model string, msg oaMessage, finish string, usage *oaUsage) []byte {
	c := oaCompletion{ID: id, Object: "chat.completion", Created: time.Now().Unix(), Model: model, Usage: usage}
	c.Choices = make([]struct {
		Index        int       `json:"index"`
		Message      oaMessage `json:"message"`
		FinishReason string    `json:"finish_reason"`
	}, 1)
	c.Choices[0].Message, c.Choices[0].FinishReason = msg, finish
	b, _ := json.Marshal(c)
	return b
}

type oaToolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaDelta struct {
	Role             string            `json:"role,omitempty"`
	Content          *string           `json:"content,omitempty"`
	Reasoning        string            `json:"reasoning,omitempty"`
	ReasoningDetails []reasoningDetail `json:"reasoning_details,omitempty"`
	ToolCalls        []oaToolCallDelta `json:"tool_calls,omitempty"`
}

type oaChunkChoice struct {
	Index        int     `json:"index"`
	Delta        oaDelta `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type oaChunk struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices []oaChunkChoice `json:"choices"`
	Usage   *oaUsage        `json:"usage,omitempty"`
}

// chunks writes the chunks of a translated stream.
type chunks struct {
	id, model string
	created   int64
}

// text writes a chunk of a text delta, content or reasoning: the most of
// a stream's chunks, written without reflection (as delta writes them).
func (c *chunks) text(out *bytes.Buffer, name, text string) {
	b := out.AvailableBuffer()
	b = append(b, `data: {"id":`...)
	b = jsonobj.AppendString(b, c.id)
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, c.created, 10)
	b = append(b, `,"model":`...)
	b = jsonobj.AppendString(b, c.model)
	b = append(b, `,"choices":[{"index":0,"delta":{"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	b = jsonobj.AppendString(b, text)
	b = append(b, "},\"finish_reason\":null}]}\n\n"...)
	out.Write(b)
}

// delta writes a chunk of one choice's delta, with its finish reason when
// not empty.
func (c *chunks) delta(out *bytes.Buffer, d oaDelta, finish string) {
	ch := oaChunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model, Choices: []oaChunkChoice{{Delta: d}}}
	if finish != "" {
		ch.Choices[0].FinishReason = &finish
	}
	writeData(out, ch)
}

// usage writes the stream's usage chunk, of no choices.
func (c *chunks) usage(out *bytes.Buffer, u *oaUsage) {
	writeData(out, oaChunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model, Choices: []oaChunkChoice{}, Usage: u})
}

// failure writes an error event, as OpenRouter sends one midway.
func (c *chunks) failure(out *bytes.Buffer, message, typ string) {
	writeData(out, map[string]any{"error": map[string]any{"message": message, "type": typ, "code": typ}})
}

func writeData(out *bytes.Buffer, v any) {
	b, _ := json.Marshal(v)
	out.WriteString("data: ")
	out.Write(b)
	out.WriteString("\n\n")
}

func stringPtr(s string) *string { return &s }

// openAIError is an error answer in OpenAI's shape.
func openAIError(message, typ string, code any) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "code": code}})
	return b
}

// count reads an optional token count of a usage object by its exact
// name: absent or null is 0; anything but a whole, non-negative number is
// not ok.
func count(ms []jsonobj.Member, name string) (int64, bool) {
	var n int64
	seen := false
	for _, m := range ms {
		if m.Key != name {
			continue
		}
		if seen {
			return 0, false
		}
		seen = true
		if string(m.Value) == "null" {
			continue
		}
		v, err := strconv.ParseInt(string(m.Value), 10, 64)
		if err != nil || v < 0 {
			return 0, false
		}
		n = v
	}
	return n, true
}

// has reports whether a member is there, not null.
func has(ms []jsonobj.Member, name string) bool {
	for _, m := range ms {
		if m.Key == name && string(m.Value) != "null" {
			return true
		}
	}
	return false
}

// sseReader translates a stream of server-sent events as it is read:
// each event (its event: name and its data: lines) goes to onEvent, which
// writes what it becomes; at the stream's clean end, onEnd writes the
// last of it. A failure to read (a cut, a timeout) is returned once what
// was translated before it is read.
type sseReader struct {
	sc      *bufio.Scanner
	out     bytes.Buffer
	err     error
	event   string
	data    []byte
	onEvent func(event string, data []byte, out *bytes.Buffer)
	onEnd   func(out *bytes.Buffer)
}

func newSSEReader(body io.Reader, onEvent func(string, []byte, *bytes.Buffer), onEnd func(*bytes.Buffer)) *sseReader {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 4<<10), 4<<20)
	return &sseReader{sc: sc, onEvent: onEvent, onEnd: onEnd}
}

func (r *sseReader) Read(p []byte) (int, error) {
	for r.out.Len() == 0 && r.err == nil {
		r.step()
	}
	if r.out.Len() > 0 {
		return r.out.Read(p)
	}
	return 0, r.err
}

// step reads one line.
func (r *sseReader) step() {
	if !r.sc.Scan() {
		if r.err = r.sc.Err(); r.err != nil {
			return
		}
		r.dispatch()
		r.onEnd(&r.out)
		r.err = io.EOF
		return
	}
	line := r.sc.Bytes()
	switch {
	case len(line) == 0:
		r.dispatch()
	case bytes.HasPrefix(line, []byte("event:")):
		r.event = string(bytes.TrimSpace(line[len("event:"):]))
	case bytes.HasPrefix(line, []byte("data:")):
		d := line[len("data:"):]
		if len(d) > 0 && d[0] == ' ' {
			d = d[1:]
		}
		if r.data != nil {
			r.data = append(r.data, '\n')
		} else {
			r.data = []byte{}
		}
		r.data = append(r.data, d...)
	}
	// Comments (": ping"), id: and retry: lines say nothing to translate.
}

// dispatch hands the event read so far to onEvent.
func (r *sseReader) dispatch() {
	if r.data == nil && r.event == "" {
		return
	}
	r.onEvent(r.event, r.data, &r.out)
	r.event, r.data = "", nil
}

// isObject decodes a provider's answer into v, field by field (a field
// of another type than v's is left as it is); it reports whether the
// answer is a JSON object.
func isObject(raw []byte, v any) bool {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	var se *json.SyntaxError
	return !errors.As(json.Unmarshal(b, v), &se)
}

// errTooLarge is a whole answer larger than Gatehouse delivers, as a
// dialect read it: usage is its usage translated (nil when it had none
// readable). readWhole charges it as it does an untranslated one.
type errTooLarge struct{ usage []byte }

func (*errTooLarge) Error() string { return "the answer is too large" }

// wholeAnswer returns a reader of a translated whole answer: translate is
// given the provider's answer, read to its end, and returns OpenAI's. An
// answer larger than MaxResponseBytes is not translated: its usage alone
// is (usage translates the provider's usage into OpenAI's), and the read
// fails with an *errTooLarge. member names the provider's usage.
func wholeAnswer(body io.Reader, translate func([]byte) []byte, member string, usage func(json.RawMessage) []byte) io.Reader {
	return &lazyReader{make: func() ([]byte, error) {
		raw, err := io.ReadAll(io.LimitReader(body, MaxResponseBytes+1))
		if err != nil {
			return nil, err
		}
		if len(raw) <= MaxResponseBytes {
			return translate(raw), nil
		}
		u, err := topLevelMember(io.MultiReader(bytes.NewReader(raw), body), member)
		if err != nil && !errors.Is(err, errNotJSON) {
			return nil, err
		}
		tl := &errTooLarge{}
		if err == nil {
			tl.usage = usage(u)
		}
		return nil, tl
	}}
}

// lazyReader reads what make returns, made on the first read.
type lazyReader struct {
	make func() ([]byte, error)
	r    *bytes.Reader
	err  error
}

func (l *lazyReader) Read(p []byte) (int, error) {
	if l.r == nil && l.err == nil {
		var b []byte
		b, l.err = l.make()
		l.r = bytes.NewReader(b)
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.r.Read(p)
}
