package gatehouse

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// What the ledger keeps of a generation besides its cost: who called
// (attribution, from the request's headers and body), what was said (its
// content, only where the workspace logs it, sealed at rest and kept for a
// limited time) and what people thought of it (feedback).

// Attribution is what a request says about who made it: the application
// (its HTTP-Referer, and its title from X-Title or X-OpenRouter-Title), the
// client software (User-Agent), and the application's end user (the
// body's user, else the key's external user).
type Attribution struct {
	HTTPReferer  *string
	AppTitle     *string
	UserAgent    *string
	ExternalUser *string
}

// Bounds of the attribution kept: longer header values are cut (a request
// is never refused for its headers); the body's user is refused beyond
// MaxExternalUserLength.
const (
	MaxRefererLength      = 2048
	MaxAppTitleLength     = 200
	MaxUserAgentLength    = 512
	MaxExternalUserLength = MaxNameLength
)

// AttributionHeader returns a header's value as attribution: nil when it is
// empty, else made storable (valid UTF-8, no NUL) and cut to max bytes on a
// character boundary.
func AttributionHeader(value string, max int) *string {
	v := strings.TrimSpace(value)
	if v == "" {
		return nil
	}
	v = StorableText(v)
	if len(v) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(v[cut]) {
			cut--
		}
		v = v[:cut]
	}
	return &v
}

// RefererOrigin returns the origin (scheme://host) of an HTTP-Referer,
// which names the organization's application as the origin of its OAuth
// callback URL does; false when it is not an absolute http(s) URL.
func RefererOrigin(referer string) (string, bool) {
	u, err := url.Parse(referer)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", false
	}
	return CallbackOrigin(referer), true
}

// CheckExternalUser checks the body's user of a model request.
func CheckExternalUser(user string) error {
	switch {
	case strings.TrimSpace(user) == "":
		return FieldError("user", "must not be empty: leave it out, or give your end user's id")
	case utf8.RuneCountInString(user) > MaxExternalUserLength:
		return FieldError("user", "must be at most %d characters", MaxExternalUserLength)
	}
	return CheckDisplayText("user", user, false)
}

// ProviderResponse is one attempt of a call at an endpoint, as the
// generation keeps it (OpenRouter's provider_responses): the provider, the
// endpoint's address (provider/id), the provider's status (200 for the
// answer; 502 when it gave none), how long the attempt took, the
// provider's id of its answer, and whether it went with a BYOK key.
type ProviderResponse struct {
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	Status     int    `json:"status"`
	LatencyMS  int64  `json:"latency_ms"`
	UpstreamID string `json:"id,omitempty"`
	BYOK       bool   `json:"is_byok"`
}

// GenerationContent is what a generation said: its prompt (the request's
// messages), its completion and reasoning, and why it failed, if it did.
// It is stored only where the workspace logs I/O, sealed with the secret
// box, and kept for the content retention.
type GenerationContent struct {
	Messages   json.RawMessage  `json:"messages"` // a JSON array, as the client sent it
	Completion *string          `json:"completion"`
	Reasoning  *string          `json:"reasoning"`
	Error      *GenerationError `json:"error"`
}

// GenerationError is why a generation that was charged did not complete:
// a stream that broke off before the provider finished.
type GenerationError struct {
	Message  string  `json:"message"`
	Provider *string `json:"provider"`
}

// Size is the memory the content takes while it waits to be written.
func (c *GenerationContent) Size() int64 {
	n := len(c.Messages)
	for _, s := range []*string{c.Completion, c.Reasoning} {
		if s != nil {
			n += len(*s)
		}
	}
	return int64(n)
}

// DefaultContentRetention is how long the content of generations is kept
// unless configured otherwise.
const DefaultContentRetention = 30 * 24 * time.Hour

// ContentCutoff returns the creation time before which content is no
// longer kept at now: content made at or after it is readable.
func ContentCutoff(now time.Time, retention time.Duration) time.Time {
	return now.Add(-retention)
}

