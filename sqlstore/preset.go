package sqlstore

import (
	"context"
	"errors"

	"gatehouse"

	"github.com/google/uuid"
)

const presetColumns = `id, organization_id, workspace_id, slug, name, description, creator_user_id, status,
	status_updated_at, latest_version, latest_version_id, created_at, updated_at`

const presetVersionColumns = `id, preset_id, version, config, system_prompt, creator_id, created_at`

// scanPreset scans a row of presetColumns; Latest stays nil.
func scanPreset(s Scanner) (*gatehouse.Preset, error) {
	p := &gatehouse.Preset{}
	var latest int // the number of the version LatestVersionID names, read with it (withLatest)
	err := s.Scan(&p.ID, &p.OrganizationID, &p.WorkspaceID, &p.Slug, &p.Name, &p.Description, &p.CreatorUserID,
		&p.Status, msTime(&p.StatusUpdatedAt), &latest, &p.LatestVersionID, msTime(&p.CreatedAt), msTime(&p.UpdatedAt))
	return p, scanErr("preset", p.ID, err)
}

func presetArgs(p *gatehouse.Preset) []any {
	return []any{p.ID, p.OrganizationID, p.WorkspaceID, p.Slug, p.Name, p.Description, p.CreatorUserID,
		p.Status, ms(p.StatusUpdatedAt), p.Latest.Version, p.Latest.ID, ms(p.CreatedAt), ms(p.UpdatedAt)}
}

func scanPresetVersion(s Scanner) (*gatehouse.PresetVersion, error) {
	v := &gatehouse.PresetVersion{}
	err := s.Scan(&v.ID, &v.PresetID, &v.Version, jsonCol{&v.Config}, &v.SystemPrompt, &v.CreatorID, msTime(&v.CreatedAt))
	return v, scanErr("preset version", v.ID, err)
}

func presetVersionArgs(v *gatehouse.PresetVersion) []any {
	return []any{v.ID, v.PresetID, v.Version, jsonCol{v.Config}, v.SystemPrompt, v.CreatorID, ms(v.CreatedAt)}
}

// findPreset returns the preset of a workspace named slug, without its
// versions. A malformed slug names nothing: not found.
func (tx *Tx) findPreset(ctx context.Context, orgID, workspaceRef, slug string) (*gatehouse.Preset, error) {
	if gatehouse.ValidatePresetSlug("slug", slug) != nil {
		return nil, gatehouse.NotFound("preset", slug)
	}
	w, err := tx.findWorkspace(ctx, orgID, workspaceRef)
	if err != nil {
		return nil, err
	}
	return tx.presetIn(ctx, orgID, w.ID, slug)
}

// presetIn returns the preset of a workspace known to exist.
func (tx *Tx) presetIn(ctx context.Context, orgID, workspaceID, slug string) (*gatehouse.Preset, error) {
	return found("preset", slug, scanPreset, tx.QueryRow(ctx, `SELECT `+presetColumns+` FROM presets
		WHERE workspace_id = ? AND slug = ? AND organization_id = ?`, workspaceID, slug, orgID))
}

// withLatest reads the latest version of a preset into it.
func (tx *Tx) withLatest(ctx context.Context, p *gatehouse.Preset, err error) (*gatehouse.Preset, error) {
	if err != nil {
		return nil, err
	}
	p.Latest, err = found("preset version", p.LatestVersionID, scanPresetVersion, tx.QueryRow(ctx,
		`SELECT `+presetVersionColumns+` FROM preset_versions WHERE id = ?`, p.LatestVersionID))
	if err != nil {
		return nil, err
	}
	return p, nil
}

// findPresetVersion returns a version of a preset found with its latest.
func (tx *Tx) findPresetVersion(ctx context.Context, p *gatehouse.Preset, version int) (*gatehouse.PresetVersion, error) {
	if version == 0 || version == p.Latest.Version {
		return p.Latest, nil
	}
	v, err := scanPresetVersion(tx.QueryRow(ctx, `SELECT `+presetVersionColumns+` FROM preset_versions
		WHERE preset_id = ? AND version = ?`, p.ID, version))
	if errors.Is(err, ErrNoRows) {
		return nil, gatehouse.Errorf(gatehouse.ENOTFOUND, "preset %q has no version %d (its latest is %d)", p.Slug, version, p.Latest.Version).
			WithMetadata("slug", p.Slug).WithMetadata("version", version)
	}
	return v, err
}

