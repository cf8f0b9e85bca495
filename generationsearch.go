package gatehouse

import (
	"strconv"
	"strings"
	"time"
)

// The console lists the ledger call by call, newest first, in ledgers of
// millions of calls: like the keys, a page ends with a cursor where the
// next one starts, and nothing is counted or skipped.

// GenerationSearch selects one page of an organization's ledger, newest
// first (by creation, then id).
type GenerationSearch struct {
	// KeyHash keeps the calls of one key.
	KeyHash string
	// Model keeps the calls of one model (its slug, provider/model).
	Model string
	// CreatorUserID keeps the calls of the keys this member created (and
	// that still exist): what a member may see.
	CreatorUserID *string
	// Since and Until bound the calls' creation: [Since, Until).
	Since, Until *time.Time
	// After is where the page starts: the cursor of the previous page.
	After *GenerationCursor
	// Limit is the page's size: 1..MaxPageSize, default DefaultPageSize.
	Limit int
}

// GenerationCursor is the position after the last call of a page.
type GenerationCursor struct {
	CreatedAt time.Time
	ID        string
}

// GenerationPage is a page of a GenerationSearch; Next is nil on the last.
type GenerationPage struct {
	Generations []*Generation
	Next        *GenerationCursor
}

// Validate checks the search and sets its default size.
func (s *GenerationSearch) Validate() error {
	switch {
	case s.Limit == 0:
		s.Limit = DefaultPageSize
	case s.Limit < 0 || s.Limit > MaxPageSize:
		return FieldError("limit", "must be from 1 to %d", MaxPageSize)
	}
	if s.KeyHash != "" && !IsKeyHash(s.KeyHash) {
		return FieldError("key", "must be a key hash (64 lowercase hex characters)")
	}
	if !IsPlainText(s.Model) {
		return FieldError("model", "must be UTF-8 text without NUL characters")
	}
	if len(s.Model) > MaxModelSlugLength {
		return FieldError("model", "must be a model slug of at most %d characters", MaxModelSlugLength)
	}
	if s.Since != nil && s.Until != nil && !s.Since.Before(*s.Until) {
		return FieldError("until", "must be after the start of the range")
	}
	return nil
}

// String encodes the cursor for a URL: milliseconds and the call's id.
func (c *GenerationCursor) String() string {
	return strconv.FormatInt(c.CreatedAt.UnixMilli(), 10) + "." + c.ID
}

// ParseGenerationCursor decodes a cursor that String encoded. EINVALID.
func ParseGenerationCursor(s string) (*GenerationCursor, error) {
	msPart, id, ok := strings.Cut(s, ".")
	ms, err := strconv.ParseInt(msPart, 10, 64)
	if !ok || err != nil || id == "" || len(id) > 200 {
		return nil, FieldError("after", "is not a cursor of the activity: start again from the first page")
	}
	return &GenerationCursor{CreatedAt: time.UnixMilli(ms).UTC(), ID: id}, nil
}
