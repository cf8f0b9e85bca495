package meter

import (
	"gatehouse"
	"testing"
)

// TestMeterContentBound: content waiting for the ledger is bounded; past
// the bound a call is recorded without it, and written content frees room.
func TestMeterContentBound(t *testing.T) {
	m := &Meter{KeepContent: true}
	big := string(make([]byte, maxPendingContent/2+1))
	gen := func() *gatehouse.Generation {
		return &gatehouse.Generation{Content: &gatehouse.GenerationContent{Completion: &big}}
	}
	first := gen()
	done := m.holdContent(first, nil)
	if first.Content == nil {
		t.Fatal("the first content was dropped")
	}
	second := gen()
	m.holdContent(second, nil)
	if second.Content != nil {
		t.Fatal("content past the bound was kept")
	}
	done(nil) // the first is written
	third := gen()
	var heard bool
	m.holdContent(third, func(error) { heard = true })(nil)
	if third.Content == nil || !heard {
		t.Errorf("content after room was freed: kept %t, result heard %t", third.Content != nil, heard)
	}
	if m.pending.Load() != 0 {
		t.Errorf("pending %d bytes after everything was written", m.pending.Load())
	}
}
