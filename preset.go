package gatehouse

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"strconv"
	"strings"
	"time"
)

// Preset is a named request configuration of a workspace: a model, a system
// prompt, sampling parameters, tools and provider preferences, which a chat
// request applies by naming it (model "@preset/slug"). Every change adds an
// immutable version; requests use the latest unless they name another.
type Preset struct {
	ID              string
	OrganizationID  string
	WorkspaceID     string
	Slug            string // unique in its workspace
	Name            string
	Description     *string
	CreatorUserID   *string
	Status          string // PresetActive: Gatehouse has no way to disable or archive a preset
	StatusUpdatedAt *time.Time
	CreatedAt       time.Time
	UpdatedAt       time.Time // when its latest version was made
	// Latest is the newest version, the one requests use unless they name
	// another (OpenRouter's "designated" version). Lists leave it nil.
	Latest *PresetVersion
	// LatestVersionID is the id of Latest, which lists show.
	LatestVersionID string
}

// PresetActive is the status of every preset.
const PresetActive = "active"

// PresetVersion is one immutable version of a preset.
type PresetVersion struct {
	ID           string
	PresetID     string
	Version      int // 1, 2, ... in the order they were made
	Config       PresetConfig
	SystemPrompt *string
	// CreatorID is the user who made the version, or the hash of the key
	// that did when it belongs to no user.
	CreatorID string
	CreatedAt time.Time
}

// PresetConfig is what a preset version sets in a request: fields of a Chat
// Completions request (see presetFields), each checked when the version is
// made. Its JSON is an object whose values are compact JSON.
type PresetConfig map[string]json.RawMessage

// PresetDraft is the content of a new preset version, read from a request
// body of one of the inference APIs (see presetdraft.go).
type PresetDraft struct {
	Config       PresetConfig
	SystemPrompt *string
}

// Same reports whether d holds exactly what v holds.
func (d PresetDraft) Same(v *PresetVersion) bool {
	a, _ := json.Marshal(d.Config) // maps marshal with sorted keys
	b, _ := json.Marshal(v.Config)
	if !bytes.Equal(a, b) {
		return false
	}
	return (d.SystemPrompt == nil) == (v.SystemPrompt == nil) && (d.SystemPrompt == nil || *d.SystemPrompt == *v.SystemPrompt)
}

// Fields returns the names of the fields d sets, for the audit log: names,
// never values.
func (d PresetDraft) Fields() []string {
	out := make([]string, 0, len(d.Config)+1)
	for _, k := range presetFields {
		if _, ok := d.Config[k]; ok {
			out = append(out, k)
		}
	}
	if d.SystemPrompt != nil {
		out = append(out, "system_prompt")
	}
	return out
}

// CheckModel refuses a draft whose model the catalog does not serve (a
// preset that names a typo would fail every request that uses it), or
// serves for embeddings only (presets configure completions).
func (d PresetDraft) CheckModel(c *Catalog) error {
	raw, ok := d.Config["model"]
	if !ok {
		return nil
	}
	var slug string
	if err := json.Unmarshal(raw, &slug); err != nil {
		return FieldError("model", "must be a string")
	}
	m, _, ok := c.Model(slug)
	switch {
	case !ok:
		return FieldError("model", "unknown model %q; GET /api/v1/models lists the configured ones", slug)
	case m.Embeds():
		return FieldError("model", "%q is an embedding model, which presets do not serve", slug)
	}
	return nil
}

// Preset limits.
const (
	MaxPresetSlugLength = 64
	// MaxPresetVersion bounds version numbers in references, which every
	// database's INTEGER holds.
	MaxPresetVersion = 1<<31 - 1
)

// ValidatePresetSlug checks a preset slug: what names it in paths and in
// "@preset/slug".
func ValidatePresetSlug(field, slug string) error {
	if len(slug) == 0 || len(slug) > MaxPresetSlugLength || !slugPattern.MatchString(slug) {
		return FieldError(field, "a preset slug must be 1 to %d characters of lowercase letters and digits in segments joined by single hyphens, such as support-bot", MaxPresetSlugLength)
	}
	return nil
}

