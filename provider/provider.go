package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"gatehouse"
	"io"
	"math/big"
	"strings"
	"time"
)

// Provider is an upstream serving models over the OpenAI Chat Completions
// API. Its API key is read from the environment variable APIKeyEnv; it is
// never stored or logged.
type Provider struct {
	ID string
	// Type is the API the provider speaks: "openai" (OpenAI-compatible,
	// the default when empty), "anthropic" (Anthropic's Messages API) or
	// "gemini" (Google's Gemini API). See gateway's dialects.
	Type      string
	BaseURL   string // e.g. https://api.openai.com/v1
	APIKeyEnv string
	APIKey    string
	BYOK      bool // usage through it counts as BYOK usage
	// Responses says an OpenAI-compatible provider serves the OpenAI
	// Responses API too, at BaseURL + /responses: only then does POST
	// /responses reach it. A provider of another type is always reached,
	// its answers translated from its own API.
	Responses bool
	// Timeout bounds a whole call, from sending the request to the last
	// byte of the answer; FirstByteTimeout bounds the wait for the answer
	// to begin (its status line), which a model that reasons before it
	// answers, or a long prompt's prefill, may take minutes to reach.
	Timeout          time.Duration
	FirstByteTimeout time.Duration
	Models           []*Model
	ProviderInfo
}

// ProviderTypes are the APIs a provider may speak (Provider.Type), and
// DefaultBaseURLs the base URL of each that has a default.
var (
	ProviderTypes   = []string{"openai", "anthropic", "gemini"}
	DefaultBaseURLs = map[string]string{
		"anthropic": "https://api.anthropic.com",
		"gemini":    "https://generativelanguage.googleapis.com",
	}
)

// DefaultProviderTimeout is how long a whole call to a provider may take
// when the provider sets no timeout of its own, and
// DefaultFirstByteTimeout how long its answer may take to begin: the
// clients of reasoning models wait as long (OpenAI's and Anthropic's
// official clients time out after ten minutes).
const (
	DefaultProviderTimeout  = 30 * time.Minute
	DefaultFirstByteTimeout = 10 * time.Minute
)

// OpenAICompatible reports whether the provider speaks OpenAI's API (type
// openai, the default), which Gatehouse forwards as it is; the others'
// chat completions are translated (see gateway's dialects).
func (p *Provider) OpenAICompatible() bool { return p.Type == "" || p.Type == "openai" }

// CallTimeout returns how long a whole call to the provider may take.
func (p *Provider) CallTimeout() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return DefaultProviderTimeout
}

// AnswerTimeout returns how long the provider's answer may take to begin:
// its first-byte timeout, never more than the whole call's.
func (p *Provider) AnswerTimeout() time.Duration {
	d := p.FirstByteTimeout
	if d <= 0 {
		d = DefaultFirstByteTimeout
	}
	return min(d, p.CallTimeout())
}

// Model is a model of a provider, with its prices: an endpoint of the
// model it serves (Slug). Several providers' entries that serve the same
// model are its endpoints, each with its own upstream name, prices and
// limits; a request for the model routes among them (see Resolve).
type Model struct {
	Provider string
	ID       string // the upstream's name for it, e.g. gpt-4o-mini
	// Serves is the model it is an endpoint of, as OpenRouter names
	// models (author/name, such as meta-llama/llama-3.1-70b-instruct);
	// empty: its own address (Address).
	Serves string
	Name   string
	// Prices in dollars per million tokens.
	PromptPrice     gatehouse.Money
	CompletionPrice gatehouse.Money
	// MaxCompletionTokens caps a completion when the request sets no
	// max_tokens; the reservation assumes it.
	MaxCompletionTokens int
	ContextLength       int
	// Timeout and FirstByteTimeout, when set, are this endpoint's own
	// (see Provider.Timeout); zero: its provider's.
	Timeout          time.Duration
	FirstByteTimeout time.Duration
	ModelInfo
	// address and facts are computed once, by NewCatalog: every request
	// reads them.
	address string
	facts   *gatehouse.Endpoint
}

// CallTimeout returns how long a whole call to the endpoint may take: its
// own timeout, else its provider's.
func (m *Model) CallTimeout(p *Provider) time.Duration {
	if m.Timeout > 0 {
		return m.Timeout
	}
	return p.CallTimeout()
}

// AnswerTimeout returns how long the endpoint's answer may take to begin:
// its own first-byte timeout, else its provider's, never more than the
// whole call's.
func (m *Model) AnswerTimeout(p *Provider) time.Duration {
	d := m.FirstByteTimeout
	if d <= 0 {
		d = p.AnswerTimeout()
	}
	return min(d, m.CallTimeout(p))
}

