package gatehouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Provider is an upstream serving models over the OpenAI Chat Completions
// API. Its API key is read from the environment variable APIKeyEnv; it is
// never stored or logged.
type Provider struct {
	ID        string
	BaseURL   string // e.g. https://api.openai.com/v1
	APIKeyEnv string
	APIKey    string
	BYOK      bool // usage through it counts as BYOK usage
	// Responses says the provider serves the OpenAI Responses API too, at
	// BaseURL + /responses: only then does POST /responses reach it.
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

// DefaultProviderTimeout is how long a whole call to a provider may take
// when the provider sets no timeout of its own, and
// DefaultFirstByteTimeout how long its answer may take to begin: the
// clients of reasoning models wait as long (OpenAI's and Anthropic's
// official clients time out after ten minutes).
const (
	DefaultProviderTimeout  = 30 * time.Minute
	DefaultFirstByteTimeout = 10 * time.Minute
)

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

// Model is a model of a provider, with its prices.
type Model struct {
	Provider string
	ID       string // the upstream's name for it, e.g. gpt-4o-mini
	Name     string
	// Prices in dollars per million tokens.
	PromptPrice     Money
	CompletionPrice Money
	// MaxCompletionTokens caps a completion when the request sets no
	// max_tokens; the reservation assumes it.
	MaxCompletionTokens int
	ContextLength       int
	ModelInfo
}

// CostSplit divides a generation's charged cost between its prompt and
// its completion: the prompt's part is what its tokens cost at the model's
// prices (never more than the whole), the completion's is the rest, so
// that the two add up to the cost. A generation charged without usage is
// all completion.
func (m *Model) CostSplit(g *Generation) (prompt, completion Money) {
	prompt = min(m.Cost(g.PromptTokens, 0), g.Cost)
	return prompt, g.Cost - prompt
}

// Slug returns the name clients use for the model: provider/id.
func (m *Model) Slug() string { return m.Provider + "/" + m.ID }

// Cost returns the cost of the tokens at the model's prices, rounded up to
// the nano-dollar so that no request is ever under-charged.
func (m *Model) Cost(promptTokens, completionTokens int64) Money {
	total := new(big.Int).Mul(big.NewInt(promptTokens), big.NewInt(int64(m.PromptPrice)))
	total.Add(total, new(big.Int).Mul(big.NewInt(completionTokens), big.NewInt(int64(m.CompletionPrice))))
	q, r := total.QuoRem(total, big.NewInt(1_000_000), new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || q.Int64() > int64(MaxMoney) {
		return MaxMoney
	}
	return Money(q.Int64())
}

// Catalog is the set of configured providers and their models.
type Catalog struct {
	Providers []*Provider
	models    map[string]*Model
	providers map[string]*Provider
}

// NewCatalog indexes providers. Provider ids and model slugs must be
// unique; the config loader checks that with line numbers, this is the
// last line of defence.
//
// A model whose Created is zero is given the time the catalog is made.
func NewCatalog(providers []*Provider) (*Catalog, error) {
	c := &Catalog{Providers: providers, models: map[string]*Model{}, providers: map[string]*Provider{}}
	loaded := time.Now().UTC().Truncate(time.Second)
	for _, p := range providers {
		if _, dup := c.providers[p.ID]; dup {
			return nil, fmt.Errorf("provider %q is defined twice", p.ID)
		}
		c.providers[p.ID] = p
		for _, m := range p.Models {
			m.Provider = p.ID
			if m.Created.IsZero() {
				m.Created = loaded
			}
			if _, dup := c.models[m.Slug()]; dup {
				return nil, fmt.Errorf("model %q is defined twice", m.Slug())
			}
			c.models[m.Slug()] = m
		}
	}
	return c, nil
}

// Model returns the model of a slug and its provider.
func (c *Catalog) Model(slug string) (*Model, *Provider, bool) {
	m, ok := c.models[slug]
	if !ok {
		return nil, nil, false
	}
	return m, c.providers[m.Provider], true
}

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

// EPAYMENT is the code of a spending limit reached (402).
const EPAYMENT = "payment_required"

// AppliedGuardrail is a guardrail that governs a request, with the subject
// whose spending its budget counts: the key (a key assignment or the
// workspace default) or the member (a member assignment).
type AppliedGuardrail struct {
	Guardrail *Guardrail
	Subject   string // "key:<hash>" or "member:<user id>"
}

// KeySubject and MemberSubject name the subjects of guardrail budgets.
func KeySubject(hash string) string      { return "key:" + hash }
func MemberSubject(userID string) string { return "member:" + userID }

// KeyGuardrails applies the precedence of guardrails to one key: the
// guardrail assigned to the key, else those assigned to its creator as a
// member, and in either case the workspace's default guardrail (def, nil
// when it has none) unless it is the key's own. Key and default budgets
// count per key, member budgets per member.
func KeyGuardrails(key *Key, own, member []*Guardrail, def *Guardrail) []AppliedGuardrail {
	var out []AppliedGuardrail
	for _, g := range own {
		out = append(out, AppliedGuardrail{Guardrail: g, Subject: KeySubject(key.Hash)})
	}
	if len(own) == 0 && key.CreatorUserID != nil {
		for _, g := range member {
			out = append(out, AppliedGuardrail{Guardrail: g, Subject: MemberSubject(*key.CreatorUserID)})
		}
	}
	if def != nil && (len(out) == 0 || out[0].Guardrail.ID != def.ID) {
		out = append(out, AppliedGuardrail{Guardrail: def, Subject: KeySubject(key.Hash)})
	}
	return out
}

// AppendGuardrails adds applied guardrails to a list, each (guardrail,
// subject) once: a minted key and the key it was minted from may share a
// member's guardrail.
func AppendGuardrails(list []AppliedGuardrail, more ...AppliedGuardrail) []AppliedGuardrail {
	for _, a := range more {
		if !slices.ContainsFunc(list, func(b AppliedGuardrail) bool {
			return b.Guardrail.ID == a.Guardrail.ID && b.Subject == a.Subject
		}) {
			list = append(list, a)
		}
	}
	return list
}

// CheckModel applies the allow- and deny-lists of every guardrail to a
// model and its provider. The lists of several guardrails intersect: the
// model must pass each. The error names the guardrail and the rule.
func CheckModel(guardrails []AppliedGuardrail, modelSlug, provider string) error {
	for _, a := range guardrails {
		g := a.Guardrail
		for _, rule := range []struct {
			name  string
			list  []string
			value string
			allow bool
		}{
			{"allowed_providers", g.AllowedProviders, provider, true},
			{"ignored_providers", g.IgnoredProviders, provider, false},
			{"allowed_models", g.AllowedModels, modelSlug, true},
			{"ignored_models", g.IgnoredModels, modelSlug, false},
		} {
			if rule.list == nil || listed(rule.list, rule.value, !rule.allow) == rule.allow {
				continue
			}
			what := "is not in the"
			if !rule.allow {
				what = "is in the"
			}
			kind := strings.TrimSuffix(strings.SplitN(rule.name, "_", 2)[1], "s")
			return &Error{Code: EFORBIDDEN,
				Message:  fmt.Sprintf("Request blocked: %s %q %s %s list of guardrail %q", kind, rule.value, what, rule.name, g.Name),
				Metadata: map[string]any{"guardrail_id": g.ID, "guardrail_name": g.Name, "rule": rule.name, kind: rule.value}}
		}
	}
	return nil
}

// CheckReasoningBudget refuses a reasoning budget (the max_tokens of a
// request's reasoning object) that is not below capTokens, the completion
// cap sent with the call: a provider that makes room for it (Anthropic's
// thinking needs max_tokens above its budget, and some routers raise
// max_tokens to fit) would produce more than was reserved. The budget is
// read as encoding/json reads it, whatever the case of its name, which
// refuses more, never less; a reasoning value that is not an object with
// a budget is left to the provider.
func CheckReasoningBudget(reasoning json.RawMessage, capTokens int) error {
	if len(reasoning) == 0 {
		return nil
	}
	var r struct {
		MaxTokens *json.Number `json:"max_tokens"`
	}
	if json.Unmarshal(reasoning, &r) != nil || r.MaxTokens == nil {
		return nil
	}
	n, err := r.MaxTokens.Int64()
	switch {
	case err != nil || n < 0:
		return FieldError("reasoning.max_tokens", "must be a whole number of tokens")
	case n >= int64(capTokens):
		return FieldError("reasoning.max_tokens", "%d is not below the completion cap of %d tokens sent with the request (max_tokens): the provider could make room for it past what was reserved", n, capTokens)
	}
	return nil
}

// listed reports whether value is in list; folded compares letters
// whatever their case (Unicode case folding). Deny lists are read folded: an entry written in
// another case than the catalog's slug ("fake/echo2" for "fake/Echo2")
// still denies the model, rather than silently naming nothing. Allow lists
// are exact: a wrong case there denies, which is the safe way to fail.
func listed(list []string, value string, folded bool) bool {
	if !folded {
		return slices.Contains(list, value)
	}
	return slices.ContainsFunc(list, func(v string) bool { return strings.EqualFold(v, value) })
}

// Budget is a spending limit as it applies to one request: a guardrail's
// budget for a key or a member, a workspace budget, or an organization's
// credits (Kind). Its spend is counted under GuardrailID (the id of the
// guardrail, workspace budget or credits) and Subject.
type Budget struct {
	GuardrailID   string
	GuardrailName string
	Subject       string
	Limit         Money
	Interval      Interval
	IncludeBYOK   bool
	Kind          BudgetKind
}

// Budgets returns the budgets of the guardrails that have one.
func Budgets(guardrails []AppliedGuardrail) []Budget {
	var out []Budget
	for _, a := range guardrails {
		g := a.Guardrail
		if g.LimitUSD == nil {
			continue
		}
		out = append(out, Budget{GuardrailID: g.ID, GuardrailName: g.Name, Subject: a.Subject,
			Limit: *g.LimitUSD, Interval: g.ResetInterval, IncludeBYOK: g.IncludeBYOKInBudgets})
	}
	return out
}

// Reservation holds a request's worst-case cost against every limit that
// applies until the request settles. One left open by a crash counts until
// it is charged at its amount: at the next start of a SQLite server, or
// past ExpiresAt with PostgreSQL.
type Reservation struct {
	ID      string
	KeyHash string
	// Chain are the keys the key was minted from, parent first: the
	// reservation holds against each of them too.
	Chain     []string
	Amount    Money
	BYOK      bool
	Budgets   []Budget
	ExpiresAt time.Time
	// Generation is the ledger entry the call will be recorded as; a
	// reservation left open by a crash is charged under its id, model and
	// provider.
	Generation *Generation
	// Lease makes this reservation a lease: a slice of the remainder of
	// its key, chain and budgets that one instance admits requests against
	// in memory (see Leases). It is never charged.
	Lease bool
	// LeaseID names the lease this reservation was admitted against: the
	// lease counts it, so sums of what is held leave it out, and its
	// settle takes its cost off the lease.
	LeaseID string
	// Returns give back, before this reservation is admitted and in the
	// same transaction, the unused part of leases of this instance; the
	// store clears them once they are written, so that they are given
	// back once.
	Returns []LeaseReturn
	// Unheld marks a reservation admitted in memory that is never written
	// as a hold: a whole answer's, which reaches its client only once its
	// settle is written (see Meter.Settle). Its settle writes the charge
	// alone, from the key, chain and budgets it carries.
	Unheld bool
	lease  *lease // the lease it was admitted against, in memory
}

// LeaseReturn gives back Amount of the lease ID.
type LeaseReturn struct {
	ID     string
	Amount Money
}

// Generation is a completed request in the usage ledger.
type Generation struct {
	ID               string
	OrganizationID   string
	WorkspaceID      string
	KeyHash          string
	Model            string // slug
	Provider         string
	UpstreamID       *string
	PromptTokens     int64
	CompletionTokens int64
	Cost             Money
	BYOK             bool
	Streamed         bool
	FinishReason     *string
	Status           string // GenerationCompleted, or GenerationPartial when usage had to be estimated
	LatencyMS        int64
	GenerationMS     int64
	SessionID        *string
	ExternalUser     *string // the body's user, else the key's external user
	// HTTPReferer, AppTitle and UserAgent attribute the request to an
	// application and its client software (see Attribution).
	HTTPReferer *string
	AppTitle    *string
	UserAgent   *string
	// AppID is the organization's application of the HTTP-Referer's
	// origin, when it has one (the one its OAuth codes name); it is read
	// with the generation, never written with it.
	AppID *int64
	// Content, when set, is stored beside the ledger entry where the
	// workspace logs I/O; it is not part of the entry, and is never read
	// back with it.
	Content   *GenerationContent
	CreatedAt time.Time
}

// NewGenerationID returns a fresh generation id.
//
// It begins with the second it was made, as OpenRouter's do
// (gen-1764324000-…): the ledger's primary key then grows at its end, so a
// write of new generations touches the index's last pages, not pages all
// over it.
func NewGenerationID() string {
	return "gen-" + strconv.FormatInt(time.Now().Unix(), 10) + "-" + randomToken(12)
}

// UsageService reserves, settles and records the spending of requests.
type UsageService interface {
	// GuardrailsForKey returns the guardrails that govern a key: its own
	// guardrail, else its creator's (as a member), plus the workspace's
	// default guardrail when it is configured.
	GuardrailsForKey(ctx context.Context, key *Key) ([]AppliedGuardrail, error)
	// BudgetsForKey returns the budgets a key's requests hold against
	// besides its guardrails': its organization's credits, when it has
	// some, and its workspace's budgets, broadest first (a refusal names
	// the broadest budget a request would exceed).
	BudgetsForKey(ctx context.Context, key *Key) ([]Budget, error)
	// Reserve holds amount against the key's limit and every budget, in
	// one atomic step, counting recorded spend and live reservations.
	// EPAYMENT when the key's limit or the organization's credits would be
	// exceeded, EFORBIDDEN when a guardrail or workspace budget would be,
	// ENOTFOUND for an unknown key.
	Reserve(ctx context.Context, r *Reservation) error
	// Settle replaces a reservation with the exact usage: the ledger entry,
	// the key's counters and the counters of the reservation's budgets, in
	// one transaction. ENOTFOUND when the reservation is gone (settled,
	// released, or expired and cleaned up).
	Settle(ctx context.Context, reservationID string, g *Generation) error
	// Release drops a reservation without charging anything.
	Release(ctx context.Context, reservationID string) error
	// ChargeOpen charges the reservations left open past before (all of
	// them when before is zero) at what they reserved, and returns how
	// many it charged: a reservation counts until it is settled, released
	// or charged.
	ChargeOpen(ctx context.Context, before time.Time) (int, error)
	// Ancestors returns the keys a key was minted from, parent first; a
	// nil entry is a deleted key, and ends the chain.
	Ancestors(ctx context.Context, key *Key) ([]*Key, error)
	// FindGeneration returns a ledger entry of the organization. ENOTFOUND.
	FindGeneration(ctx context.Context, orgID, id string) (*Generation, error)
	// BudgetUsage returns the spend counted against a guardrail budget.
	BudgetUsage(ctx context.Context, guardrailID, subject string) (Usage, Usage, error)
}

// Reserved sums live reservations: all of them, and the BYOK ones among them.
type Reserved struct {
	All, BYOK Money
}

// counted returns the reserved amount that counts against a limit that
// does (includeBYOK) or does not count BYOK spending.
func (r Reserved) counted(includeBYOK bool) Money {
	if includeBYOK {
		return r.All
	}
	return r.All - r.BYOK
}

// counts reports whether a reservation's amount counts against a limit.
func (r *Reservation) counts(includeBYOK bool) Money {
	if r.BYOK && !includeBYOK {
		return 0
	}
	return r.Amount
}

// CheckKeyLimit refuses a reservation that could take the key's spending
// in the current period past its limit: EPAYMENT (402), saying what remains.
func CheckKeyLimit(k *Key, now time.Time, reserved Reserved, r *Reservation) error {
	if k.Limit == nil {
		return nil
	}
	spent := k.Usage.At(now).In(k.LimitReset)
	if k.IncludeBYOKInLimit {
		spent += k.BYOKUsage.At(now).In(k.LimitReset)
	}
	remaining := max(*k.Limit-spent-reserved.counted(k.IncludeBYOKInLimit), 0)
	need := r.counts(k.IncludeBYOKInLimit)
	if need == 0 || need <= remaining {
		return nil
	}
	period := "in total"
	if k.LimitReset != NoReset {
		period = "until the " + string(k.LimitReset) + " reset"
	}
	return &Error{Code: EPAYMENT,
		Message: fmt.Sprintf("Key limit exceeded: this request may cost up to $%s and $%s of the key's $%s limit remain %s",
			need, remaining, *k.Limit, period),
		Metadata: map[string]any{"limit": *k.Limit, "limit_remaining": remaining, "limit_reset": k.LimitReset, "request_max_cost": need}}
}

// BudgetSpend is what counts against a guardrail budget before a request:
// the recorded spend of its subject and its live reservations.
type BudgetSpend struct {
	Usage, BYOK Usage
	Reserved    Reserved
}

// Spent is the recorded spend that counts against budget b in its current
// period (live reservations aside): BYOK spend too when b counts it.
func (s BudgetSpend) Spent(b Budget) Money {
	spent := s.Usage.In(b.Interval)
	if b.IncludeBYOK {
		spent += s.BYOK.In(b.Interval)
	}
	return spent
}

// CheckBudget refuses a reservation that could take a budget's subject
// past its limit in the current period: for a guardrail's budget EFORBIDDEN
// (403), naming the guardrail and the rule; for a workspace budget
// EFORBIDDEN naming the workspace's budget; for credits EPAYMENT (402).
func CheckBudget(b Budget, s BudgetSpend, r *Reservation) error {
	remaining := max(b.Limit-s.Spent(b)-s.Reserved.counted(b.IncludeBYOK), 0)
	need := r.counts(b.IncludeBYOK)
	if need == 0 || need <= remaining {
		return nil
	}
	switch b.Kind {
	case WorkspaceLimit:
		return workspaceBudgetError(b, remaining, need)
	case OrganizationCredits:
		return creditsError(need)
	}
	return &Error{Code: EFORBIDDEN,
		Message: fmt.Sprintf("Request blocked: the %s budget of $%s of guardrail %q is exhausted for this %s ($%s remain, the request may cost $%s)",
			b.Interval, b.Limit, b.GuardrailName, strings.SplitN(b.Subject, ":", 2)[0], remaining, need),
		Metadata: map[string]any{"guardrail_id": b.GuardrailID, "guardrail_name": b.GuardrailName, "rule": "limit_usd",
			"limit_usd": b.Limit, "reset_interval": b.Interval, "remaining": remaining}}
}

// TraceEvent describes one completed request for the observability
// destinations of its workspace.
type TraceEvent struct {
	Generation *Generation
	KeyName    string
	UserID     *string // the key's creator
	Input      []byte  // the request's messages, as JSON; dropped in privacy mode
	Output     string  // the completion text; dropped in privacy mode
	StartedAt  time.Time
	EndedAt    time.Time
}

// TraceSink receives trace events. Publish must not block: delivery is
// asynchronous and a slow destination must never slow a request.
type TraceSink interface {
	Publish(ev *TraceEvent)
}

// PricePerToken renders a price per million tokens as dollars per token, as
// OpenRouter's model list shows it ("0.0000025").
func PricePerToken(perMillion Money) string {
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
	// worked on it, and billed it.
	Delivered bool
	// Charged, once the failed call is metered, is what it was charged
	// (see Billed), under the generation GenerationID; nil when nothing.
	Charged      *Money
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
	APIKey    Secret
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
	UsageKnown       bool // false when the provider reported no usage
	UpstreamID       string
	FinishReason     string
	Output           string // the first choice's text, bounded
	Reasoning        string // the first choice's reasoning text, bounded
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
	APIKey Secret
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