// ParsePresetVersion reads a version number as paths and references give
// it: a positive decimal integer without sign or leading zero.
func ParsePresetVersion(s string) (int, bool) {
	if s == "" || s[0] == '0' || len(s) > 10 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.Atoi(s)
	if err != nil || v > MaxPresetVersion {
		return 0, false
	}
	return v, true
}

// PresetService keeps the presets of an organization's workspaces. A
// workspace reference is its UUID or its slug; "" is the default workspace.
type PresetService interface {
	// FindPresets lists a workspace's presets, most recently updated first
	// (then by id), without their versions. ENOTFOUND for an unknown
	// workspace.
	FindPresets(ctx context.Context, orgID, workspaceRef string, page Page) ([]*Preset, int, error)
	// FindPreset returns a preset with its latest version. ENOTFOUND.
	FindPreset(ctx context.Context, orgID, workspaceRef, slug string) (*Preset, error)
	// FindPresetVersions lists the versions of a preset, oldest first.
	// ENOTFOUND for an unknown preset.
	FindPresetVersions(ctx context.Context, orgID, workspaceRef, slug string, page Page) ([]*PresetVersion, int, error)
	// FindPresetVersion returns one version of a preset, the latest when
	// version is 0. ENOTFOUND for an unknown preset or version.
	FindPresetVersion(ctx context.Context, orgID, workspaceRef, slug string, version int) (*PresetVersion, error)
	// SavePreset creates preset slug with d as its version 1, or makes d
	// its next version; when d holds exactly what the latest version
	// holds, it changes nothing. It returns the preset with its latest
	// version, and whether it changed anything. EINVALID for a bad slug,
	// ENOTFOUND for an unknown workspace.
	SavePreset(ctx context.Context, orgID, workspaceRef, slug string, d PresetDraft) (*Preset, bool, error)
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
		return use, false, FieldError("preset", "the model already names a preset (%q); name one preset, in model or in preset", model)
	case i >= 0:
		use = PresetUse{Field: "model", Model: model[:i]}
		if strings.Contains(use.Model, "@") {
			return use, false, FieldError("model", "%q names a preset after something that is not a model; write @preset/slug or provider/model@preset/slug", model)
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
	if err := ValidatePresetSlug(field, slug); err != nil {
		return "", 0, err
	}
	if !pinned {
		return slug, 0, nil
	}
	v, ok := ParsePresetVersion(version)
	if !ok {
		return "", 0, FieldError(field, "%q is not a version of preset %q: write slug@N with N a version number (1, 2, ...)", version, slug)
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
func (u PresetUse) Apply(body map[string]json.RawMessage, v *PresetVersion) (map[string]json.RawMessage, error) {
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
			return nil, FieldError("messages", "must be a non-empty array of messages")
		}
		system, _ := json.Marshal(map[string]string{"role": "system", "content": *v.SystemPrompt})
		out["messages"], _ = json.Marshal(append([]json.RawMessage{system}, msgs...))
	}
	return out, nil
}

// withModel returns a copy of a request body without its preset field and
// with the model it calls: the request's own, else the preset's.
func (u PresetUse) withModel(body map[string]json.RawMessage, v *PresetVersion) (map[string]json.RawMessage, error) {
	out := maps.Clone(body)
	delete(out, "preset")
	switch model, ok := v.Config["model"]; {
	case u.Model != "":
		out["model"], _ = json.Marshal(u.Model)
	case ok:
		out["model"] = model
	default:
		return nil, FieldError(u.Field, "preset %q (version %d) names no model: name one in the request, such as provider/model@preset/%s", u.Slug, v.Version, u.Slug)
	}
	return out, nil
}

// isSet reports whether a request sets a field: a null counts as unset.
func isSet(body map[string]json.RawMessage, k string) bool {
	raw, ok := body[k]
	return ok && string(raw) != "null"
}
