package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"time"

	"gatehouse"
	"gatehouse/internal/jsonobj"
	"gatehouse/meter"
	"gatehouse/provider"
)

// The metering sequence of a model call, the same for every endpoint that
// forwards one (chat completions, the Responses API, embeddings, presets):
// resolve the endpoints that may serve it, and for each in turn until one
// answers, reserve its worst case, make the call, wait until the
// reservation is durable before anything reaches the client, and settle
// the exact cost and send the answer; a failure that another endpoint may
// not share (a 429, a 5xx, no connection, no answer in time) before
// anything reached the client falls back to the next endpoint, charged
// when the provider may bill it (provider.Billed) and released otherwise.

// modelCall is one call of a model endpoint, read and checked: what
// routing and metering need, and how to make the call at one endpoint.
type modelCall struct {
	// metered is what metering needs; its Model and Provider are set for
	// each attempt.
	metered meter.MeteredCall
	// route is what routing needs; its Guardrails and DefaultSort are the
	// key's, read by serveModel.
	route provider.Request
	// attempt prepares the call at one endpoint: it refuses an endpoint
	// the request cannot go to (such as a reasoning budget past its cap),
	// and returns the answer's form and how to send it.
	attempt func(e provider.Endpoint) (attempt, error)
	// explain, when set, adds to a refusal of the request what made it
	// (a preset).
	explain func(error) error
}

// attempt is a call prepared for one endpoint.
type attempt struct {
	form answerForm
	// send makes the call once its worst case is reserved (m), writing a
	// stream to sw.
	send func(ctx context.Context, m *meter.Metering, sw *streamWriter) (provider.Completion, error)
}

// answerForm is what differs between the endpoints in sending an answer
// with its cost.
type answerForm interface {
	// withCost sets the usage of a whole answer to what was metered.
	withCost(answer map[string]json.RawMessage, g *gatehouse.Generation)
	// lastEvent renders a stream's last event with the cost as metered:
	// final, the provider's (held back), or when it is nil one of
	// Gatehouse's; callErr, when not nil, is why the stream broke off.
	lastEvent(final map[string]json.RawMessage, g *gatehouse.Generation, callErr error) string
}

// serveModel routes, meters and makes a call (see above). The answer, and
// the generation, say which provider and model served; the generation
// keeps every attempt (provider_responses).
func (s *Server) serveModel(w http.ResponseWriter, r *http.Request, c modelCall) error {
	explain := c.explain
	if explain == nil {
		explain = func(err error) error { return err }
	}
	eps, err := s.resolve(r.Context(), c.metered.Key, c.route)
	if err != nil {
		return explain(err)
	}
	sw := &streamWriter{w: w}
	var tried []gatehouse.ProviderResponse
	var lastErr error
	for i, e := range eps {
		a, err := c.attempt(e)
		if err != nil {
			if i == 0 {
				return explain(err)
			}
			continue // the request cannot go there: the next
		}
		if !s.router.Health.Begin(e.Address()) {
			continue // its half-open probe is out
		}
		metered := c.metered
		metered.Model, metered.Provider = e.Model, e.Provider
		m, err := s.meter.Reserve(r.Context(), metered)
		if err != nil {
			s.router.Health.Release(e.Address())
			if lastErr == nil {
				return err
			}
			break // the key cannot afford the next endpoint: the last failure stands
		}
		m.Generation.ProviderResponses = slices.Clone(tried)
		done, err, more := s.try(w, r, m, e, a, sw)
		tried = append(tried, m.Generation.ProviderResponses[len(m.Generation.ProviderResponses)-1])
		if !more {
			s.router.Served(c.route.Conversation, e)
			return err
		}
		lastErr = s.failed(r, m, done, err)
		s.logger.Info("the provider failed the call; trying the next endpoint", "request_id", gatehouse.RequestIDFrom(r.Context()),
			"generation_id", m.Generation.ID, "endpoint", e.Address(), "error", err.Error())
	}
	if lastErr == nil {
		return gatehouse.Errorf(gatehouse.EUNAVAILABLE, "every endpoint that may serve the request is being probed after failures; retry shortly")
	}
	return lastErr
}

// resolve returns the endpoints that may serve a call (provider.Router),
// narrowed by the key's guardrails and ordered by its workspace's default
// sort.
func (s *Server) resolve(ctx context.Context, key *gatehouse.Key, route provider.Request) ([]provider.Endpoint, error) {
	var err error
	if route.Guardrails, err = s.store.GuardrailsForKey(ctx, key); err != nil {
		return nil, err
	}
	if route.DefaultSort, err = s.store.DefaultProviderSort(ctx, key); err != nil {
		return nil, err
	}
	return s.router.Resolve(route)
}

