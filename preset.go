package gatehouse

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
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
// Completions request (see PresetFields), each checked when the version is
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
	for _, k := range PresetFields {
		if _, ok := d.Config[k]; ok {
			out = append(out, k)
		}
	}
	if d.SystemPrompt != nil {
		out = append(out, "system_prompt")
	}
	return out
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

// PresetFields are the fields a preset version may set, in the order the
// audit log names them.
var PresetFields = []string{
	"model", "max_tokens", "temperature", "top_p", "top_k", "min_p", "top_a",
	"presence_penalty", "frequency_penalty", "repetition_penalty", "seed", "stop", "logit_bias",
	"logprobs", "top_logprobs", "response_format", "tools", "tool_choice", "parallel_tool_calls",
	"reasoning", "reasoning_effort", "verbosity", "provider", "models",
}