// FindPresets lists a workspace's presets, most recently updated first.
func (s *Store) FindPresets(ctx context.Context, orgID, workspaceRef string, page gatehouse.Page) (_ []*gatehouse.Preset, _ int, err error) {
	defer wrap(&err, "FindPresets")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.Preset], error) {
		w, err := tx.findWorkspace(ctx, orgID, workspaceRef)
		if err != nil {
			return nil, err
		}
		return findKeptCountPage(ctx, tx, "presets", w.ID, presetColumns, `presets WHERE workspace_id = ?`,
			`presets WHERE workspace_id = ?`, `updated_at DESC, id DESC`, false, []any{w.ID}, page, scanPreset)
	}))
}

// FindPreset returns a preset with its latest version.
func (s *Store) FindPreset(ctx context.Context, orgID, workspaceRef, slug string) (_ *gatehouse.Preset, err error) {
	defer wrap(&err, "FindPreset")
	return view(ctx, s, func(tx *Tx) (*gatehouse.Preset, error) {
		p, err := tx.findPreset(ctx, orgID, workspaceRef, slug)
		return tx.withLatest(ctx, p, err)
	})
}

// FindPresetVersions lists the versions of a preset, oldest first.
func (s *Store) FindPresetVersions(ctx context.Context, orgID, workspaceRef, slug string, page gatehouse.Page) (_ []*gatehouse.PresetVersion, _ int, err error) {
	defer wrap(&err, "FindPresetVersions")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.PresetVersion], error) {
		p, err := tx.findPreset(ctx, orgID, workspaceRef, slug)
		if err != nil {
			return nil, err
		}
		const from = `preset_versions WHERE preset_id = ?`
		return findScopedPage(ctx, tx, presetVersionColumns, from, from, `version`, []any{p.ID}, page, scanPresetVersion)
	}))
}

// FindPresetVersion returns one version of a preset, the latest for 0.
// Named by workspace id, as a chat request names it (the key's workspace),
// the version is one statement's read; the general way, and the way to a
// precise not-found, reads the workspace, the preset and the version.
func (s *Store) FindPresetVersion(ctx context.Context, orgID, workspaceRef, slug string, version int) (_ *gatehouse.PresetVersion, err error) {
	defer wrap(&err, "FindPresetVersion")
	if id, _, _ := gatehouse.ParseWorkspaceRef(workspaceRef); id != "" && gatehouse.ValidatePresetSlug("slug", slug) == nil {
		v, err := read(ctx, s, func(tx *Tx) (*gatehouse.PresetVersion, error) {
			return scanPresetVersion(tx.QueryRow(ctx, `SELECT `+prefixed("v.", presetVersionColumns)+`
				FROM presets p JOIN preset_versions v ON v.preset_id = p.id
				WHERE p.workspace_id = ? AND p.slug = ? AND p.organization_id = ?
				AND v.version = CASE WHEN ? = 0 THEN p.latest_version ELSE ? END`, id, slug, orgID, version, version))
		})
		if !errors.Is(err, ErrNoRows) {
			return v, err
		}
	}
	return view(ctx, s, func(tx *Tx) (*gatehouse.PresetVersion, error) {
		p, err := tx.findPreset(ctx, orgID, workspaceRef, slug)
		if p, err = tx.withLatest(ctx, p, err); err != nil {
			return nil, err
		}
		return tx.findPresetVersion(ctx, p, version)
	})
}