// try makes the call of one attempt at endpoint e, whose worst case is
// reserved (m), and records its outcome (the endpoint's health, the
// generation's provider_responses). When the call succeeded, or failed in
// a way another endpoint would not mend (or after its answer began), it
// meters it and answers the client (more is false). Otherwise the call
// fell to the endpoint and may go to the next one (more is true): done
// and err are for the caller to charge or release (failed).
func (s *Server) try(w http.ResponseWriter, r *http.Request, m *meter.Metering, e provider.Endpoint, a attempt, sw *streamWriter) (done provider.Completion, err error, more bool) {
	sw.held = func() error { return m.Held(r.Context()) }
	// A whole answer is paid for even if the client leaves before it comes:
	// the provider works (and bills) either way, so the call outlives the
	// client, bounded by the provider's timeout. A stream stops with its
	// client, and is charged what was reserved unless its usage arrived.
	callCtx := r.Context()
	if !m.Generation.Streamed {
		callCtx = context.WithoutCancel(callCtx)
	}
	start := time.Now()
	done, err = a.send(callCtx, m, sw)
	s.recordAttempt(r, m, e, done, err, start, sw)
	if err == nil && !sw.started {
		// An answer reaches its client only once its reservation is
		// durable (or, without a hold, once its charge is: Settle waits
		// for that): a crash after that cannot lose its charge.
		heldCtx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), heldTimeout)
		err = m.Held(heldCtx)
		cancel()
	}
	if sw.heldErr != nil {
		err = sw.heldErr
	}
	if err != nil && !sw.started {
		if fallsBack(r, err) {
			return done, err, true
		}
		return done, s.failed(r, m, done, err), false
	}
	gone := !sw.started && r.Context().Err() != nil
	if gone {
		s.logger.Info("client cancelled before the answer; the answer was metered",
			"request_id", gatehouse.RequestIDFrom(r.Context()), "generation_id", m.Generation.ID)
		if rec, ok := w.(*recorder); ok {
			rec.status, rec.wrote = statusClientClosed, true
		}
	}
	return done, s.settleAndSend(w, r, m, a.form, done, err, sw, gone), false
}

// fallsBack reports whether a call that failed before anything reached
// its client may go to the next endpoint: the provider answered 429 or
// 5xx, could not be reached, or did not begin its answer in time; and the
// client is still there.
func fallsBack(r *http.Request, err error) bool {
	var ue *provider.UpstreamError
	if r.Context().Err() != nil || !errors.As(err, &ue) {
		return false
	}
	switch ue.Kind {
	case provider.UpstreamRejected:
		return ue.ProviderStatus == http.StatusTooManyRequests || ue.ProviderStatus >= 500
	case provider.UpstreamUnreachable:
		return true
	case provider.UpstreamTimeout:
		return !ue.Answered
	}
	return false
}

// recordAttempt records what one attempt came to: in the endpoint's
// health (a call its client cancelled says nothing of the endpoint), and
// in the generation's provider_responses.
func (s *Server) recordAttempt(r *http.Request, m *meter.Metering, e provider.Endpoint, done provider.Completion, err error, start time.Time, sw *streamWriter) {
	total := time.Since(start)
	o := provider.Outcome{Class: provider.OK, Total: total, FirstByte: total, Tokens: done.CompletionTokens}
	if !sw.firstByte.IsZero() {
		o.FirstByte = sw.firstByte.Sub(start)
	}
	status := http.StatusOK
	var ue *provider.UpstreamError
	if err != nil {
		o.Class, status = provider.BadAnswer, http.StatusBadGateway
		if errors.As(err, &ue) {
			o.Class, o.RetryAfter, status = outcomeClass(ue), ue.RetryAfter, ue.ProviderStatus
		}
	}
	switch {
	case notSent(err):
		// Refused before it was sent, as the provider's API cannot take
		// it (a parameter its type does not honour): a client's request
		// says nothing of the endpoint, which stays as healthy as it was.
		status = http.StatusBadRequest
		s.router.Health.Release(e.Address())
	case err != nil && r.Context().Err() != nil && !sw.started:
		s.router.Health.Release(e.Address())
		s.metrics.endpointCall(e, o)
	default:
		s.router.Health.Record(e.Address(), o)
		s.metrics.endpointCall(e, o)
	}
	m.Generation.ProviderResponses = append(m.Generation.ProviderResponses, gatehouse.ProviderResponse{
		Provider: e.Provider.ID, Model: e.Address(), Status: status, LatencyMS: total.Milliseconds(),
		UpstreamID: done.UpstreamID, BYOK: m.Generation.BYOK})
}

