package standin

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// Gemini is a stand-in for Google's Gemini API
// (https://ai.google.dev/api/generate-content): POST
// /v1beta/models/{model}:generateContent and :streamGenerateContent
// (?alt=sse for server-sent events, else a JSON array), strict as the API
// is:
//   - the key is required, in x-goog-api-key (or the key query parameter):
//     none is 403 PERMISSION_DENIED, one other than Key (when set) 400
//     INVALID_ARGUMENT "API key not valid";
//   - the body is checked field by field, each under its camelCase or
//     snake_case name as the API's parser takes them: an unknown field is
//     "Invalid JSON payload received. Unknown name ...: Cannot find field.",
//     a wrong type "Invalid value at '...' (TYPE_...)", contents are
//     required, a role is user or model, a part holds one kind of data;
//   - errors are {"error": {"code", "message", "status"}}.
//
// It answers "You said: " and the last user text; offered function
// declarations (and not mode NONE), a turn that does not end with a
// function's response is answered with a functionCall of the first
// function (or the one allowedFunctionNames names), its string properties
// set to the user's text, with a thought signature. With a thinking budget
// other than 0 it thinks (thoughtsTokenCount), and with includeThoughts
// says so in a thought part. Tokens are words; maxOutputTokens and
// stopSequences cut the answer. Implicit caching: the part of a prompt
// that an earlier request's prompt began with, turn for turn, is counted
// cached (cachedContentTokenCount). The model "overloaded" answers 503
// UNAVAILABLE, "rate-limited" 429 RESOURCE_EXHAUSTED, and
// "fails-midstream" streams an error after its first chunk.
type Gemini struct {
	Key string
	log
	mu    sync.Mutex
	cache map[[32]byte]bool
}

