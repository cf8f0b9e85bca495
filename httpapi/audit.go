package httpapi

import (
	"net/http"
	"time"

	"gatehouse"
)

// auditActorJSON is who made a change: the key and its user, a member
// signed in to the console (no key), or what acted when neither did
// (system: first_start, key_exchange, visitor).
type auditActorJSON struct {
	KeyHash *string `json:"key_hash"` // null for a member signed in to the web console
	UserID  *string `json:"user_id"`
	System  *string `json:"system"`
}

type auditEntryJSON struct {
	ID           string          `json:"id"`
	At           jsonTime        `json:"at"`
	Actor        *auditActorJSON `json:"actor"` // null for changes made from the command line
	Operation    string          `json:"operation"`
	ResourceType string          `json:"resource_type"`
	ResourceIDs  []string        `json:"resource_ids"`
	Details      map[string]any  `json:"details"`
	Result       string          `json:"result"`
	RequestID    *string         `json:"request_id"`
	// ClientRequestID is the X-Request-Id the client sent, if any.
	ClientRequestID *string `json:"client_request_id"`
}

func toAuditEntryJSON(e *gatehouse.AuditEntry) auditEntryJSON {
	out := auditEntryJSON{
		ID: e.ID, At: newJSONTime(e.At), Operation: e.Operation, ResourceType: e.ResourceType,
		ResourceIDs: e.ResourceIDs, Details: e.Details, Result: e.Result, RequestID: e.RequestID,
		ClientRequestID: e.ClientRequestID,
	}
	if out.ResourceIDs == nil {
		out.ResourceIDs = []string{}
	}
	if e.ActorKeyHash != nil || e.ActorUserID != nil || e.ActorSystem != nil {
		out.Actor = &auditActorJSON{KeyHash: e.ActorKeyHash, UserID: e.ActorUserID, System: e.ActorSystem}
	}
	return out
}

// listAuditLog serves GET /audit-log: the organization's changes, newest
// first, filtered by time range, actor and resource.
func (s *Server) listAuditLog() authHandler {
	return list(func(r *http.Request, p *principal, page gatehouse.Page) ([]*gatehouse.AuditEntry, int, error) {
		f, err := auditFilter(r)
		if err != nil {
			return nil, 0, err
		}
		f.Page = page
		return s.store.FindAuditEntries(r.Context(), p.org(), f)
	}, toAuditEntryJSON)
}

// auditFilter reads the filter query parameters of the audit log.
func auditFilter(r *http.Request) (gatehouse.AuditFilter, error) {
	q := r.URL.Query()
	f := gatehouse.AuditFilter{Actor: q.Get("actor"), Operation: q.Get("operation"), ResourceType: q.Get("resource_type"), ResourceID: q.Get("resource_id")}
	if err := singleValues(q, "actor", "operation", "resource_type", "resource_id", "since", "until"); err != nil {
		return f, err
	}
	var err error
	if f.Since, err = timeParam(q.Get("since"), "since"); err != nil {
		return f, err
	}
	if f.Until, err = timeParam(q.Get("until"), "until"); err != nil {
		return f, err
	}
	if f.Since != nil && f.Until != nil && f.Since.After(*f.Until) {
		return f, gatehouse.FieldError("since", "is after until: no entry could match")
	}
	return f, nil
}

// timeParam parses an optional RFC 3339 query parameter (seconds and a
// zone required, fractional seconds accepted), as request bodies take them.
func timeParam(raw, name string) (*time.Time, error) {
	if raw == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return nil, gatehouse.FieldError(name, "must be an RFC 3339 timestamp with a time zone, e.g. 2027-03-17T10:30:00Z")
	}
	t = t.UTC()
	return &t, nil
}