// notSent reports whether a call failed before it was sent: its
// translation into the provider's API refused it (gateway's dialects
// return a *gatehouse.Error, EINVALID naming the field, then; what fails
// once the request is sent is a *provider.UpstreamError or a failure to
// read the answer).
func notSent(err error) bool {
	var ge *gatehouse.Error
	var ue *provider.UpstreamError
	return err != nil && !errors.As(err, &ue) && errors.As(err, &ge) && ge.Code == gatehouse.EINVALID
}

// outcomeClass sorts a provider's failure for its endpoint's health.
func outcomeClass(ue *provider.UpstreamError) provider.Class {
	switch ue.Kind {
	case provider.UpstreamRejected:
		switch {
		case ue.ProviderStatus == http.StatusTooManyRequests:
			return provider.RateLimited
		case ue.ProviderStatus >= 500:
			return provider.ServerError
		}
		return provider.Refused
	case provider.UpstreamUnreachable:
		return provider.Unreachable
	case provider.UpstreamTimeout:
		return provider.TimedOut
	}
	return provider.BadAnswer
}

// failed meters a call that failed before its answer reached the client,
// and returns the error to answer it with. A failure the provider may bill
// (provider.Billed: it received the request, and did not refuse it) is
// charged: the usage its answer reported where it could be read in full,
// else what was reserved; the error then says what was charged. Any other
// failure releases the reservation: nothing is charged.
func (s *Server) failed(r *http.Request, m *meter.Metering, done provider.Completion, err error) error {
	if !provider.Billed(err) {
		if rerr := s.meter.Release(r.Context(), m); rerr != nil {
			s.logger.Warn("release failed; the reservation stays open and is charged what it reserved when it expires", "reservation_id", m.Reservation.ID, "error", rerr.Error())
		}
		return err
	}
	gen := m.Generation
	charged := m.Reservation.Amount
	if serr := s.meter.Settle(r.Context(), m, done, err); serr != nil {
		s.logger.Error("settle failed: the call failed after the provider received it, and is charged what it reserved when its reservation expires",
			"request_id", gatehouse.RequestIDFrom(r.Context()), "generation_id", gen.ID, "error", serr.Error())
	} else {
		charged = gen.Cost
	}
	s.logger.Info("the call failed after the provider received it: charged", "request_id", gatehouse.RequestIDFrom(r.Context()),
		"generation_id", gen.ID, "cost", charged.String(), "error", err.Error())
	var ue *provider.UpstreamError
	errors.As(err, &ue) // Billed says it is one
	ue.Charged, ue.GenerationID = &charged, gen.ID
	return err
}

// settleAndSend meters a call that was answered (callErr: a stream that
// broke off) and sends what remains of its answer with the cost as
// metered: the whole answer, or a stream's last event (the provider's,
// held back until now, or one of Gatehouse's) and [DONE] when the provider
// sent one. Nothing is sent to a client that left before a whole answer.
func (s *Server) settleAndSend(w http.ResponseWriter, r *http.Request, m *meter.Metering, form answerForm,
	done provider.Completion, callErr error, sw *streamWriter, gone bool) error {
	gen := m.Generation
	settleErr := s.meter.Settle(r.Context(), m, done, callErr)
	if settleErr != nil && m.Reservation.Unheld {
		return settleErr // its charge is not recorded: the answer is not delivered
	}
	charged := *gen // as settled: tokens and cost
	if settleErr != nil {
		s.logger.Error("settle failed: the request was served, and is charged what it reserved when its reservation expires",
			"request_id", gatehouse.RequestIDFrom(r.Context()), "generation_id", gen.ID, "error", settleErr.Error())
		charged.Cost = m.Reservation.Amount
	}
	switch {
	case gone:
		return nil
	case !sw.started:
		final := done.Final
		if final == nil {
			final = map[string]json.RawMessage{} // never: a whole answer is read whole
		}
		form.withCost(final, &charged)
		body := jsonobj.Marshal(final)
		return writeRaw(w, http.StatusOK, body)
	}
	_, _ = io.WriteString(w, form.lastEvent(done.Final, &charged, callErr))
	if done.Done {
		// Held back until now, so a client that stops at [DONE] reads its usage.
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}
	sw.Flush()
	return nil
}

