package meter

import (
	"context"
	"errors"
	"gatehouse"
	"gatehouse/provider"
)

// maxPendingContent bounds the bytes of content waiting for the ledger:
// while the database is slow or down, calls are recorded without their
// content rather than hold it all in memory.
const maxPendingContent = 64 << 20

// holdContent counts gen's content as waiting for the ledger until done
// hears that it was written, and returns what the ledger must call; past
// maxPendingContent it drops the content instead.
func (m *Meter) holdContent(gen *gatehouse.Generation, done func(error)) func(error) {
	if gen.Content == nil {
		return done
	}
	n := gen.Content.Size()
	if m.pending.Add(n) > maxPendingContent {
		m.pending.Add(-n)
		gen.Content = nil
		return done
	}
	return func(err error) {
		m.pending.Add(-n)
		if done != nil {
			done(err)
		}
	}
}

// content returns what the call said, to keep with its generation: its
// messages, its completion and reasoning, and why it broke off.
func (mt *Metering) content(c provider.Completion, callErr error) *gatehouse.GenerationContent {
	gc := &gatehouse.GenerationContent{Messages: mt.call.Messages, Completion: storableOrNil(c.Output),
		Reasoning: storableOrNil(c.Reasoning)}
	if callErr != nil {
		prov := mt.call.Provider.ID
		gc.Error = &gatehouse.GenerationError{Message: brokenOff(callErr), Provider: &prov}
	}
	return gc
}

// storableOrNil returns s made storable, or nil when it is empty.
func storableOrNil(s string) *string {
	if s == "" {
		return nil
	}
	v := gatehouse.StorableText(s)
	return &v
}

// brokenOff says, for the content kept, why an answer that was charged
// did not complete; never with internal detail.
func brokenOff(err error) string {
	var ue *provider.UpstreamError
	switch {
	case errors.Is(err, context.Canceled):
		return "the client disconnected before the answer was complete"
	case errors.Is(err, context.DeadlineExceeded):
		return "the provider did not finish the answer within its timeout"
	case errors.As(err, &ue):
		return ue.Message
	}
	return "the provider's stream broke off before the answer was complete"
}