// camel maps a snake_case field name to camelCase.
func camel(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	var b strings.Builder
	up := false
	for _, r := range s {
		switch {
		case r == '_':
			up = true
		case up:
			b.WriteRune(unicode.ToUpper(r))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func gObject(fields map[string]schema, required ...string) schema {
	return objectAliased(fields, camel, required...)
}

var (
	geminiPart = gObject(map[string]schema{
		"text": str(), "thought": boolean(), "thoughtSignature": str(),
		"inlineData":          gObject(map[string]schema{"mimeType": str(), "data": str()}, "mimeType", "data"),
		"fileData":            gObject(map[string]schema{"mimeType": str(), "fileUri": str()}, "fileUri"),
		"functionCall":        gObject(map[string]schema{"id": str(), "name": str(), "args": anyObject()}, "name"),
		"functionResponse":    gObject(map[string]schema{"id": str(), "name": str(), "response": anyObject(), "willContinue": boolean(), "scheduling": str()}, "name", "response"),
		"executableCode":      anyObject(),
		"codeExecutionResult": anyObject(),
		"videoMetadata":       anyObject(),
	})
	geminiContent = gObject(map[string]schema{"role": str(), "parts": array(geminiPart)}, "parts")
	geminiRequest = gObject(map[string]schema{
		"contents": array(geminiContent),
		"tools": array(gObject(map[string]schema{
			"functionDeclarations": array(gObject(map[string]schema{"name": str(), "description": str(), "parameters": anyObject(),
				"parametersJsonSchema": anyValue(), "response": anyObject(), "responseJsonSchema": anyValue(), "behavior": str()}, "name")),
			"googleSearch": anyObject(), "googleSearchRetrieval": anyObject(), "codeExecution": anyObject(), "urlContext": anyObject(),
		})),
		"toolConfig": gObject(map[string]schema{
			"functionCallingConfig": gObject(map[string]schema{"mode": enum("MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"), "allowedFunctionNames": array(str())}),
			"retrievalConfig":       anyObject(),
		}),
		"safetySettings":    array(gObject(map[string]schema{"category": str(), "threshold": str()}, "category", "threshold")),
		"systemInstruction": geminiContent,
		"cachedContent":     str(),
		"generationConfig": gObject(map[string]schema{
			"stopSequences": array(str()), "responseMimeType": str(), "responseSchema": anyObject(), "responseJsonSchema": anyValue(),
			"responseModalities": array(str()), "candidateCount": integer(1, 8), "maxOutputTokens": integer(1, 1<<31),
			"temperature": number(0, 2), "topP": number(0, 1), "topK": integer(1, 1<<31), "seed": integer(-1<<31, 1<<31),
			"presencePenalty": number(-2, 2), "frequencyPenalty": number(-2, 2), "responseLogprobs": boolean(), "logprobs": integer(0, 20),
			"enableEnhancedCivicAnswers": boolean(), "mediaResolution": str(), "speechConfig": anyObject(),
			"thinkingConfig": gObject(map[string]schema{"includeThoughts": boolean(), "thinkingBudget": integer(-1, 1<<31),
				"thinkingLevel": enum("THINKING_LEVEL_UNSPECIFIED", "LOW", "HIGH")}),
		}),
	}, "contents")
)

// snake maps a camelCase path to the API's snake_case, as its errors
// write it: contents[0].parts[1].function_call.
func snakePath(path []string) string {
	var b strings.Builder
	for _, p := range path {
		if _, err := strconv.Atoi(p); err == nil {
			b.WriteString("[" + p + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		for _, r := range p {
			if unicode.IsUpper(r) {
				b.WriteByte('_')
				r = unicode.ToLower(r)
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

func geminiError(w http.ResponseWriter, code int, status, message string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"code": code, "message": message, "status": status}})
}

// geminiFault words a fault as the API does.
func geminiFault(f *fault) string {
	p := snakePath(f.path)
	switch f.kind {
	case "unknown":
		if p == "" {
			return fmt.Sprintf("Invalid JSON payload received. Unknown name %q: Cannot find field.", f.name)
		}
		return fmt.Sprintf("Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", f.name, p)
	case "missing":
		full := snakePath(at(f.path, f.name))
		return fmt.Sprintf("* GenerateContentRequest.%s: %s is not specified", full, snakePath([]string{f.name}))
	case "type":
		t := map[string]string{"string": "TYPE_STRING", "integer": "TYPE_INT32", "number": "TYPE_FLOAT", "boolean": "TYPE_BOOL",
			"array": "TYPE_MESSAGE", "object": "TYPE_MESSAGE"}[f.want]
		return fmt.Sprintf("Invalid value at '%s' (%s), %s", p, t, strings.TrimSpace(string(f.raw)))
	}
	return fmt.Sprintf("* GenerateContentRequest.%s: %s", p, f.want)
}

type gPart struct {
	Text             string          `json:"text"`
	Thought          bool            `json:"thought"`
	InlineData       json.RawMessage `json:"inlineData"`
	FunctionCall     json.RawMessage `json:"functionCall"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

type gContent struct {
	Role  string  `json:"role"`
	Parts []gPart `json:"parts"`
}

type geminiReq struct {
	Contents          []gContent `json:"contents"`
	SystemInstruction *gContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	ToolConfig *struct {
		FunctionCallingConfig struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig"`
	GenerationConfig struct {
		MaxOutputTokens *int64   `json:"maxOutputTokens"`
		StopSequences   []string `json:"stopSequences"`
		ThinkingConfig  *struct {
			IncludeThoughts bool   `json:"includeThoughts"`
			ThinkingBudget  *int64 `json:"thinkingBudget"`
		} `json:"thinkingConfig"`
	} `json:"generationConfig"`
}

// camelJSON rewrites an object's snake_case keys, at every depth, to
// camelCase, so that the request reads the same under either spelling.
func camelJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[camel(k)] = camelJSON(e)
		}
		return out
	case []any:
		for i := range x {
			x[i] = camelJSON(x[i])
		}
	}
	return v
}

func (g *Gemini) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, action, ok := strings.Cut(r.URL.Path, "/v1beta/models/")
	model, method, _ := strings.Cut(action, ":")
	if !ok || r.Method != http.MethodPost || model == "" || method != "generateContent" && method != "streamGenerateContent" {
		geminiError(w, http.StatusNotFound, "NOT_FOUND", "Requested entity was not found.")
		return
	}
	key := r.Header.Get("x-goog-api-key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	switch {
	case key == "":
		geminiError(w, http.StatusForbidden, "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
		return
	case g.Key != "" && key != g.Key:
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.")
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil || !json.Valid(raw) {
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received. Unexpected token.")
		return
	}
	if f := geminiRequest(nil, raw); f != nil {
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", geminiFault(f))
		return
	}
	var generic any
	_ = json.Unmarshal(raw, &generic)
	canon, _ := json.Marshal(camelJSON(generic))
	var req geminiReq
	_ = json.Unmarshal(canon, &req)
	if msg := g.check(&req); msg != "" {
		geminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", msg)
		return
	}
	switch model {
	case "overloaded":
		geminiError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "The model is overloaded. Please try again later.")
		return
	case "rate-limited":
		geminiError(w, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details.")
		return
	}
	ans := g.answer(model, &req)
	u := Usage{"promptTokenCount": ans.prompt, "candidatesTokenCount": ans.candidates}
	if ans.thoughts > 0 {
		u["thoughtsTokenCount"] = ans.thoughts
	}
	if ans.cached > 0 {
		u["cachedContentTokenCount"] = ans.cached
	}
	g.add(u)
	if method == "streamGenerateContent" {
		g.stream(w, r.URL.Query().Get("alt") == "sse", model, ans)
		return
	}
	writeJSON(w, http.StatusOK, ans.response(ans.parts, ans.finish, ans.candidates))
}

// check applies the API's rules beyond the request's shape.
func (g *Gemini) check(req *geminiReq) string {
	if len(req.Contents) == 0 {
		return "* GenerateContentRequest.contents: contents is not specified"
	}
	for i, c := range req.Contents {
		if c.Role != "" && c.Role != "user" && c.Role != "model" {
			return "Please use a valid role: user, model."
		}
		if len(c.Parts) == 0 {
			return fmt.Sprintf("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.", i)
		}
		for j, p := range c.Parts {
			kinds := 0
			for _, set := range []bool{p.Text != "", len(p.InlineData) > 0, len(p.FunctionCall) > 0, p.FunctionResponse != nil} {
				if set {
					kinds++
				}
			}
			if kinds != 1 {
				return fmt.Sprintf("* GenerateContentRequest.contents[%d].parts[%d].data: required oneof field 'data' must have one initialized field", i, j)
			}
		}
	}
	if t := req.GenerationConfig.ThinkingConfig; t != nil && t.ThinkingBudget != nil && *t.ThinkingBudget > 32768 {
		return "The thinking budget is invalid. Please set it to a value between 0 and 32768, or to -1 for dynamic thinking."
	}
	return ""
}

type geminiAnswer struct {
	id                                   string
	parts                                []map[string]any
	finish                               string
	prompt, candidates, thoughts, cached int64
}

func (a *geminiAnswer) response(parts []map[string]any, finish string, candidates int64) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish != "" {
		cand["finishReason"] = finish
	}
	usage := map[string]any{"promptTokenCount": a.prompt, "candidatesTokenCount": candidates,
		"totalTokenCount":     a.prompt + candidates + a.thoughts,
		"promptTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": a.prompt}}}
	if a.thoughts > 0 {
		usage["thoughtsTokenCount"] = a.thoughts
	}
	if a.cached > 0 {
		usage["cachedContentTokenCount"] = a.cached
	}
	return map[string]any{"candidates": []any{cand}, "usageMetadata": usage, "modelVersion": "stand-in-001", "responseId": a.id}
}

func (p gPart) text() string {
	switch {
	case p.FunctionResponse != nil:
		return p.FunctionResponse.Name + " " + string(p.FunctionResponse.Response)
	case len(p.FunctionCall) > 0:
		return string(p.FunctionCall)
	}
	return p.Text
}

func (g *Gemini) answer(model string, req *geminiReq) *geminiAnswer {
	ans := &geminiAnswer{id: randomHex(10), finish: "STOP"}
	// The prompt, turn by turn: the longest run of turns an earlier
	// prompt began with is cached.
	turns := req.Contents
	if req.SystemInstruction != nil {
		turns = append([]gContent{*req.SystemInstruction}, turns...)
	}
	h := sha256.New()
	var sums [][32]byte
	var counts []int64
	for _, c := range turns {
		for _, p := range c.Parts {
			ans.prompt += words(p.text())
			h.Write([]byte(p.text() + "\x00"))
		}
		h.Write([]byte(c.Role + "\x01"))
		var sum [32]byte
		copy(sum[:], h.Sum(nil))
		sums, counts = append(sums, sum), append(counts, ans.prompt)
	}
	g.mu.Lock()
	if g.cache == nil {
		g.cache = map[[32]byte]bool{}
	}
	for i, s := range sums {
		if g.cache[s] {
			ans.cached = counts[i]
		}
		g.cache[s] = true
	}
	g.mu.Unlock()

	last := req.Contents[len(req.Contents)-1]
	var userText, said string
	for _, p := range last.Parts {
		if p.FunctionResponse != nil {
			said = "The tool said: " + string(p.FunctionResponse.Response)
		}
		if !p.Thought {
			userText += p.Text
		}
	}
	if said == "" {
		said = "You said: " + userText
	}
	budget := int64(8192)
	if m := req.GenerationConfig.MaxOutputTokens; m != nil {
		budget = *m
	}
	sig := ""
	if t := req.GenerationConfig.ThinkingConfig; t != nil && (t.ThinkingBudget == nil || *t.ThinkingBudget != 0) {
		thought := strings.Fields("Let me think about: " + userText)
		thought = thought[:min(int64(len(thought)), budget)]
		budget -= int64(len(thought))
		ans.thoughts = int64(len(thought))
		sig = "c2lnLQ" + randomHex(12)
		if t.IncludeThoughts {
			ans.parts = append(ans.parts, map[string]any{"text": strings.Join(thought, " "), "thought": true})
		}
	}
	if name, schema := g.chooseTool(req); name != "" && !strings.HasPrefix(said, "The tool said") && budget > 0 {
		args := map[string]any{}
		var s struct {
			Properties map[string]struct {
				Type string `json:"type"`
			} `json:"properties"`
		}
		_ = json.Unmarshal(schema, &s)
		for k, p := range s.Properties {
			if strings.EqualFold(p.Type, "string") {
				args[k] = userText
			}
		}
		b, _ := json.Marshal(args)
		ans.candidates = words(name + " " + string(b))
		part := map[string]any{"functionCall": map[string]any{"name": name, "args": args}}
		if sig != "" {
			part["thoughtSignature"] = sig
		}
		ans.parts = append(ans.parts, part)
		return ans
	}
	text := said
	for _, s := range req.GenerationConfig.StopSequences {
		if i := strings.Index(text, s); i >= 0 {
			text = text[:i]
		}
	}
	ws := strings.Fields(text)
	if int64(len(ws)) > budget {
		ws, ans.finish = ws[:budget], "MAX_TOKENS"
	}
	ans.candidates = int64(len(ws))
	part := map[string]any{"text": strings.Join(ws, " ")}
	if sig != "" {
		part["thoughtSignature"] = sig
	}
	ans.parts = append(ans.parts, part)
	return ans
}

// chooseTool is the function the answer calls, and its parameters: none
// without declarations or with mode NONE.
func (g *Gemini) chooseTool(req *geminiReq) (string, json.RawMessage) {
	var allowed []string
	if c := req.ToolConfig; c != nil {
		if c.FunctionCallingConfig.Mode == "NONE" {
			return "", nil
		}
		allowed = c.FunctionCallingConfig.AllowedFunctionNames
	}
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			if len(allowed) == 0 || allowed[0] == f.Name {
				if len(f.ParametersJSONSchema) > 0 {
					return f.Name, f.ParametersJSONSchema
				}
				return f.Name, f.Parameters
			}
		}
	}
	return "", nil
}