// forward makes a call with the provider's own key, or with the
// workspace's BYOK keys that the metering chose (see withKeys); send is
// the upstream's method for the endpoint. A stream goes to out: sw, or a
// translation written to sw.
func (s *Server) forward(ctx context.Context, m *meter.Metering, call provider.CompletionCall, sw *streamWriter, out provider.StreamWriter,
	send func(context.Context, provider.CompletionCall, provider.StreamWriter) (provider.Completion, error)) (provider.Completion, error) {
	return s.withKeys(ctx, m, provider.Endpoint{Provider: call.Provider, Model: call.Model}, func(ctx context.Context, key gatehouse.Secret) (provider.Completion, error) {
		call.APIKey = key
		return send(ctx, call, out)
	}, func() bool { return sw.started })
}

// withKeys makes a call with the provider's own key (key ""), or with the
// workspace's BYOK keys that the metering chose, one after the other while
// the provider refuses the key it was sent (and nothing has reached the
// client: started), all within the provider's timeout.
func (s *Server) withKeys(ctx context.Context, m *meter.Metering, e provider.Endpoint,
	call func(context.Context, gatehouse.Secret) (provider.Completion, error), started func() bool) (provider.Completion, error) {
	if len(m.BYOKKeys) == 0 {
		return call(ctx, "")
	}
	ctx, cancel := context.WithTimeout(ctx, e.Model.CallTimeout(e.Provider))
	defer cancel()
	for i := 0; ; i++ {
		done, err := call(ctx, m.BYOKKeys[i].Key)
		if i+1 == len(m.BYOKKeys) || started() || !provider.BYOKKeyRefused(err) {
			return done, err
		}
		s.logger.Info("the provider refused a BYOK key; trying the workspace's next one",
			"request_id", gatehouse.RequestIDFrom(ctx), "generation_id", m.Generation.ID, "provider", e.Provider.ID,
			"byok_key_id", m.BYOKKeys[i].ID, "error", err.Error())
	}
}

// settled waits (briefly) until the settles written behind the request
// path are in the database, so that a read of usage or of the ledger
// counts every call answered before it. If the database is too slow, the
// read goes ahead and shows what it has.
func (s *Server) settled(ctx context.Context) {
	_ = s.meter.Sync(ctx) // bounded by the ledger; immediate when nothing is pending
}

// heldTimeout bounds the wait for a reservation admitted in memory to be
// written before its answer is delivered.
const heldTimeout = 10 * time.Second

// statusClientClosed is the status logged for a request whose client left
// before its answer (nginx's 499); it is never sent.
const statusClientClosed = 499

// streamWriter sends a streamed answer: event-stream headers first, then
// the events, flushed one by one.
type streamWriter struct {
	w       http.ResponseWriter
	started bool
	// held waits until the reservation is durable: the first event goes
	// out only then. heldErr is why it is not; the stream is not sent.
	held    func() error
	heldErr error
	// firstByte is when the provider's stream began.
	firstByte time.Time
}

func (s *streamWriter) Start() {
	s.firstByte = time.Now()
	if s.heldErr = s.held(); s.heldErr != nil {
		return
	}
	s.w.Header().Set("Content-Type", "text/event-stream")
	s.w.Header().Set("Cache-Control", "no-cache")
	s.w.Header().Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	s.started = true
}

func (s *streamWriter) Write(b []byte) (int, error) {
	if s.heldErr != nil {
		return 0, s.heldErr
	}
	return s.w.Write(b)
}

func (s *streamWriter) Flush() { _ = http.NewResponseController(s.w).Flush() }

// providerAnomaly counts and logs a provider's answer that was not
// charged in full: the key holder paid the reservation, the provider has
// the excess to explain.
func (s *Server) providerAnomaly(ctx context.Context, a meter.Anomaly) {
	g := a.Generation
	s.metrics.anomalies.WithLabelValues(g.Provider, a.Kind).Inc()
	s.logger.Warn("provider anomaly: reported usage costs more than was reserved; charged the reservation",
		"request_id", gatehouse.RequestIDFrom(ctx), "generation_id", g.ID, "provider", g.Provider, "model", g.Model,
		"prompt_tokens", a.PromptTokens, "completion_tokens", a.CompletionTokens,
		"cost", a.Cost.String(), "reserved", a.Reserved.String())
}

// writeRaw writes a JSON body as is.
func writeRaw(w http.ResponseWriter, status int, body []byte) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err := w.Write(body)
	return err
}
