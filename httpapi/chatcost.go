package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"gatehouse"
	"gatehouse/internal/jsonobj"
	"gatehouse/provider"
)

// What the answers of the gateway add to the provider's, as OpenRouter's
// do: the cost of the call as metered, in the whole answer's usage and in
// the last chunk of a stream, and a system_fingerprint on every chunk.

// chatAttribution reads who made a model request: the application from
// HTTP-Referer and X-OpenRouter-Title (else X-Title), the client software
// from User-Agent, and the end user from the body's user.
func chatAttribution(r *http.Request, user *string) (gatehouse.Attribution, error) {
	title := r.Header.Get("X-OpenRouter-Title")
	if title == "" {
		title = r.Header.Get("X-Title")
	}
	a := gatehouse.Attribution{
		HTTPReferer: gatehouse.AttributionHeader(r.Header.Get("HTTP-Referer"), gatehouse.MaxRefererLength),
		AppTitle:    gatehouse.AttributionHeader(title, gatehouse.MaxAppTitleLength),
		UserAgent:   gatehouse.AttributionHeader(r.Header.Get("User-Agent"), gatehouse.MaxUserAgentLength),
	}
	if user != nil && *user != "" {
		if err := gatehouse.CheckExternalUser(*user); err != nil {
			return a, err
		}
		a.ExternalUser = user
	}
	return a, nil
}

// fingerprint names the backend configuration that serves a model, for the
// answers whose provider sends no system_fingerprint: it changes when the
// provider, its URL or the model's upstream name does.
func fingerprint(p *provider.Provider, m *provider.Model) string {
	sum := sha256.Sum256([]byte(p.ID + "\x00" + p.BaseURL + "\x00" + m.ID))
	return "fp_gh_" + hex.EncodeToString(sum[:5])
}

// fingerprints gives every answer object or chunk of one call a
// system_fingerprint: the provider's where it sends one, else the last one
// it sent in this call, else Gatehouse's.
type fingerprints struct {
	own, seen string
}

func (f *fingerprints) stamp(obj map[string]json.RawMessage) {
	var s string
	if json.Unmarshal(obj["system_fingerprint"], &s) == nil && s != "" {
		f.seen = s
		return
	}
	v := f.seen
	if v == "" {
		v = f.own
	}
	obj["system_fingerprint"] = jsonobj.AppendString(nil, v)
}

// withCost sets the usage of an answer object or final chunk to what was
// metered: the provider's usage with the token counts that were charged,
// its token details where it gave them (integers only, as the clients
// require), and the cost, is_byok and cost_details of the charge. It is
// written on every answer, so by hand: cost_details is OpenRouter's
// CostDetails, whose prompt and completion parts add up to the cost, and
// whose upstream_inference_cost is what a BYOK provider bills its key's
// owner directly (the whole cost, since Gatehouse adds no fee), and null
// otherwise.
func withCost(obj map[string]json.RawMessage, g *gatehouse.Generation, m *provider.Model) {
	usage, err := jsonobj.Unmarshal(obj["usage"])
	if err != nil {
		usage = make(map[string]json.RawMessage, 8)
	}
	usage["prompt_tokens"] = strconv.AppendInt(nil, g.PromptTokens, 10)
	usage["completion_tokens"] = strconv.AppendInt(nil, g.CompletionTokens, 10)
	usage["total_tokens"] = strconv.AppendInt(nil, g.PromptTokens+g.CompletionTokens, 10)
	for _, name := range []string{"prompt_tokens_details", "completion_tokens_details"} {
		if d := tokenDetails(usage[name]); d != nil {
			usage[name] = d
		} else {
			delete(usage, name)
		}
	}
	usage["cost"] = g.Cost.AppendDecimal(nil)
	usage["is_byok"] = strconv.AppendBool(nil, g.BYOK)
	prompt, completion := m.CostSplit(g)
	d := make([]byte, 0, 128)
	d = append(d, `{"upstream_inference_cost":`...)
	if g.BYOK {
		d = g.Cost.AppendDecimal(d)
	} else {
		d = append(d, "null"...)
	}
	d = prompt.AppendDecimal(append(d, `,"upstream_inference_prompt_cost":`...))
	d = completion.AppendDecimal(append(d, `,"upstream_inference_completions_cost":`...))
	usage["cost_details"] = append(d, '}')
	obj["usage"] = jsonobj.Marshal(usage)
}

// tokenDetails keeps, of a provider's token details, the counts that are
// whole numbers; nil when it gave no object.
func tokenDetails(raw json.RawMessage) json.RawMessage {
	d, err := jsonobj.Unmarshal(raw)
	if err != nil {
		return nil
	}
	for k, v := range d {
		if !wholeNumber(bytes.TrimSpace(v)) {
			delete(d, k)
		}
	}
	return jsonobj.Marshal(d)
}

// wholeNumber reports whether a JSON value is a whole number of tokens:
// digits only (no sign, fraction or exponent), within an int64.
func wholeNumber(v []byte) bool {
	if len(v) == 0 || len(v) > 18 {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// lastChunk returns the chunk that carries a stream's usage when the
// provider sent none: no choices, just the usage, as OpenAI-style streams
// end.
func lastChunk(g *gatehouse.Generation, fp *fingerprints, now time.Time) map[string]json.RawMessage {
	obj := map[string]json.RawMessage{"choices": json.RawMessage("[]"), "object": json.RawMessage(`"chat.completion.chunk"`)}
	obj["id"], _ = json.Marshal(g.ID)
	obj["model"], _ = json.Marshal(g.Model)
	obj["provider"], _ = json.Marshal(g.Provider)
	obj["created"], _ = json.Marshal(now.Unix())
	fp.stamp(obj)
	return obj
}
