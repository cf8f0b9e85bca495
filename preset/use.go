package preset

import (
	"encoding/json"
	"fmt"
	"gatehouse"
	"gatehouse/provider"
	"maps"
	"strings"
)

// CheckDraftModel refuses a draft whose model the catalog does not serve (a
// preset that names a typo would fail every request that uses it), or
// serves for embeddings only (presets configure completions).
func CheckDraftModel(d gatehouse.PresetDraft, c *provider.Catalog) error {
	if raw, ok := d.Config["model"]; ok {
		var slug string
		if err := json.Unmarshal(raw, &slug); err != nil {
			return gatehouse.FieldError("model", "must be a string")
		}
		if err := checkPresetModel(c, "model", slug); err != nil {
			return err
		}
	}
	var models []string
	_ = json.Unmarshal(d.Config["models"], &models) // the draft's own: a list of strings, or absent
	for i, m := range models {
		if err := checkPresetModel(c, fmt.Sprintf("models[%d]", i), m); err != nil {
			return err
		}
	}
	return nil
}

// checkPresetModel refuses a model (a slug or an endpoint's address) the
// catalog does not serve, or serves for embeddings only.
func checkPresetModel(c *provider.Catalog, field, name string) error {
	eps, ok := c.Endpoints(name)
	switch {
	case !ok:
		return gatehouse.FieldError(field, "unknown model %q; GET /api/v1/models lists the configured ones", name)
	case eps[0].Embeds():
		return gatehouse.FieldError(field, "%q is an embedding model, which presets do not serve", name)
	}
	return nil
}

// PresetUse is how a chat request names a preset: Field is where
// ("model" or "preset"), Model the model the request names itself ("" when
// it leaves the choice to the preset).
type PresetUse struct {
	Slug    string
	Version int // 0: the latest
	Field   string
	Model   string
}

// PresetModelPrefix starts the model of a request that uses a preset.
const PresetModelPrefix = "@preset/"

// ReadPresetUse finds the preset a chat request names, in its model
// ("@preset/slug", "@preset/slug@3", "provider/model@preset/slug") or in
// its preset field ("slug", "slug@3"); ok is false when it names none. A
// request may name one preset, one way.
func ReadPresetUse(model string, preset *string) (use PresetUse, ok bool, err error) {
	i := strings.Index(model, PresetModelPrefix)
	switch {
	case i >= 0 && preset != nil:
		return use, false, gatehouse.FieldError("preset", "the model already names a preset (%q); name one preset, in model or in preset", model)
	case i >= 0:
		use = PresetUse{Field: "model", Model: model[:i]}
		if strings.Contains(use.Model, "@") {
			return use, false, gatehouse.FieldError("model", "%q names a preset after something that is not a model; write @preset/slug or provider/model@preset/slug", model)
		}
		use.Slug, use.Version, err = parsePresetRef("model", model[i+len(PresetModelPrefix):])
		return use, err == nil, err
	case preset != nil:
		use = PresetUse{Field: "preset", Model: model}
		use.Slug, use.Version, err = parsePresetRef("preset", strings.TrimPrefix(*preset, PresetModelPrefix))
		return use, err == nil, err
	}
	return use, false, nil
}

// parsePresetRef reads "slug" or "slug@version".
func parsePresetRef(field, ref string) (string, int, error) {
	slug, version, pinned := strings.Cut(ref, "@")
	if err := gatehouse.ValidatePresetSlug(field, slug); err != nil {
		return "", 0, err
	}
	if !pinned {
		return slug, 0, nil
	}
	v, ok := gatehouse.ParsePresetVersion(version)
	if !ok {
		return "", 0, gatehouse.FieldError(field, "%q is not a version of preset %q: write slug@N with N a version number (1, 2, ...)", version, slug)
	}
	return slug, v, nil
}

// Apply returns a chat request body (its top-level fields, as compact JSON)
// with the preset version applied: the fields the request sets win, field by
// field (a null counts as unset; a completion cap the request sets replaces
// the preset's); the preset fills in the others; its system prompt becomes
// a system message before the request's messages; and the preset field is
// gone. The model is the request's own, else the preset's. The result is a
// request like any other: the caller checks it as such.
func (u PresetUse) Apply(body map[string]json.RawMessage, v *gatehouse.PresetVersion) (map[string]json.RawMessage, error) {
	out, err := u.withModel(body, v)
	if err != nil {
		return nil, err
	}
	set := func(k string) bool { return isSet(out, k) }
	capped := set("max_tokens") || set("max_completion_tokens")
	for k, raw := range v.Config {
		switch {
		case k == "model", set(k):
		case k == "max_tokens" && capped:
		default:
			out[k] = raw
		}
	}
	if v.SystemPrompt != nil {
		var msgs []json.RawMessage
		if err := json.Unmarshal(out["messages"], &msgs); err != nil {
			return nil, gatehouse.FieldError("messages", "must be a non-empty array of messages")
		}
		system, _ := json.Marshal(map[string]string{"role": "system", "content": *v.SystemPrompt})
		out["messages"], _ = json.Marshal(append([]json.RawMessage{system}, msgs...))
	}
	return out, nil
}

// withModel returns a copy of a request body without its preset field and
// with the model it calls: the request's own, else the preset's.
func (u PresetUse) withModel(body map[string]json.RawMessage, v *gatehouse.PresetVersion) (map[string]json.RawMessage, error) {
	out := maps.Clone(body)
	delete(out, "preset")
	switch model, ok := v.Config["model"]; {
	case u.Model != "":
		out["model"], _ = json.Marshal(u.Model)
	case ok:
		out["model"] = model
	default:
		return nil, gatehouse.FieldError(u.Field, "preset %q (version %d) names no model: name one in the request, such as provider/model@preset/%s", u.Slug, v.Version, u.Slug)
	}
	return out, nil
}

// isSet reports whether a request sets a field: a null counts as unset.
func isSet(body map[string]json.RawMessage, k string) bool {
	raw, ok := body[k]
	return ok && string(raw) != "null"
}