// CostSplit divides a generation's charged cost between its prompt and
// its completion: the prompt's part is what its tokens cost at the model's
// prices, cache reads and writes at theirs (never more than the whole),
// the completion's is the rest, so that the two add up to the cost. A
// generation charged without usage is all completion.
func (m *Model) CostSplit(g *gatehouse.Generation) (prompt, completion gatehouse.Money) {
	prompt = min(m.UsageCost(Usage{Prompt: g.PromptTokens, CacheRead: g.CacheReadTokens, CacheWrite: g.CacheWriteTokens}), g.Cost)
	return prompt, g.Cost - prompt
}

// Usage is what a call used, as its provider bills it: prompt tokens
// (CacheRead of them read from the provider's prompt cache, CacheWrite
// written to it) and completion tokens.
type Usage struct {
	Prompt, Completion, CacheRead, CacheWrite int64
}

// UsageCost returns what usage costs at the model's prices: the prompt
// tokens neither read from nor written to the cache at the prompt price,
// cache reads at the cache read price and cache writes at the cache write
// price (each the prompt price when the model sets none), completions at
// the completion price; rounded up to the nano-dollar. Cache counts past
// the prompt's count are priced as they are (the caller checks them).
func (m *Model) UsageCost(u Usage) gatehouse.Money {
	total := new(big.Int)
	add := func(tokens int64, price gatehouse.Money) {
		total.Add(total, new(big.Int).Mul(big.NewInt(max(tokens, 0)), big.NewInt(int64(price))))
	}
	add(u.Prompt-u.CacheRead-u.CacheWrite, m.PromptPrice)
	add(u.CacheRead, priceOr(m.CacheReadPrice, m.PromptPrice))
	add(u.CacheWrite, priceOr(m.CacheWritePrice, m.PromptPrice))
	add(u.Completion, m.CompletionPrice)
	return perMillion(total)
}

// priceOr returns a price the model may set, else def.
func priceOr(p *gatehouse.Money, def gatehouse.Money) gatehouse.Money {
	if p == nil {
		return def
	}
	return *p
}

// CachesExplicitly reports whether the endpoint takes requests that ask
// for prompt caching (cache_control): its model sets a cache write price,
// so that what the writes cost is known.
func (m *Model) CachesExplicitly() bool { return m.CacheWritePrice != nil }

// Slug returns the name of the model the entry serves: Serves, or its
// address. Ledger entries, guardrails and the model list use it.
func (m *Model) Slug() string {
	if m.Serves != "" {
		return m.Serves
	}
	return m.Address()
}

// Address returns the name of this endpoint alone: provider/id. A request
// for it is served by this provider only.
func (m *Model) Address() string {
	if m.address != "" {
		return m.address
	}
	return m.Provider + "/" + m.ID
}

// Cost returns the cost of the tokens at the model's prices, rounded up to
// the nano-dollar so that no request is ever under-charged.
func (m *Model) Cost(promptTokens, completionTokens int64) gatehouse.Money {
	total := new(big.Int).Mul(big.NewInt(promptTokens), big.NewInt(int64(m.PromptPrice)))
	total.Add(total, new(big.Int).Mul(big.NewInt(completionTokens), big.NewInt(int64(m.CompletionPrice))))
	return perMillion(total)
}