// LogsIO reports whether the prompt and completion of the generation id
// are logged under w's I/O logging (is_observability_io_logging_enabled, at
// io_logging_sampling_rate): kept as the generation's content, and sent to
// the workspace's observability destinations. Sampling is a hash of the
// generation id, so the store and every instance's deliveries decide alike.
func (w *Workspace) LogsIO(generationID string) bool {
	if !w.IsObservabilityIOLoggingEnabled {
		return false
	}
	return IOSampled(generationID, w.IOLoggingSamplingRate)
}

// IOSampled reports whether a generation falls within an I/O logging
// sampling rate: the top 53 bits of a SHA-256 of "io:" and its id, mapped to
// [0, 1), are below rate. (The prefix keeps it apart from the destinations'
// own sampling, which hashes the bare id or session.)
func IOSampled(generationID string, rate float64) bool {
	if rate >= 1 {
		return true
	}
	sum := sha256.Sum256([]byte("io:" + generationID))
	return float64(binary.BigEndian.Uint64(sum[:8])>>11)/(1<<53) < rate
}

// StoredContent is a generation's content as the store has it: the
// content (nil when none was stored, or it has passed the cutoff), and
// whether its workspace logs I/O now.
type StoredContent struct {
	Generation *Generation
	Content    *GenerationContent
	// Logged is whether the generation's workspace logs I/O now (its
	// is_observability_io_logging_enabled): when it does not, the
	// workspace is in privacy mode and no content is shown.
	Logged bool
}

// Readable returns the content that may be shown, or why none may:
// EFORBIDDEN while the workspace is in privacy mode (whatever was stored
// before), ENOTFOUND when none is kept.
func (s *StoredContent) Readable(retention time.Duration) (*GenerationContent, error) {
	if !s.Logged {
		return nil, &Error{Code: EFORBIDDEN,
			Message:  "the content of generations of this workspace is private: turn its I/O logging on (is_observability_io_logging_enabled) to store and read prompts and completions",
			Metadata: map[string]any{"id": s.Generation.ID, "workspace_id": s.Generation.WorkspaceID}}
	}
	if s.Content == nil {
		return nil, &Error{Code: ENOTFOUND,
			Message: "no content is stored for this generation: content is kept for " + FormatRetention(retention) +
				", for requests made while the workspace logged I/O (at its io_logging_sampling_rate)",
			Metadata: map[string]any{"id": s.Generation.ID}}
	}
	return s.Content, nil
}

// FormatRetention renders a retention for people: whole days as "30 days".
func FormatRetention(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d <= 0:
		return "no time"
	case d == day:
		return "1 day"
	case d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + " days"
	}
	return d.String()
}

// FeedbackCategory is the kind of a generation's feedback.
type FeedbackCategory string

// The feedback categories of OpenRouter's API.
const (
	FeedbackLatency           FeedbackCategory = "latency"
	FeedbackIncoherence       FeedbackCategory = "incoherence"
	FeedbackIncorrectResponse FeedbackCategory = "incorrect_response"
	FeedbackFormatting        FeedbackCategory = "formatting"
	FeedbackBilling           FeedbackCategory = "billing"
	FeedbackAPIError          FeedbackCategory = "api_error"
	FeedbackOther             FeedbackCategory = "other"
)

// FeedbackCategories lists the categories, in the API's order.
var FeedbackCategories = []FeedbackCategory{FeedbackLatency, FeedbackIncoherence, FeedbackIncorrectResponse,
	FeedbackFormatting, FeedbackBilling, FeedbackAPIError, FeedbackOther}

// MaxFeedbackCommentLength bounds a feedback's comment, in characters.
const MaxFeedbackCommentLength = 4000

// FeedbackCreate is feedback submitted on a generation.
type FeedbackCreate struct {
	GenerationID string
	Category     FeedbackCategory
	Comment      *string
}

