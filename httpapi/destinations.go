package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sort"

	"gatehouse"
)

// destinationFields are the fields shared by destination create and update.
type destinationFields struct {
	Name                              gatehouse.Patch[string]                `json:"name"`
	Config                            configPatch                            `json:"config"`
	Enabled                           gatehouse.Patch[bool]                  `json:"enabled"`
	PrivacyMode                       gatehouse.Patch[bool]                  `json:"privacy_mode"`
	SamplingRate                      gatehouse.Patch[float64]               `json:"sampling_rate"`
	APIKeyHashes                      gatehouse.Patch[[]string]              `json:"api_key_hashes"`
	FilterRules                       gatehouse.Patch[gatehouse.FilterRules] `json:"filter_rules"`
	Regions                           gatehouse.Patch[[]string]              `json:"regions"`
	BroadcastGenerationCost           gatehouse.Patch[bool]                  `json:"broadcast_generation_cost"`
	BroadcastGenerationIdentity       gatehouse.Patch[bool]                  `json:"broadcast_generation_identity"`
	BroadcastGenerationRequestContext gatehouse.Patch[bool]                  `json:"broadcast_generation_request_context"`
}

func (f *destinationFields) update() gatehouse.DestinationUpdate {
	u := gatehouse.DestinationUpdate{
		Name: f.Name, Enabled: f.Enabled, PrivacyMode: f.PrivacyMode, SamplingRate: f.SamplingRate,
		APIKeyHashes: f.APIKeyHashes, FilterRules: f.FilterRules, Regions: f.Regions,
		BroadcastGenerationCost:           f.BroadcastGenerationCost,
		BroadcastGenerationIdentity:       f.BroadcastGenerationIdentity,
		BroadcastGenerationRequestContext: f.BroadcastGenerationRequestContext,
	}
	if f.Config.set {
		u.Config = &f.Config.ConfigPatch
	}
	return u
}

type createDestinationRequest struct {
	destinationFields
	Type        string `json:"type"`
	WorkspaceID string `json:"workspace_id"`
}

// configPatch decodes a destination's config object: string values (null
// removes a key) and a "headers" object of strings (null clears it). It is a
// value, not a pointer, so that a null config reaches UnmarshalJSON and is
// refused instead of passing for an absent one.
type configPatch struct {
	gatehouse.ConfigPatch
	set bool // present in the request
}

// UnmarshalJSON decodes the config object, naming any value of a wrong type.
func (c *configPatch) UnmarshalJSON(data []byte) error {
	c.set = true
	if string(data) == "null" {
		return gatehouse.FieldError("config", "must be an object")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return gatehouse.FieldError("config", "must be an object")
	}
	c.Values = map[string]*string{}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys) // report the first bad key deterministically
	for _, k := range keys {
		v := bytes.TrimSpace(raw[k])
		if k == "headers" {
			c.HeadersSet = true
			if string(v) == "null" {
				continue
			}
			if err := json.Unmarshal(v, &c.Headers); err != nil || c.Headers == nil {
				return gatehouse.FieldError("config.headers", "must be an object of strings")
			}
			continue
		}
		if string(v) == "null" {
			c.Values[k] = nil
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return gatehouse.FieldError("config."+k, "must be a string")
		}
		c.Values[k] = &s
	}
	return nil
}

func (s *Server) listDestinations() authHandler {
	return func(w http.ResponseWriter, r *http.Request, p *principal) error {
		page, err := pageParams(r)
		if err != nil {
			return err
		}
		ds, total, err := s.store.FindDestinations(r.Context(), p.org(), r.URL.Query().Get("workspace_id"), page)
		if err != nil {
			return err
		}
		out, err := s.withDelivery(r, p, ds...)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, listJSON[destinationJSON]{out, total})
	}
}

// deliveryMonitor is the trace publisher's status and test, if it has them.
func (s *Server) deliveryMonitor() gatehouse.DeliveryMonitor {
	m, _ := s.data.Traces.(gatehouse.DeliveryMonitor)
	return m
}

// withDelivery renders destinations with their delivery status.
func (s *Server) withDelivery(r *http.Request, p *principal, ds ...*gatehouse.Destination) ([]destinationJSON, error) {
	out := mapSlice(ds, toDestinationJSON)
	for i := range out {
		out[i].Delivery = toDeliveryJSON(gatehouse.DeliveryStatus{})
	}
	m := s.deliveryMonitor()
	if m == nil || len(ds) == 0 {
		return out, nil
	}
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.ID
	}
	sts, err := m.DeliveryStatuses(r.Context(), p.org(), ids)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Delivery = toDeliveryJSON(sts[out[i].ID])
	}
	return out, nil
}

// testDestination sends a test event to a destination and answers what
// its service answered: 200 whether or not it accepted the event.
func (s *Server) testDestination(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := uuidPath(r, "id", "destination")
	if err != nil {
		return err
	}
	d, err := s.store.FindDestination(r.Context(), p.org(), id)
	if err != nil {
		return err
	}
	m := s.deliveryMonitor()
	if m == nil {
		return gatehouse.Errorf(gatehouse.EUNAVAILABLE, "this server delivers no traces")
	}
	t, err := m.TestDestination(r.Context(), d)
	if err != nil {
		return err
	}
	out := destinationTestJSON{Delivered: t.Delivered, LatencyMS: t.LatencyMS, EventID: t.EventID, Answer: t.Answer}
	if t.Status != 0 {
		out.Status = &t.Status
	}
	if t.Error != "" {
		out.Error = &t.Error
	}
	return writeJSON(w, http.StatusOK, dataJSON[destinationTestJSON]{out})
}

// destinationTestJSON is the answer of a test delivery.
type destinationTestJSON struct {
	Delivered bool    `json:"delivered"`
	Status    *int    `json:"status"` // the service's HTTP status; null when it gave none
	Answer    string  `json:"answer"` // the start of the service's answer, secrets taken out
	Error     *string `json:"error"`
	LatencyMS int64   `json:"latency_ms"`
	EventID   string  `json:"event_id"`
}

func (s *Server) createDestination(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req createDestinationRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	d, err := s.destinations.Create(r.Context(), p.org(), gatehouse.DestinationCreate{
		DestinationUpdate: req.update(), Type: req.Type, WorkspaceID: req.WorkspaceID})
	if err != nil {
		return err
	}
	out, err := s.withDelivery(r, p, d)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, dataJSON[destinationJSON]{out[0]})
}

func (s *Server) getDestination(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := uuidPath(r, "id", "destination")
	if err != nil {
		return err
	}
	d, err := s.store.FindDestination(r.Context(), p.org(), id)
	if err != nil {
		return err
	}
	out, err := s.withDelivery(r, p, d)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[destinationJSON]{out[0]})
}

func (s *Server) updateDestination(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := uuidPath(r, "id", "destination")
	if err != nil {
		return err
	}
	var req destinationFields
	if err := decode(w, r, &req); err != nil {
		return err
	}
	d, err := s.destinations.Update(r.Context(), p.org(), id, req.update())
	if err != nil {
		return err
	}
	out, err := s.withDelivery(r, p, d)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[destinationJSON]{out[0]})
}

func (s *Server) deleteDestination(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := uuidPath(r, "id", "destination")
	if err != nil {
		return err
	}
	if err := s.destinations.Delete(r.Context(), p.org(), id); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, deleted)
}

// destinationsChanged tells the trace publisher of this instance to read
// destinations afresh, so that a change applies to the next delivery.
func (s *Server) destinationsChanged() {
	if inv, ok := s.data.Traces.(interface{ InvalidateDestinations() }); ok {
		inv.InvalidateDestinations()
	}
}