// perMillion turns a sum of tokens times prices per million tokens into
// money, rounded up to the nano-dollar so that no request is ever
// under-charged, and capped at MaxMoney.
func perMillion(total *big.Int) gatehouse.Money {
	q, r := total.QuoRem(total, big.NewInt(1_000_000), new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || q.Int64() > int64(gatehouse.MaxMoney) {
		return gatehouse.MaxMoney
	}
	return gatehouse.Money(q.Int64())
}

// Catalog is the set of configured providers and their models.
type Catalog struct {
	Providers []*Provider
	models    map[string]*Model   // by address
	slugs     map[string][]*Model // the endpoints of each model, in configuration order
	order     []string            // the models' slugs, in configuration order
	providers map[string]*Provider
}

// NewCatalog indexes providers. Provider ids and model addresses must be
// unique, and a model's slug may not be the address of an entry that
// serves another model; the config loader checks that with line numbers,
// this is the last line of defence.
//
// A model whose Created is zero is given the time the catalog is made.
func NewCatalog(providers []*Provider) (*Catalog, error) {
	c := &Catalog{Providers: providers, models: map[string]*Model{}, slugs: map[string][]*Model{}, providers: map[string]*Provider{}}
	loaded := time.Now().UTC().Truncate(time.Second)
	for _, p := range providers {
		if _, dup := c.providers[p.ID]; dup {
			return nil, fmt.Errorf("provider %q is defined twice", p.ID)
		}
		c.providers[p.ID] = p
		for _, m := range p.Models {
			m.Provider, m.address, m.facts = p.ID, "", nil
			m.address = m.Address()
			if m.Created.IsZero() {
				m.Created = loaded
			}
			if _, dup := c.models[m.Address()]; dup {
				return nil, fmt.Errorf("model %q is defined twice", m.Address())
			}
			c.models[m.Address()] = m
			if _, ok := c.slugs[m.Slug()]; !ok {
				c.order = append(c.order, m.Slug())
			}
			c.slugs[m.Slug()] = append(c.slugs[m.Slug()], m)
			facts := Endpoint{Provider: p, Model: m}.Facts()
			m.facts = &facts
		}
	}
	for slug := range c.slugs {
		if m, ok := c.models[slug]; ok && m.Slug() != slug {
			return nil, fmt.Errorf("model %q is the address of provider %s's entry %s, which serves %q: a slug and an address may not name two models", slug, m.Provider, m.ID, m.Slug())
		}
	}
	return c, nil
}

// Model returns the endpoint of an address (provider/id) and its provider.
func (c *Catalog) Model(address string) (*Model, *Provider, bool) {
	m, ok := c.models[address]
	if !ok {
		return nil, nil, false
	}
	return m, c.providers[m.Provider], true
}

// Endpoints returns the endpoints a request for name may go to: every
// endpoint of the model whose slug it is, or else the endpoint whose
// address it is, alone; false when it names neither. A name that is both
// (an entry serving the model of its own address, beside others serving it
// too) is the model: provider preferences (only) pick one endpoint of it.
func (c *Catalog) Endpoints(name string) ([]*Model, bool) {
	if eps, ok := c.slugs[name]; ok {
		return eps, true
	}
	if m, ok := c.models[name]; ok {
		return []*Model{m}, true
	}
	return nil, false
}

// Slugs returns the models' slugs, in configuration order (that of each
// model's first endpoint).
func (c *Catalog) Slugs() []string { return c.order }

// Provider returns the provider of an id.
func (c *Catalog) Provider(id string) (*Provider, bool) {
	p, ok := c.providers[id]
	return p, ok
}

// Models returns every model, in configuration order.
func (c *Catalog) Models() []*Model {
	var out []*Model
	for _, p := range c.Providers {
		out = append(out, p.Models...)
	}
	return out
}

// PricePerToken renders a price per million tokens as dollars per token, as
// OpenRouter's model list shows it ("0.0000025").
func PricePerToken(perMillion gatehouse.Money) string {
	// nano-dollars per million tokens = femto-dollars (1e-15) per token.
	r := new(big.Rat).SetFrac(big.NewInt(int64(perMillion)), big.NewInt(1_000_000_000_000_000))
	s := r.FloatString(15)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// UpstreamKind says how a call to a provider failed.
type UpstreamKind string

// The ways a provider call fails. Front ends choose what the client sees
// (httpapi: 502, 408, or the provider's own status passed through).
const (
	UpstreamUnreachable UpstreamKind = "unreachable" // no answer: the provider could not be reached, or its URL is invalid
	UpstreamTimeout     UpstreamKind = "timeout"     // it did not answer within its timeout
	UpstreamBadAnswer   UpstreamKind = "bad_answer"  // it answered, but not with a readable completion
	UpstreamTooLarge    UpstreamKind = "too_large"   // it answered in full, but the answer is larger than Gatehouse delivers
	UpstreamRejected    UpstreamKind = "rejected"    // it answered with an error status (ProviderStatus)
)

// UpstreamError is a provider's failure as the client sees it: how it
// failed, the message, and for a rejection the provider's own answer (its
// status, which OpenRouter's clients expect passed through, and its body).
type UpstreamError struct {
	Kind     UpstreamKind
	Message  string
	Provider string
	// ProviderStatus is the HTTP status the provider answered with, as a
	// fact about its answer (UpstreamRejected, UpstreamBadAnswer); 0 when
	// it gave none.
	ProviderStatus int
	Raw            []byte // the provider's error body, when it was JSON
	Err            error  // the cause, for the log: such as the network error
	// Delivered says that the provider had received the whole request
	// (it was written to the provider) when the call failed: it may have
	// worked on it, and billed it. Answered says that its answer had
	// begun (its status line came).
	Delivered, Answered bool
	// RetryAfter is how long the provider asked to be left alone (its
	// Retry-After); zero when it did not say.
	RetryAfter time.Duration
	// Charged, once the failed call is metered, is what it was charged
	// (see Billed), under the generation GenerationID; nil when nothing.
	Charged      *gatehouse.Money
	GenerationID string
}

// Billed reports whether a failed call is one the provider may bill, and
// so is charged: once the provider received the request, only its own
// refusal (an answer with a status other than 2xx, which providers do not
// bill) is free. Every other ending after the request was written (a
// timeout waiting for or reading the answer, an answer too large or
// unreadable, a connection cut, the client leaving) is charged: the usage
// the answer reported where it could be read, else the reservation. A
// call that never reached the provider, and errors that are not the
// provider's (Gatehouse's own), are free.
func Billed(err error) bool {
	var ue *UpstreamError
	if !errors.As(err, &ue) || !ue.Delivered {
		return false
	}
	return ue.ProviderStatus == 0 || ue.ProviderStatus/100 == 2
}

// Error describes the failure for the log, with its cause.
func (e *UpstreamError) Error() string {
	s := fmt.Sprintf("upstream %s: %s", e.Provider, e.Kind)
	if e.ProviderStatus != 0 {
		s += fmt.Sprintf(" (%d)", e.ProviderStatus)
	}
	s += ": " + e.Message
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *UpstreamError) Unwrap() error { return e.Err }

// CompletionCall is one chat completion to forward.
type CompletionCall struct {
	Provider *Provider
	// APIKey, when set, is sent instead of the provider's own key: a
	// workspace's BYOK key.
	APIKey    gatehouse.Secret
	Model     *Model
	Body      map[string]json.RawMessage // the client's request; the rest passes through
	MaxTokens int                        // set upstream when the client set no cap
	Stream    bool
	// Rewrite edits every answer object (or stream chunk) before the
	// client sees it: the generation id and the model's slug.
	Rewrite func(map[string]json.RawMessage)
}

// Completion is what metering and tracing need of an answer.
type Completion struct {
	PromptTokens     int64
	CompletionTokens int64
	// CacheReadTokens and CacheWriteTokens are the prompt tokens read from
	// and written to the provider's prompt cache (counted in PromptTokens
	// too), priced at the model's cache prices.
	CacheReadTokens, CacheWriteTokens int64
	UsageKnown                        bool // false when the provider reported no usage
	UpstreamID                        string
	FinishReason                      string
	Output                            string // the first choice's text, bounded
	Reasoning                         string // the first choice's reasoning text, bounded
	// Final is the answer object of a whole answer, or the last chunk of a
	// stream that carried usage (held back, not sent), rewritten: the
	// caller adds what metering decided (the cost) and sends it. nil for a
	// stream that reported no usage.
	Final map[string]json.RawMessage
	// Done is true when a stream ended with its "data: [DONE]" event, which
	// the upstream client holds back: the caller sends it once the request
	// is metered, so a client that stops reading at [DONE] sees its usage.
	Done bool
}

// StreamWriter receives a streamed answer: Start once before the first
// event (it sends the response headers), then the events, flushed as they
// come.
type StreamWriter interface {
	io.Writer
	Start()
	Flush()
}

// EmbeddingCall is one embeddings request to forward.
type EmbeddingCall struct {
	Provider *Provider
	// APIKey, when set, is sent instead of the provider's own key: a
	// workspace's BYOK key.
	APIKey gatehouse.Secret
	Model  *Model
	Body   map[string]json.RawMessage // the checked request, re-encoded; model is set upstream
	// Rewrite edits the answer object before the client sees it.
	Rewrite func(map[string]json.RawMessage)
}

// Upstream forwards chat completions, Responses API requests and
// embeddings to providers. An error before the answer started is an
// *UpstreamError; for a stream, an error after it started means the
// stream broke off and the Completion holds what arrived.
type Upstream interface {
	Complete(ctx context.Context, call CompletionCall, w StreamWriter) (Completion, error)
	// Respond forwards a Responses API request as Complete forwards a
	// chat completion: call.Body is the checked request, MaxTokens its
	// max_output_tokens. The Completion's prompt and completion tokens are
	// the usage's input_tokens and output_tokens; Final is the whole
	// answer, or the stream's last event (response.completed, .incomplete
	// or .failed), held back; nil when none came.
	Respond(ctx context.Context, call CompletionCall, w StreamWriter) (Completion, error)
	// Embed forwards an embeddings request and reads the whole answer:
	// its usage's prompt_tokens are the Completion's PromptTokens (an
	// embedding has no completion), and Final is the rewritten answer.
	Embed(ctx context.Context, call EmbeddingCall) (Completion, error)
}

// CompletionCap returns the completion cap of a call to the model: the one
// the client asked for, else the model's.
func (m *Model) CompletionCap(requested *int) int {
	if requested != nil {
		return *requested
	}
	return m.MaxCompletionTokens
}

// CheckBYOKProvider refuses a provider that the catalog does not serve: a
// BYOK key for it could never be used.
func (c *Catalog) CheckBYOKProvider(id string) error {
	if _, ok := c.Provider(id); ok {
		return nil
	}
	if len(c.Providers) == 0 {
		return gatehouse.FieldError("provider", "unknown provider %q: this server serves no providers (GATEHOUSE_PROVIDERS_FILE)", id)
	}
	return gatehouse.FieldError("provider", "unknown provider %q: a BYOK key is for a provider of the providers file (GET /api/v1/providers lists them)", id)
}