// Validate checks the fields that need no lookup.
func (f *FeedbackCreate) Validate() error {
	if strings.TrimSpace(f.GenerationID) == "" {
		return FieldError("generation_id", "is required: the id of a generation, such as gen-…")
	}
	if !plainText(f.GenerationID) {
		return FieldError("generation_id", "must be UTF-8 text without NUL characters")
	}
	valid := false
	for _, c := range FeedbackCategories {
		valid = valid || f.Category == c
	}
	if !valid {
		return FieldError("category", "must be one of latency, incoherence, incorrect_response, formatting, billing, api_error or other")
	}
	if c := f.Comment; c != nil {
		if utf8.RuneCountInString(*c) > MaxFeedbackCommentLength {
			return FieldError("comment", "must be at most %d characters", MaxFeedbackCommentLength)
		}
		if err := CheckDisplayText("comment", *c, true); err != nil {
			return err
		}
	}
	return nil
}

// plainText reports whether s is valid UTF-8 without NUL, as every engine
// stores text.
func plainText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// Feedback is feedback recorded on a generation.
type Feedback struct {
	ID           string
	GenerationID string
	Category     FeedbackCategory
	Comment      *string
	// Who submitted it: the management key and its user.
	KeyHash   string
	UserID    *string
	CreatedAt time.Time
}

// GenerationService reads what the ledger keeps of generations besides
// their cost: content and feedback.
type GenerationService interface {
	// FindGenerationContent returns a generation of the organization with
	// its content, when stored at or after cutoff. ENOTFOUND for an unknown
	// generation.
	FindGenerationContent(ctx context.Context, orgID, id string, cutoff time.Time) (*StoredContent, error)
	// CreateFeedback records feedback on a generation of the organization,
	// and audits it. EINVALID, ENOTFOUND for an unknown generation.
	CreateFeedback(ctx context.Context, orgID string, f FeedbackCreate) (*Feedback, error)
	// FindFeedback lists the feedback of a generation of the organization,
	// oldest first, with its total. ENOTFOUND for an unknown generation.
	FindFeedback(ctx context.Context, orgID, generationID string, page Page) ([]*Feedback, int, error)
	// PruneGenerationContent deletes up to limit stored contents made
	// before before, and returns how many it deleted.
	PruneGenerationContent(ctx context.Context, before time.Time, limit int) (int, error)
	// ResealGenerationContent re-encrypts up to limit stored contents after
	// the generation id after (in id order) with the current key. A content
	// that no key opens is left as it is and counted (Unreadable); a
	// failure re-seals nothing of the batch.
	ResealGenerationContent(ctx context.Context, after string, limit int) (ContentResealed, error)
}

// ContentResealed is what a batch of ResealGenerationContent did: the
// contents it re-sealed, those no key opens (left as they were), and the
// last generation id it read, for the next batch.
type ContentResealed struct {
	Resealed, Unreadable int
	Last                 string
}

// PruneContent deletes the content made before cutoff, batch at a time,
// until none is left or ctx ends, and returns how many it deleted. Small
// batches keep each write short, so that the ledger's writes pass between
// them.
func PruneContent(ctx context.Context, s GenerationService, cutoff time.Time, batch int) (int, error) {
	total := 0
	for {
		n, err := s.PruneGenerationContent(ctx, cutoff, batch)
		total += n
		if err != nil || n < batch || ctx.Err() != nil {
			return total, err
		}
	}
}

// ResealContent re-encrypts every stored content with the current key,
// batch at a time, and returns how many it re-sealed and how many no key
// opens (left as they were). On an error, what it has not reached is still
// sealed with the keys it was.
func ResealContent(ctx context.Context, s GenerationService, batch int) (ContentResealed, error) {
	var total ContentResealed
	for {
		r, err := s.ResealGenerationContent(ctx, total.Last, batch)
		total.Resealed += r.Resealed
		total.Unreadable += r.Unreadable
		if err != nil || r.Resealed+r.Unreadable < batch {
			return total, err
		}
		total.Last = r.Last
	}
}

// ParseRetention reads a content retention: a number of days ("30d"), a
// Go duration ("12h", "90m"), or 0 to keep no content.
func ParseRetention(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n < 0 || n > 100*365 {
			return 0, errors.New("want a number of days such as 30d, a duration such as 12h, or 0 to keep no content")
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, errors.New("want a number of days such as 30d, a duration such as 12h, or 0 to keep no content")
	}
	return d, nil
}
