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
	return list(func(r *http.Request, p *principal, page gatehouse.Page) ([]*gatehouse.Destination, int, error) {
		return s.store.FindDestinations(r.Context(), p.org(), r.URL.Query().Get("workspace_id"), page)
	}, toDestinationJSON)
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
	return writeJSON(w, http.StatusCreated, dataJSON[destinationJSON]{toDestinationJSON(d)})
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
	return writeJSON(w, http.StatusOK, dataJSON[destinationJSON]{toDestinationJSON(d)})
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
	return writeJSON(w, http.StatusOK, dataJSON[destinationJSON]{toDestinationJSON(d)})
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
