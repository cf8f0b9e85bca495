package gateway

import (
	"io"
	"net/http"
	"strings"

	"gatehouse/provider"
)

// A dialect is how one type of provider (provider.Provider.Type) is
// spoken to. Gatehouse's own form of a model call is OpenAI's Chat
// Completions: every endpoint (chat completions, the Responses API,
// embeddings, the Messages API, presets) reads, meters and rewrites
// requests and answers in that form. A dialect translates at the edge: the
// request body it is given into the provider's own, and the provider's
// answers (whole, streamed as server-sent events, or an error) back into
// OpenAI's, byte for byte, so that the rest of the gateway (usage read by
// exact names, the final chunk held back, the rewrite of ids) is the same
// for every type. The usage of a translated answer is OpenAI's, with
// prompt_tokens counting every input token (cached reads and cache writes
// included), prompt_tokens_details.cached_tokens the cache reads,
// prompt_tokens_details.cache_write_tokens the cache writes, and
// completion_tokens_details.reasoning_tokens the reasoning: what the
// provider will bill, for metering to price.
type dialect interface {
	// url is where a call of the API (chat, responses, embeddings: the
	// OpenAI path, such as "/chat/completions") goes.
	url(p *provider.Provider, m *provider.Model, path string, stream bool) string
	// authorize sets the request's credentials: key is the provider's,
	// or a workspace's BYOK key.
	authorize(req *http.Request, key string)
	// request translates an OpenAI request body of the API into the
	// provider's; an error is a *gatehouse.Error (EINVALID naming the field
	// the provider cannot honour), returned before anything is sent.
	request(path string, m *provider.Model, body []byte) ([]byte, error)
	// answer translates a whole answer into OpenAI's (the body may be
	// read to its end); stream translates a stream of server-sent events
	// into OpenAI's, as it comes.
	answer(path string, body io.Reader) io.Reader
	stream(path string, body io.Reader) io.Reader
	// failure translates an error answer's body into OpenAI's error
	// shape ({"error": {"message", "type", "code"}}), keeping its status.
	failure(status int, body []byte) []byte
}

// dialectOf returns the dialect of a provider's type.
func dialectOf(p *provider.Provider) dialect {
	if d, ok := dialects[p.Type]; ok {
		return d
	}
	return openAI{}
}

// dialects are the dialects of the provider types other than openai.
var dialects = map[string]dialect{}

// openAI is the dialect of OpenAI-compatible APIs: Gatehouse's own form,
// so nothing is translated.
type openAI struct{}

func (openAI) url(p *provider.Provider, _ *provider.Model, path string, _ bool) string {
	return strings.TrimSuffix(p.BaseURL, "/") + path
}

func (openAI) authorize(req *http.Request, key string) {
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
}

func (openAI) request(_ string, _ *provider.Model, body []byte) ([]byte, error) { return body, nil }
func (openAI) answer(_ string, body io.Reader) io.Reader                        { return body }
func (openAI) stream(_ string, body io.Reader) io.Reader                        { return body }
func (openAI) failure(_ int, body []byte) []byte                                { return body }
