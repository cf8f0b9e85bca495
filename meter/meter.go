package meter

import (
	"context"
	"encoding/json"
	"errors"
	"gatehouse"
	"gatehouse/provider"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// Meter runs the metering sequence of a model call, the same for every
// front end that serves models: estimate the call's worst-case cost, reserve
// it against the key's limit and every guardrail budget (after the
// guardrails' model rules), then settle the exact cost once the provider
// has answered, or release the reservation when it never did.
type Meter struct {
	Usage gatehouse.UsageService
	// Ledger, when set, writes settles and releases behind the request
	// path; else each is written before Settle or Release returns.
	Ledger Ledger
	// Accounts, when set, admits reservations in memory, and Ledger (then
	// required) writes their holds; else Usage.Reserve admits them in the
	// database, as instances that share it must.
	Accounts *Accountant
	// Leases, when set (and not Accounts), admit reservations in memory
	// against slices of limits the database granted this instance, and
	// Ledger (then required) writes their holds.
	Leases *Leases
	// BYOKKeys, when set, holds the workspaces' own provider keys: a call
	// that one of them may serve is sent with it and metered as BYOK usage
	// (see ChooseBYOKKeys). nil: every call goes with the operator's key.
	BYOKKeys interface {
		ProviderBYOKKeys(ctx context.Context, workspaceID, prov string) ([]*gatehouse.BYOKKey, error)
	}
	Traces gatehouse.TraceSink // where settled calls are traced; nil: nowhere
	Now    gatehouse.Clock     // stamps reservation expiries; nil: time.Now
	// Anomaly hears of a provider whose answer breaks what it was asked
	// (such as usage past the cap it was sent): the key holder is charged
	// no more than was reserved, and the operator should learn of it. nil:
	// nobody hears.
	Anomaly func(ctx context.Context, a Anomaly)
	// KeepContent attaches each call's content (its messages, completion
	// and reasoning) to its generation, for the store to keep where the
	// workspace logs I/O. Content waiting to be written is bounded
	// (maxPendingContent): past it, calls are recorded without content.
	KeepContent bool
	pending     atomic.Int64 // bytes of content waiting for the ledger
}

// Ledger writes the metering of calls behind the request path, in
// batches; sqlstore.Ledger is one.
type Ledger interface {
	// Hold writes a reservation admitted in memory; the channel receives
	// nil once it is durable, or the error that kept it from being written.
	Hold(r *gatehouse.Reservation) <-chan error
	// HoldPatiently is Hold for a hold that may be taken back (Unhold):
	// while a write is in flight it waits for the next, starting none.
	HoldPatiently(r *gatehouse.Reservation) <-chan error
	// Unhold takes r's hold back if it is not yet being written, and
	// reports whether it did: its channel then never receives, and r must
	// be charged as a reservation without a hold (Charge).
	Unhold(r *gatehouse.Reservation) bool
	// Settle charges a reservation as g, behind; result (may be nil)
	// hears once it is written.
	Settle(r *gatehouse.Reservation, g *gatehouse.Generation, result func(error))
	// Charge settles a reservation that has no hold (Reservation.Unheld)
	// as g, and returns once the charge survives a crash of this process
	// (journalled, or written); written (may be nil) hears once it is
	// written. An error means it may not survive.
	Charge(ctx context.Context, r *gatehouse.Reservation, g *gatehouse.Generation, written func(error)) error
	// Release drops a reservation, behind; result (may be nil) hears once
	// it is written.
	Release(r *gatehouse.Reservation, result func(error))
	// Sync waits until everything submitted before it is written.
	Sync(ctx context.Context) error
}

// AnomalyUsageOverReservation is the kind of anomaly of a provider that
// reported usage costing more than was reserved for the call.
const AnomalyUsageOverReservation = "usage_over_reservation"

// Anomaly is a provider's answer that the key holder is not charged for in
// full: what the provider reported and what was charged instead.
type Anomaly struct {
	Kind             string
	Generation       *gatehouse.Generation // as recorded, at the charged cost
	PromptTokens     int64                 // as reported
	CompletionTokens int64                 // as reported
	Cost             gatehouse.Money       // of the reported usage
	Reserved         gatehouse.Money       // what was charged
}

// MeteredCall is what metering needs of a model call before it is made.
type MeteredCall struct {
	Key      *gatehouse.Key
	Model    *provider.Model
	Provider *provider.Provider
	// Request is the client's request body as received: its length bounds
	// the prompt, and its messages go to the trace.
	Request []byte
	// MaxTokens is the completion cap the client asked for; nil for the
	// model's.
	MaxTokens *int
	Stream    bool
	SessionID *string
	// Messages are the request's messages (a JSON array), for the content
	// kept of the call and its trace; nil: the messages of Request.
	Messages    json.RawMessage
	Attribution gatehouse.Attribution
	// CacheControl says the request asks for prompt caching: its worst
	// case counts every prompt token written to the cache.
	CacheControl bool
}

// Metering is a call whose worst case is reserved, until Settle or Release.
type Metering struct {
	Reservation *gatehouse.Reservation
	// Generation is the call's ledger entry, with its id, from the start;
	// Settle fills in its usage, cost and timings.
	Generation *gatehouse.Generation
	// MaxTokens is the completion cap the reservation assumes: the provider
	// must be sent exactly this cap.
	MaxTokens int
	// BYOKKeys are the workspace's own keys the call is sent with, in the
	// order to try them (the next only when the provider refuses the one
	// before: BYOKKeyRefused); empty: the provider's own key. The call is
	// metered as BYOK usage when there are any, or when its provider is
	// marked BYOK.
	BYOKKeys []*gatehouse.BYOKKey
	call     MeteredCall
	started  time.Time
	held     <-chan error // the hold's write, when admitted in memory
	// unhold takes the hold back if it is not yet being written (a whole
	// answer's, admitted against a lease); nil: it cannot be.
	unhold   func() bool
	heldErr  error
	heldDone bool
}

// Held waits until the reservation is durable: an answer may reach its
// client only then, so that a crash after it cannot lose its charge (an
// open reservation is charged in full when the next process starts, or
// when it expires). It is immediate when the database admitted it. A whole
// answer that came while its hold was still queued behind other writes
// (the database is busy) takes the hold back instead: Settle then waits
// for its charge to be written before the answer is delivered, one write
// in place of a hold, its end and the charge.
func (mt *Metering) Held(ctx context.Context) error {
	if mt.held == nil || mt.heldDone {
		return mt.heldErr
	}
	if mt.unhold != nil && mt.unhold() {
		mt.Reservation.Unheld, mt.heldDone = true, true
		return nil
	}
	select {
	case err := <-mt.held:
		mt.heldErr, mt.heldDone = err, true
		return err
	case <-ctx.Done():
		return gatehouse.Errorf(gatehouse.EUNAVAILABLE, "the database did not record the request's reservation in time; retry shortly")
	}
}

// Settling and releasing outlive the client: the provider works, and
// bills, whether or not the client stays to read the answer.
const (
	settleTimeout  = 30 * time.Second
	releaseTimeout = 10 * time.Second
)

// Estimate returns the worst-case cost of a call to the model: a prompt of
// as many tokens as the request has bytes (a token is at least one byte;
// 16 more for the tokens a chat template adds) and maxTokens of completion.
func Estimate(m *provider.Model, requestBytes, maxTokens int) gatehouse.Money {
	return m.Cost(int64(requestBytes)+16, int64(maxTokens))
}

// estimate is the worst case of the call with a completion cap.
func (c MeteredCall) estimate(maxTokens int) gatehouse.Money {
	if c.CacheControl {
		return EstimateCaching(c.Model, len(c.Request), maxTokens)
	}
	return Estimate(c.Model, len(c.Request), maxTokens)
}

// EstimateCaching is Estimate for a call that asks for prompt caching
// (cache_control): every prompt token may be written to the cache, at the
// cache write price when it is above the prompt price.
func EstimateCaching(m *provider.Model, requestBytes, maxTokens int) gatehouse.Money {
	prompt := int64(requestBytes) + 16
	u := provider.Usage{Prompt: prompt, Completion: int64(maxTokens)}
	if m.CacheWritePrice != nil && *m.CacheWritePrice > m.PromptPrice {
		u.CacheWrite = prompt
	}
	return m.UsageCost(u)
}

// Reserve checks the model against the guardrails that govern the key,
// chooses the workspace's BYOK keys the call goes with, and reserves the
// call's worst case (as BYOK spend when it goes with one) against the key's
// limit and every budget: the organization's credits, the workspace's
// budgets, the guardrails'. EFORBIDDEN when a guardrail blocks the model, a
// guardrail or workspace budget would be exceeded, or the workspace reserves
// the provider to BYOK keys that cannot serve the call; EPAYMENT when the
// key's limit or the credits would be exceeded; EUNAVAILABLE.
func (m *Meter) Reserve(ctx context.Context, c MeteredCall) (*Metering, error) {
	guardrails, err := m.Usage.GuardrailsForKey(ctx, c.Key)
	if err != nil {
		return nil, err
	}
	if err := gatehouse.CheckModel(guardrails, c.Model.Slug(), c.Provider.ID); err != nil {
		return nil, err
	}
	budgets, err := m.Usage.BudgetsForKey(ctx, c.Key)
	if err != nil {
		return nil, err
	}
	byokKeys, err := m.chooseBYOKKeys(ctx, c)
	if err != nil {
		return nil, err
	}
	byok := c.Provider.BYOK || len(byokKeys) > 0
	mt := &Metering{MaxTokens: c.Model.CompletionCap(c.MaxTokens), BYOKKeys: byokKeys, call: c, started: time.Now()}
	mt.Generation = &gatehouse.Generation{
		ID: gatehouse.NewGenerationID(), OrganizationID: c.Key.OrganizationID, WorkspaceID: c.Key.WorkspaceID, KeyHash: c.Key.Hash,
		Model: c.Model.Slug(), Provider: c.Provider.ID, BYOK: byok, Streamed: c.Stream,
		SessionID: c.SessionID, ExternalUser: c.Key.ExternalUser,
		HTTPReferer: c.Attribution.HTTPReferer, AppTitle: c.Attribution.AppTitle, UserAgent: c.Attribution.UserAgent,
	}
	if c.Attribution.ExternalUser != nil {
		mt.Generation.ExternalUser = c.Attribution.ExternalUser
	}
	mt.Reservation = &gatehouse.Reservation{
		ID: uuid.NewString(), KeyHash: c.Key.Hash, BYOK: byok,
		Budgets: append(slices.Clip(budgets), gatehouse.Budgets(guardrails)...),
		Amount:  c.estimate(mt.MaxTokens),
		// A crash leaves it held until the longest call could have ended.
		ExpiresAt:  m.now().Add(c.Model.CallTimeout(c.Provider) + time.Minute),
		Generation: mt.Generation,
	}
	if m.Leases != nil && m.Accounts == nil {
		alone, err := m.Leases.Admit(ctx, mt.Reservation)
		if err != nil {
			return nil, err
		}
		switch r := mt.Reservation; {
		case alone: // the database wrote its hold
		case c.Stream:
			mt.held = m.Ledger.Hold(r)
		default:
			// A whole answer that comes while its hold is still queued
			// takes it back (Held), and is delivered once its charge is
			// written instead.
			mt.held = m.Ledger.HoldPatiently(r)
			mt.unhold = func() bool { return m.Ledger.Unhold(r) }
		}
		return mt, nil
	}
	if m.Accounts == nil {
		if err := reserveInDB(ctx, m.Usage, m.Ledger, mt.Reservation); err != nil {
			return nil, err
		}
		return mt, nil
	}
	chain, err := m.Usage.Ancestors(ctx, c.Key)
	if err != nil {
		return nil, err
	}
	for _, k := range chain {
		if k != nil {
			mt.Reservation.Chain = append(mt.Reservation.Chain, k.Hash)
		}
	}
	if err := admitAfterWrites(ctx, m.Ledger, func() error { return m.Accounts.Admit(ctx, c.Key, chain, mt.Reservation) }); err != nil {
		return nil, err
	}
	if c.Stream {
		mt.held = m.Ledger.Hold(mt.Reservation)
	} else {
		// A whole answer is delivered only once its charge survives a
		// crash (Settle waits for Ledger.Charge: its journal, or its
		// write), so a crash cannot lose the charge of an answer its
		// client received: it needs no hold, and the ledger writes one
		// row for it instead of a hold and then a settle.
		mt.Reservation.Unheld = true
	}
	return mt, nil
}

// chooseBYOKKeys returns the workspace's own keys the call goes with, in
// the order to try them, or refuses it when the workspace reserves the
// provider or model to keys that cannot serve it.
func (m *Meter) chooseBYOKKeys(ctx context.Context, c MeteredCall) ([]*gatehouse.BYOKKey, error) {
	if m.BYOKKeys == nil {
		return nil, nil
	}
	keys, err := m.BYOKKeys.ProviderBYOKKeys(ctx, c.Key.WorkspaceID, c.Provider.ID)
	if err != nil {
		return nil, err
	}
	return gatehouse.ChooseBYOKKeys(keys, c.Key, c.Provider.ID, c.Model.Slug())
}

// reserveInDB admits r in the database.
func reserveInDB(ctx context.Context, usage gatehouse.UsageService, ledger Ledger, r *gatehouse.Reservation) error {
	return admitAfterWrites(ctx, ledger, func() error { return usage.Reserve(ctx, r) })
}

// admitAfterWrites runs admit, and once more if it refused while settles
// and releases were still being written, once they are: until then their
// holds count at what they reserved (in the database, and in memory:
// Meter.written), which may exceed their costs.
func admitAfterWrites(ctx context.Context, ledger Ledger, admit func() error) error {
	err := admit()
	if code := gatehouse.ErrorCode(err); (code == gatehouse.EPAYMENT || code == gatehouse.EFORBIDDEN) && ledger != nil && ledger.Sync(ctx) == nil {
		err = admit()
	}
	return err
}

// Settle records the call in the ledger at its exact cost from the usage
// the provider reported, capped at the reservation (the excess reported as
// an anomaly), or at the reservation when there is no usable usage (none
// reported, negative counts, or callErr: a stream that broke off, or a
// failure the provider may bill, see Billed; but for an answer too large to
// deliver, whose usage was read in full), and then
// publishes its trace. It runs to the end when ctx is cancelled. With a
// Ledger it returns at once (the ledger writes behind); an error means the
// call was served and is charged what it reserved once its reservation
// expires; but for a reservation without a hold (Reservation.Unheld) Settle
// waits until the charge survives a crash (Ledger.Charge), and an error
// means it may not: the answer must not be delivered.
func (m *Meter) Settle(ctx context.Context, mt *Metering, c provider.Completion, callErr error) error {
	gen, reserved := mt.Generation, mt.Reservation.Amount
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	gen.Status, gen.Cost = gatehouse.GenerationCompleted, reserved
	// Negative counts would credit the key: they count as no usage.
	if c.UsageKnown && usageFinal(callErr) && c.PromptTokens >= 0 && c.CompletionTokens >= 0 {
		gen.PromptTokens, gen.CompletionTokens = c.PromptTokens, c.CompletionTokens
		gen.CacheReadTokens, gen.CacheWriteTokens = c.CacheReadTokens, c.CacheWriteTokens
		cost := mt.call.Model.UsageCost(provider.Usage{Prompt: c.PromptTokens, Completion: c.CompletionTokens,
			CacheRead: c.CacheReadTokens, CacheWrite: c.CacheWriteTokens})
		if cost <= reserved {
			gen.Cost = cost
		} else if m.Anomaly != nil {
			// The provider billed past the cap it was sent: that is its to
			// explain, not the key holder's to pay.
			m.Anomaly(ctx, Anomaly{Kind: AnomalyUsageOverReservation, Generation: gen,
				PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, Cost: cost, Reserved: reserved})
		}
	} else {
		gen.Status = gatehouse.GenerationPartial
	}
	if c.UpstreamID != "" {
		id := gatehouse.StorableText(c.UpstreamID)
		gen.UpstreamID = &id
	}
	if c.FinishReason != "" {
		reason := gatehouse.StorableText(c.FinishReason)
		gen.FinishReason = &reason
	}
	ended := time.Now()
	gen.LatencyMS = ended.Sub(mt.started).Milliseconds()
	gen.GenerationMS = gen.LatencyMS
	if m.KeepContent {
		gen.Content = mt.content(c, callErr)
	}
	if m.Ledger == nil {
		if err := m.Usage.Settle(ctx, mt.Reservation.ID, gen); err != nil {
			return err
		}
	} else {
		r := mt.Reservation
		if r.Unheld {
			// Its charge survives a crash before its answer is delivered
			// (record): the accountant takes its cost at once (a lease,
			// once it is written).
			if m.Accounts != nil {
				m.Accounts.Settle(r, gen.Cost)
			}
			if err := m.record(ctx, r, gen); err != nil {
				return err
			}
		} else {
			cost := gen.Cost
			m.Ledger.Settle(r, gen, m.holdContent(gen, m.written(r, &cost)))
		}
	}
	m.trace(mt, c, ended)
	return nil
}

// usageFinal reports whether the usage of a call that ended with callErr
// is the provider's last word: it is when the call succeeded, or when its
// answer came in full but was too large to deliver. A stream that broke
// off is charged the reservation (the provider may go on working), as is
// any other failure (see Billed).
func usageFinal(callErr error) bool {
	var ue *provider.UpstreamError
	return callErr == nil || errors.As(callErr, &ue) && ue.Kind == provider.UpstreamTooLarge
}

// record settles a reservation that has no hold and waits until its
// charge survives a crash (Ledger.Charge). One that fails to may still be
// written: the call is then charged although its answer is not delivered,
// never the reverse. (The accountant keeps the cost either way, erring on
// the side of the limit.)
func (m *Meter) record(ctx context.Context, r *gatehouse.Reservation, gen *gatehouse.Generation) error {
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	cost := gen.Cost
	return m.Ledger.Charge(ctx, r, gen, m.holdContent(gen, m.written(r, &cost)))
}

// recordTimeout bounds the wait for a charge to be written before its answer
// is delivered.
const recordTimeout = 10 * time.Second

// written returns what hears that the ledger wrote r's settle at cost, or
// its release (cost nil), or failed to. Only then does memory (the
// accountant, or r's lease) replace r's hold with its cost or drop it:
// until the write commits, a crash leaves the hold open in the database,
// to be charged at what it reserved, so admitting against the difference
// could take a key or budget past its limit. A write that failed leaves
// the hold open in the database, and so in memory too (the accountant
// keeps its accounts; a lease counts it until it is dropped, and the
// database on its own after). An unheld reservation's accounts were
// settled at once (its charge is durable first): they may go once it is
// written. An unheld reservation of a lease is a hold of the lease until
// its charge is written, like any other.
func (m *Meter) written(r *gatehouse.Reservation, cost *gatehouse.Money) func(error) {
	switch {
	case r.Unheld && m.Accounts != nil:
		return func(error) { m.Accounts.Written(r) }
	case m.Accounts != nil:
		return func(err error) {
			if err != nil {
				return
			}
			if cost != nil {
				m.Accounts.Settle(r, *cost)
			} else {
				m.Accounts.Release(r)
			}
			m.Accounts.Written(r)
		}
	case m.Leases != nil && r.LeaseID != "":
		return func(err error) { m.Leases.Written(r, cost, err) }
	}
	return nil
}

// Sync waits until every settle and release submitted before it is
// written, so that a read of usage after it counts them.
func (m *Meter) Sync(ctx context.Context) error {
	if m.Ledger == nil {
		return nil
	}
	return m.Ledger.Sync(ctx)
}

// trace publishes a settled call to the observability destinations.
func (m *Meter) trace(mt *Metering, c provider.Completion, ended time.Time) {
	if m.Traces == nil {
		return
	}
	input := mt.call.Messages
	if input == nil {
		var msgs struct {
			Messages json.RawMessage `json:"messages"`
		}
		_ = json.Unmarshal(mt.call.Request, &msgs)
		input = msgs.Messages
	}
	m.Traces.Publish(&gatehouse.TraceEvent{Generation: mt.Generation, KeyName: mt.call.Key.Name, UserID: mt.call.Key.CreatorUserID,
		StartedAt: mt.started, EndedAt: ended, Input: input, Output: c.Output})
}

// Release drops the reservation of a call that the provider never
// answered: it charges nothing. It runs to the end when ctx is cancelled.
// An error leaves the reservation open, to be charged at what it reserved
// once it expires.
func (m *Meter) Release(ctx context.Context, mt *Metering) error {
	if r := mt.Reservation; r.Unheld {
		// Nothing of it was written.
		if m.Accounts != nil {
			m.Accounts.Release(r)
			m.Accounts.Written(r)
		} else if m.Leases != nil {
			m.Leases.Written(r, nil, nil)
		}
		return nil
	}
	if m.Ledger != nil {
		m.Ledger.Release(mt.Reservation, m.written(mt.Reservation, nil))
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	return m.Usage.Release(ctx, mt.Reservation.ID)
}

func (m *Meter) now() time.Time {
	if m.Now == nil {
		return time.Now()
	}
	return m.Now()
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
		return gatehouse.FieldError("reasoning.max_tokens", "must be a whole number of tokens")
	case n >= int64(capTokens):
		return gatehouse.FieldError("reasoning.max_tokens", "%d is not below the completion cap of %d tokens sent with the request (max_tokens): the provider could make room for it past what was reserved", n, capTokens)
	}
	return nil
}
