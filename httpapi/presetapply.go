package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"gatehouse/preset"
	"gatehouse/provider"
	"reflect"
	"strings"

	"gatehouse"
)

// appliedPreset is the preset version a chat request used, for errors
// about what it put into the request.
type appliedPreset struct {
	use     preset.PresetUse
	version int
}

// usePreset applies the preset a chat request names (model "@preset/slug",
// "provider/model@preset/slug", either with "@N" for version N, or the
// preset field), looked up in the key's workspace, and checks the result
// as the chat endpoint checks any request: it comes before the model
// lookup, the provider preferences, the guardrails and the reservation, so
// a preset can do nothing its key could not do by sending the same fields
// itself. raw becomes the merged request, whose length bounds the prompt
// (the preset's system prompt included). A request without a preset is
// returned unchanged, with a nil *appliedPreset.
func (s *Server) usePreset(ctx context.Context, key *gatehouse.Key, req chatRequest, body map[string]json.RawMessage, raw []byte) (chatRequest, map[string]json.RawMessage, []byte, *appliedPreset, error) {
	applied, v, err := s.findPreset(ctx, key, req.Model, req.Preset)
	if err != nil || applied == nil {
		return req, body, raw, nil, err
	}
	merged, err := applied.use.Apply(body, v)
	if err != nil {
		return req, nil, nil, nil, applied.explain(err)
	}
	req, body, raw, err = reparse(applied, merged, parseChat)
	return req, body, raw, applied, err
}

// findPreset looks up the preset version a request names in the key's
// workspace; nil when it names none. An unknown preset or version is a 400
// naming the field that names it.
func (s *Server) findPreset(ctx context.Context, key *gatehouse.Key, model string, ps *string) (*appliedPreset, *gatehouse.PresetVersion, error) {
	use, ok, err := preset.ReadPresetUse(model, ps)
	if err != nil || !ok {
		return nil, nil, err
	}
	v, err := s.store.FindPresetVersion(ctx, key.OrganizationID, key.WorkspaceID, use.Slug, use.Version)
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		msg := fmt.Sprintf("unknown preset %q in the key's workspace; GET /api/v1/presets?workspace_id=%s lists them", use.Slug, key.WorkspaceID)
		if use.Version != 0 {
			msg = gatehouse.ErrorMessage(err)
		}
		return nil, nil, gatehouse.FieldError(use.Field, "%s", msg).WithMetadata("preset", use.Slug)
	}
	if err != nil {
		return nil, nil, err
	}
	return &appliedPreset{use: use, version: v.Version}, v, nil
}

// reparse encodes a request that a preset was applied to and checks it as
// its endpoint checks any request (parse); a refusal says which preset was
// applied.
func reparse[R any](applied *appliedPreset, merged map[string]json.RawMessage, parse func([]byte) (R, map[string]json.RawMessage, error)) (R, map[string]json.RawMessage, []byte, error) {
	var zero R
	raw, err := json.Marshal(merged)
	if err != nil {
		return zero, nil, nil, fmt.Errorf("encode the request with preset %q applied: %w", applied.use.Slug, err)
	}
	req, body, err := parse(raw)
	if err != nil {
		return zero, nil, nil, applied.explain(err)
	}
	return req, body, raw, nil
}

// explain adds to a refusal of a request that a preset was applied to which
// preset (and version) it was, since the refused field may be the preset's.
// Only 400s: a guardrail refuses a request with a preset exactly as it
// refuses the same request without one.
func (a *appliedPreset) explain(err error) error {
	var e *gatehouse.Error
	if a == nil || !errors.As(err, &e) || e.Code != gatehouse.EINVALID {
		return err
	}
	out := &gatehouse.Error{Code: e.Code, Err: e.Err,
		Message:  fmt.Sprintf("%s (with preset %q version %d applied)", e.Message, a.use.Slug, a.version),
		Metadata: map[string]any{"preset": a.use.Slug, "preset_version": a.version}}
	for k, v := range e.Metadata {
		out.Metadata[k] = v
	}
	return out
}

// readProvider reads the provider preferences of a chat request: an object
// of provider.ProviderPreferences' fields, strictly (no unknown or
// duplicate key, types as declared), each error naming its field under
// provider.
func readProvider(raw json.RawMessage) (*provider.ProviderPreferences, error) {
	v := bytes.TrimSpace(raw)
	if len(v) == 0 || string(v) == "null" {
		return nil, nil
	}
	if v[0] != '{' {
		return nil, gatehouse.FieldError("provider", "must be an object of provider preferences, such as {\"only\": [\"openai\"]}")
	}
	t := reflect.TypeFor[provider.ProviderPreferences]()
	if _, err := scanObject(v, t); err != nil {
		return nil, underField("provider", err)
	}
	var p provider.ProviderPreferences
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, underField("provider", decodeError(err, t))
	}
	return &p, p.Validate("provider")
}

// underField moves an error about a field of a nested object under the
// object's own field.
func underField(parent string, err error) error {
	var e *gatehouse.Error
	if !errors.As(err, &e) || e.Code != gatehouse.EINVALID {
		return err
	}
	if f, ok := e.Metadata["field"].(string); ok {
		return gatehouse.FieldError(parent+"."+f, "%s", strings.TrimPrefix(e.Message, f+": "))
	}
	return gatehouse.FieldError(parent, "%s", e.Message)
}
