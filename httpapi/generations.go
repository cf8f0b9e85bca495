package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"gatehouse"
)

// SetContentRetention sets how long the content of generations is kept
// and shown: 0 keeps none (and stores none). Call it before serving; the
// default is gatehouse.DefaultContentRetention.
func (s *Server) SetContentRetention(d time.Duration) {
	s.contentRetention = d
	s.meter.KeepContent = d > 0
}

// generationID reads the id query parameter of the generation routes.
func generationID(r *http.Request) (string, error) {
	if err := singleValues(r.URL.Query(), "id"); err != nil {
		return "", err
	}
	// A Messages answer's id is the generation's with Anthropic's prefix.
	id := strings.TrimPrefix(r.URL.Query().Get("id"), "msg_")
	switch {
	case id == "":
		return "", gatehouse.FieldError("id", "is required: the id of a completion, such as gen-…")
	case !plainText(id):
		return "", gatehouse.FieldError("id", "must be UTF-8 text without NUL characters")
	}
	return id, nil
}

// contentJSON is OpenRouter's GenerationContentData.
type contentJSON struct {
	Error  *contentErrorJSON `json:"error"`
	Input  contentInputJSON  `json:"input"`
	Output contentOutputJSON `json:"output"`
}

type contentInputJSON struct {
	Messages json.RawMessage `json:"messages"`
}

type contentOutputJSON struct {
	Completion *string `json:"completion"`
	Reasoning  *string `json:"reasoning"`
}

// contentErrorJSON is why a charged generation did not complete. The
// stream had started (status 200 reached the client), so no error status
// was returned; only the stream's end was missing.
type contentErrorJSON struct {
	Message        *string    `json:"message"`
	PreviousErrors []struct{} `json:"previous_errors"`
	ProviderName   *string    `json:"provider_name"`
	Raw            *string    `json:"raw"`
	Status         *int       `json:"status"`
}

func toContentJSON(c *gatehouse.GenerationContent) contentJSON {
	out := contentJSON{Input: contentInputJSON{Messages: c.Messages},
		Output: contentOutputJSON{Completion: c.Completion, Reasoning: c.Reasoning}}
	if len(out.Input.Messages) == 0 || string(out.Input.Messages) == "null" {
		out.Input.Messages = json.RawMessage("[]")
	}
	if e := c.Error; e != nil {
		out.Error = &contentErrorJSON{Message: &e.Message, PreviousErrors: []struct{}{}, ProviderName: e.Provider}
	}
	return out
}

// getGenerationContent serves GET /generation/content?id=: the stored
// prompt and completion of a generation. Who may read it is who may read
// the generation (its key, or a management key of its organization); it
// is shown only while the workspace logs I/O (else 403: privacy mode), for
// the content retention.
func (s *Server) getGenerationContent(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := generationID(r)
	if err != nil {
		return err
	}
	s.settled(r.Context())
	// Content that no configured key opens is a 404 whose cause the
	// request's log line shows.
	stored, err := s.store.FindGenerationContent(r.Context(), p.org(), id, gatehouse.ContentCutoff(s.now(), s.contentRetention))
	if err != nil {
		return err
	}
	if !p.key.Management && stored.Generation.KeyHash != p.key.Hash {
		return gatehouse.NotFound("generation", id)
	}
	content, err := stored.Readable(s.contentRetention)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[contentJSON]{toContentJSON(content)})
}

// feedbackRequest is OpenRouter's SubmitGenerationFeedbackRequest.
type feedbackRequest struct {
	GenerationID string                     `json:"generation_id"`
	Category     gatehouse.FeedbackCategory `json:"category"`
	Comment      *string                    `json:"comment" null:"no"`
}

type feedbackResultJSON struct {
	Success bool `json:"success"`
}

// submitFeedback serves POST /generation/feedback: feedback on a
// generation of the organization, recorded and audited.
func (s *Server) submitFeedback(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req feedbackRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	s.settled(r.Context()) // a generation answered just now is in the ledger
	if _, err := s.store.CreateFeedback(r.Context(), p.org(), gatehouse.FeedbackCreate{GenerationID: req.GenerationID,
		Category: req.Category, Comment: req.Comment}); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[feedbackResultJSON]{feedbackResultJSON{Success: true}})
}

// feedbackJSON is a recorded feedback (a Gatehouse extension: OpenRouter's
// API has no way to read feedback back).
type feedbackJSON struct {
	ID           string   `json:"id"`
	GenerationID string   `json:"generation_id"`
	Category     string   `json:"category"`
	Comment      *string  `json:"comment"`
	KeyHash      *string  `json:"key_hash"`
	UserID       *string  `json:"user_id"`
	CreatedAt    jsonTime `json:"created_at"`
}

func toFeedbackJSON(f *gatehouse.Feedback) feedbackJSON {
	var key *string
	if f.KeyHash != "" {
		key = &f.KeyHash
	}
	return feedbackJSON{ID: f.ID, GenerationID: f.GenerationID, Category: string(f.Category), Comment: f.Comment,
		KeyHash: key, UserID: f.UserID, CreatedAt: newJSONTime(f.CreatedAt)}
}

// listFeedback serves GET /generation/feedback?id=: the feedback of a
// generation of the organization, oldest first.
func (s *Server) listFeedback() authHandler {
	return list(func(r *http.Request, p *principal, page gatehouse.Page) ([]*gatehouse.Feedback, int, error) {
		id, err := generationID(r)
		if err != nil {
			return nil, 0, err
		}
		return s.store.FindFeedback(r.Context(), p.org(), id, page)
	}, toFeedbackJSON)
}