// SavePreset creates a preset with its first version, or adds a version.
func (s *Store) SavePreset(ctx context.Context, orgID, workspaceRef, slug string, d gatehouse.PresetDraft) (_ *gatehouse.Preset, changed bool, err error) {
	defer wrap(&err, "SavePreset")
	if err := gatehouse.ValidatePresetSlug("slug", slug); err != nil {
		return nil, false, err
	}
	type saved struct {
		p       *gatehouse.Preset
		changed bool
	}
	save := func(tx *Tx) (saved, error) {
		w, err := tx.findWorkspace(ctx, orgID, workspaceRef)
		if err != nil {
			return saved{}, err
		}
		p, err := tx.presetIn(ctx, orgID, w.ID, slug)
		p, err = tx.withLatest(ctx, p, err)
		switch {
		case gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND:
			p, err = tx.createPreset(ctx, orgID, w.ID, slug, d)
		case err == nil && d.Same(p.Latest):
			return saved{p, false}, nil
		case err == nil:
			err = tx.addPresetVersion(ctx, p, d)
		}
		return saved{p, err == nil}, err
	}
	// Only a concurrent writer can have taken the slug or the version
	// number. PostgreSQL reports most such races as serialization failures,
	// which the engine retries, but an insert racing another one may meet
	// the unique index instead: the save is then run again on the state
	// the other left, a few times, before the client is told to retry.
	var r saved
	for attempt := 1; ; attempt++ {
		r, err = update(ctx, s, save)
		if !s.d.IsUnique(err) {
			break
		}
		if attempt == 5 {
			return nil, false, gatehouse.WrapError(err, gatehouse.ECONFLICT, "preset %q was changed by another request at the same time; retry", slug)
		}
	}
	return r.p, r.changed, err
}

// creatorOf names who makes a version: the acting user, else the acting
// key's hash; operations run without an actor (the command line) are
// Gatehouse's own.
func creatorOf(ctx context.Context) (userID *string, creatorID string) {
	a, ok := gatehouse.ActorFrom(ctx)
	switch {
	case !ok:
		return nil, "gatehouse"
	case a.UserID != nil:
		return a.UserID, *a.UserID
	}
	return nil, a.KeyHash
}

// createPreset inserts a preset with d as its version 1.
func (tx *Tx) createPreset(ctx context.Context, orgID, workspaceID, slug string, d gatehouse.PresetDraft) (*gatehouse.Preset, error) {
	user, creator := creatorOf(ctx)
	p := &gatehouse.Preset{ID: uuid.NewString(), OrganizationID: orgID, WorkspaceID: workspaceID, Slug: slug, Name: slug,
		CreatorUserID: user, Status: gatehouse.PresetActive, CreatedAt: tx.now, UpdatedAt: tx.now}
	p.Latest = &gatehouse.PresetVersion{ID: uuid.NewString(), PresetID: p.ID, Version: 1, Config: d.Config,
		SystemPrompt: d.SystemPrompt, CreatorID: creator, CreatedAt: tx.now}
	p.LatestVersionID = p.Latest.ID
	if err := tx.insert(ctx, "presets", presetColumns, presetArgs(p)); err != nil {
		return nil, err
	}
	if err := tx.insert(ctx, "preset_versions", presetVersionColumns, presetVersionArgs(p.Latest)); err != nil {
		return nil, err
	}
	return p, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpPresetCreate, ResourceType: gatehouse.ResourcePreset,
		ResourceIDs: []string{p.ID}, Details: map[string]any{"workspace_id": workspaceID, "slug": slug, "version": 1,
			"version_id": p.Latest.ID, "fields": d.Fields()}})
}

// addPresetVersion makes d the next version of p, and p's latest.
func (tx *Tx) addPresetVersion(ctx context.Context, p *gatehouse.Preset, d gatehouse.PresetDraft) error {
	_, creator := creatorOf(ctx)
	v := &gatehouse.PresetVersion{ID: uuid.NewString(), PresetID: p.ID, Version: p.Latest.Version + 1, Config: d.Config,
		SystemPrompt: d.SystemPrompt, CreatorID: creator, CreatedAt: tx.now}
	if err := tx.insert(ctx, "preset_versions", presetVersionColumns, presetVersionArgs(v)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE presets SET latest_version = ?, latest_version_id = ?, updated_at = ? WHERE id = ?`,
		v.Version, v.ID, ms(tx.now), p.ID); err != nil {
		return err
	}
	p.Latest, p.LatestVersionID, p.UpdatedAt = v, v.ID, tx.now
	return tx.audit(ctx, p.OrganizationID, gatehouse.AuditRecord{Operation: gatehouse.OpPresetVersionCreate, ResourceType: gatehouse.ResourcePreset,
		ResourceIDs: []string{p.ID}, Details: map[string]any{"workspace_id": p.WorkspaceID, "slug": p.Slug, "version": v.Version,
			"version_id": v.ID, "fields": d.Fields()}})
}
