package httpapi

import (
	"gatehouse/preset"
	"net/http"

	"gatehouse"
)

// presetJSON is a preset as lists show it (OpenRouter's Preset).
type presetJSON struct {
	CreatedAt           jsonTime  `json:"created_at"`
	CreatorUserID       *string   `json:"creator_user_id"`
	Description         *string   `json:"description"`
	DesignatedVersionID *string   `json:"designated_version_id"`
	ID                  string    `json:"id"`
	Name                string    `json:"name"`
	Slug                string    `json:"slug"`
	Status              string    `json:"status"`
	StatusUpdatedAt     *jsonTime `json:"status_updated_at"`
	UpdatedAt           jsonTime  `json:"updated_at"`
	WorkspaceID         *string   `json:"workspace_id"`
}

// presetWithVersionJSON is a preset with the version requests use
// (OpenRouter's PresetWithDesignatedVersion).
type presetWithVersionJSON struct {
	presetJSON
	DesignatedVersion *presetVersionJSON `json:"designated_version"`
}

// presetVersionJSON is a version of a preset (OpenRouter's
// PresetDesignatedVersion). Versions never change: updated_at is the time
// it was made.
type presetVersionJSON struct {
	Config       gatehouse.PresetConfig `json:"config"`
	CreatedAt    jsonTime               `json:"created_at"`
	CreatorID    string                 `json:"creator_id"`
	ID           string                 `json:"id"`
	PresetID     string                 `json:"preset_id"`
	SystemPrompt *string                `json:"system_prompt"`
	UpdatedAt    jsonTime               `json:"updated_at"`
	Version      int                    `json:"version"`
}

func toPresetJSON(p *gatehouse.Preset) presetJSON {
	return presetJSON{
		CreatedAt: newJSONTime(p.CreatedAt), CreatorUserID: p.CreatorUserID, Description: p.Description,
		DesignatedVersionID: &p.LatestVersionID, ID: p.ID, Name: p.Name, Slug: p.Slug, Status: p.Status,
		StatusUpdatedAt: jsonTimePtr(p.StatusUpdatedAt), UpdatedAt: newJSONTime(p.UpdatedAt), WorkspaceID: &p.WorkspaceID,
	}
}

func toPresetVersionJSON(v *gatehouse.PresetVersion) *presetVersionJSON {
	config := v.Config
	if config == nil {
		config = gatehouse.PresetConfig{} // an object, never null
	}
	return &presetVersionJSON{Config: config, CreatedAt: newJSONTime(v.CreatedAt), CreatorID: v.CreatorID, ID: v.ID,
		PresetID: v.PresetID, SystemPrompt: v.SystemPrompt, UpdatedAt: newJSONTime(v.CreatedAt), Version: v.Version}
}

func toPresetWithVersionJSON(p *gatehouse.Preset) dataJSON[presetWithVersionJSON] {
	return dataJSON[presetWithVersionJSON]{presetWithVersionJSON{presetJSON: toPresetJSON(p), DesignatedVersion: toPresetVersionJSON(p.Latest)}}
}

// presetSlugPath returns the preset slug of the path. A value that cannot
// be a slug names no preset: 404, like any malformed id, saying why.
func presetSlugPath(r *http.Request) (string, error) {
	slug := r.PathValue("slug")
	if gatehouse.ValidatePresetSlug("slug", slug) != nil {
		return "", gatehouse.Errorf(gatehouse.ENOTFOUND, "preset not found: no preset can be named %q (a preset slug is 1 to %d lowercase letters and digits in segments joined by single hyphens)",
			truncateRunes(slug, 80), gatehouse.MaxPresetSlugLength).WithMetadata("slug", truncateRunes(slug, 80))
	}
	return slug, nil
}

// presetWorkspace is the workspace a preset operation acts in: the
// workspace_id query parameter (UUID or slug), else the default workspace.
func presetWorkspace(r *http.Request) string { return r.URL.Query().Get("workspace_id") }

func (s *Server) listPresets() authHandler {
	return list(func(r *http.Request, p *principal, page gatehouse.Page) ([]*gatehouse.Preset, int, error) {
		return s.store.FindPresets(r.Context(), p.org(), presetWorkspace(r), page)
	}, toPresetJSON)
}

func (s *Server) getPreset(w http.ResponseWriter, r *http.Request, p *principal) error {
	slug, err := presetSlugPath(r)
	if err != nil {
		return err
	}
	ps, err := s.store.FindPreset(r.Context(), p.org(), presetWorkspace(r), slug)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toPresetWithVersionJSON(ps))
}

func (s *Server) listPresetVersions() authHandler {
	return list(func(r *http.Request, p *principal, page gatehouse.Page) ([]*gatehouse.PresetVersion, int, error) {
		slug, err := presetSlugPath(r)
		if err != nil {
			return nil, 0, err
		}
		return s.store.FindPresetVersions(r.Context(), p.org(), presetWorkspace(r), slug, page)
	}, toPresetVersionJSON)
}

func (s *Server) getPresetVersion(w http.ResponseWriter, r *http.Request, p *principal) error {
	slug, err := presetSlugPath(r)
	if err != nil {
		return err
	}
	version, ok := gatehouse.ParsePresetVersion(r.PathValue("version"))
	if !ok {
		return gatehouse.Errorf(gatehouse.ENOTFOUND, "preset version not found: a version is a positive integer such as 1").
			WithMetadata("version", truncateRunes(r.PathValue("version"), 80))
	}
	v, err := s.store.FindPresetVersion(r.Context(), p.org(), presetWorkspace(r), slug, version)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[*presetVersionJSON]{toPresetVersionJSON(v)})
}

// presetRequest is a request body of one of the inference APIs from which a
// preset version is made.
type presetRequest[R any] interface {
	*R
	Draft() (gatehouse.PresetDraft, error)
}

// savePreset serves POST /presets/{slug}/chat/completions, /messages and
// /responses: the configuration of the body (of type R) becomes the
// preset's first version, or its next one; 200 either way, as OpenRouter
// answers. A body that changes nothing adds no version.
func savePreset[R any, P presetRequest[R]](s *Server) authHandler {
	return func(w http.ResponseWriter, r *http.Request, p *principal) error {
		slug, err := presetSlugPath(r)
		if err != nil {
			return err
		}
		req := P(new(R))
		if err := decode(w, r, req); err != nil {
			return err
		}
		d, err := req.Draft()
		if err != nil {
			return err
		}
		if err := preset.CheckDraftModel(d, s.data.Catalog); err != nil {
			return err
		}
		ps, _, err := s.store.SavePreset(r.Context(), p.org(), presetWorkspace(r), slug, d)
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, toPresetWithVersionJSON(ps))
	}
}