// stream sends the answer in chunks: server-sent events (alt=sse), or a
// JSON array written as it goes. Each chunk carries the usage so far.
func (g *Gemini) stream(w http.ResponseWriter, sse bool, model string, ans *geminiAnswer) {
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	n := 0
	send := func(v any) {
		b, _ := json.Marshal(v)
		switch {
		case sse:
			fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		case n == 0:
			fmt.Fprintf(w, "[%s", b)
		default:
			fmt.Fprintf(w, ",\r\n%s", b)
		}
		n++
		_ = rc.Flush()
	}
	var sent int64
	for i, p := range ans.parts {
		final := i == len(ans.parts)-1
		text, isText := p["text"].(string)
		if !isText || p["thought"] == true {
			finish := ""
			if final {
				finish = ans.finish
				sent = ans.candidates
			}
			send(ans.response([]map[string]any{p}, finish, sent))
			continue
		}
		ws := strings.Fields(text)
		for j, word := range ws {
			if j > 0 {
				word = " " + word
			}
			chunk := map[string]any{"text": word}
			if j == 0 && p["thoughtSignature"] != nil {
				chunk["thoughtSignature"] = p["thoughtSignature"]
			}
			sent++
			finish := ""
			if final && j == len(ws)-1 {
				finish = ans.finish
			}
			send(ans.response([]map[string]any{chunk}, finish, sent))
			if model == "fails-midstream" {
				send(map[string]any{"error": map[string]any{"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}})
				return
			}
		}
		if len(ws) == 0 && final {
			send(ans.response([]map[string]any{{"text": ""}}, ans.finish, sent))
		}
	}
	if !sse {
		fmt.Fprint(w, "]")
	}
}
