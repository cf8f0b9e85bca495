package gatehouse

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
		if err := checkLists(a.Guardrail, Endpoint{Slug: modelSlug, Address: modelSlug, Provider: provider}); err != nil {
			return err
		}
	}
	return nil
}

// Endpoint is what the guardrails judge of one way to serve a request: a
// model (its slug, and the address of this provider's entry for it), its
// provider, and what the providers file says of the endpoint.
type Endpoint struct {
	Slug, Address, Provider string
	ZDR                     bool     // it keeps no prompts or completions
	Regions                 []string // the data regions it runs in: global, and europe or us where its datacenters are
	Collects                bool     // it may keep prompts or train on them
	Free                    bool     // it charges nothing
}

// CheckEndpoint applies every guardrail to an endpoint: the allow- and
// deny-lists of models (by slug or by address) and providers, zero data
// retention (enforce_zdr, for every model or its author's), the data
// regions, and training (enable_free_model_training and
// enable_paid_model_training false leave out endpoints that may keep
// prompts). The rules of several guardrails intersect: the endpoint must
// pass each. The error names the guardrail and the rule.
func CheckEndpoint(guardrails []AppliedGuardrail, e Endpoint) error {
	for _, a := range guardrails {
		if err := checkLists(a.Guardrail, e); err != nil {
			return err
		}
		if err := checkDataRules(a.Guardrail, e); err != nil {
			return err
		}
	}
	return nil
}

// checkLists applies a guardrail's lists of models and providers: a model
// is listed by its slug or by the endpoint's address.
func checkLists(g *Guardrail, e Endpoint) error {
	for _, rule := range [...]struct {
		name  string
		list  []string
		value string
		other string // another name of the same thing ("" none)
		allow bool
	}{
		{"allowed_providers", g.AllowedProviders, e.Provider, "", true},
		{"ignored_providers", g.IgnoredProviders, e.Provider, "", false},
		{"allowed_models", g.AllowedModels, e.Slug, e.Address, true},
		{"ignored_models", g.IgnoredModels, e.Slug, e.Address, false},
	} {
		if rule.list == nil {
			continue
		}
		in := listed(rule.list, rule.value, !rule.allow) || rule.other != "" && rule.other != rule.value && listed(rule.list, rule.other, !rule.allow)
		if in == rule.allow {
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
	return nil
}

// checkDataRules applies a guardrail's rules of where prompts may go:
// zero data retention, data regions, training.
func checkDataRules(g *Guardrail, e Endpoint) error {
	blocked := func(rule, why string) error {
		return &Error{Code: EFORBIDDEN,
			Message:  fmt.Sprintf("Request blocked: provider %s's endpoint of %q %s, which rule %s of guardrail %q forbids", e.Provider, e.Slug, why, rule, g.Name),
			Metadata: map[string]any{"guardrail_id": g.ID, "guardrail_name": g.Name, "rule": rule, "provider": e.Provider, "model": e.Slug}}
	}
	if rule, on := zdrRule(g, e.Slug); on && !e.ZDR {
		return blocked(rule, "may retain data (the providers file does not mark it zdr)")
	}
	if g.AllowedDataRegions != nil && !slices.ContainsFunc(g.AllowedDataRegions, func(r string) bool { return slices.Contains(e.Regions, r) }) {
		return blocked("allowed_data_regions", fmt.Sprintf("runs in %s, none of %s", strings.Join(e.Regions, ", "), strings.Join(g.AllowedDataRegions, ", ")))
	}
	switch {
	case e.Collects && e.Free && g.EnableFreeModelTraining != nil && !*g.EnableFreeModelTraining:
		return blocked("enable_free_model_training", "may keep prompts or train on them")
	case e.Collects && !e.Free && g.EnablePaidModelTraining != nil && !*g.EnablePaidModelTraining:
		return blocked("enable_paid_model_training", "may keep prompts or train on them")
	}
	return nil
}

// zdrRule returns the zero-data-retention rule of a guardrail that covers a
// model, by its author (the slug's first part), and whether it is on.
func zdrRule(g *Guardrail, slug string) (string, bool) {
	author, _, _ := strings.Cut(slug, "/")
	rule, sw := "enforce_zdr_other", g.EnforceZDROther
	switch author {
	case "anthropic":
		rule, sw = "enforce_zdr_anthropic", g.EnforceZDRAnthropic
	case "openai":
		rule, sw = "enforce_zdr_openai", g.EnforceZDROpenAI
	case "google":
		rule, sw = "enforce_zdr_google", g.EnforceZDRGoogle
	case "x-ai":
		rule, sw = "enforce_zdr_xai", g.EnforceZDRXAI
	}
	if sw != nil {
		return rule, *sw
	}
	return "enforce_zdr", g.EnforceZDR != nil && *g.EnforceZDR
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
	// CacheReadTokens and CacheWriteTokens are the prompt tokens read from
	// and written to the provider's prompt cache (in PromptTokens too).
	CacheReadTokens  int64
	CacheWriteTokens int64
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
	// ProviderResponses are the attempts of the call, in order: those
	// that fell to their endpoint and went on to the next, and the last
	// (nil for a generation recorded before routing kept them).
	ProviderResponses []ProviderResponse
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
	// DefaultProviderSort returns the default_provider_sort of a key's
	// workspace ("" when it sets none): how the endpoints of its requests
	// that give no sort are ordered.
	DefaultProviderSort(ctx context.Context, key *Key) (string, error)
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

// The statuses of a Generation.
const (
	GenerationCompleted = "completed" // charged from the usage the provider reported
	GenerationPartial   = "partial"   // no usable usage: charged the reservation
)
