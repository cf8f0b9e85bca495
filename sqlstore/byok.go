package sqlstore

import (
	"context"
	"time"

	"gatehouse"

	"github.com/google/uuid"
)

// byokColumns are the columns of byok_keys that the management API reads,
// in scanBYOKKey order: every one but sealed_key, which only the gateway's
// read opens.
const byokColumns = `id, organization_id, workspace_id, provider, name, label, disabled, allowed_api_key_hashes,
	allowed_models, allowed_user_ids, declared_zdr, is_byok_only, is_fallback, is_required, sort_order, created_at, updated_at`

// scanBYOKKey scans a row of byokColumns; the key stays empty.
func scanBYOKKey(s Scanner) (*gatehouse.BYOKKey, error) {
	var k gatehouse.BYOKKey
	err := s.Scan(&k.ID, &k.OrganizationID, &k.WorkspaceID, &k.Provider, &k.Name, &k.Label, &k.Disabled,
		jsonCol{&k.AllowedAPIKeyHashes}, jsonCol{&k.AllowedModels}, jsonCol{&k.AllowedUserIDs}, &k.DeclaredZDR,
		&k.IsBYOKOnly, &k.IsFallback, &k.IsRequired, &k.SortOrder, msTime(&k.CreatedAt), msTime(&k.UpdatedAt))
	return &k, scanErr("byok key", k.ID, err)
}

// byokArgs returns the values of byokColumns for k.
func byokArgs(k *gatehouse.BYOKKey) []any {
	return []any{k.ID, k.OrganizationID, k.WorkspaceID, k.Provider, k.Name, k.Label, k.Disabled,
		jsonCol{k.AllowedAPIKeyHashes}, jsonCol{k.AllowedModels}, jsonCol{k.AllowedUserIDs}, k.DeclaredZDR,
		k.IsBYOKOnly, k.IsFallback, k.IsRequired, k.SortOrder, ms(k.CreatedAt), ms(k.UpdatedAt)}
}

// sealBYOKKey seals the provider key of k, bound to its id, so that a sealed
// key copied onto another row does not open.
func (tx *Tx) sealBYOKKey(k *gatehouse.BYOKKey) string {
	return tx.box.Seal([]byte(k.Key), []byte("byok:"+k.ID))
}

// openBYOKKey opens a sealed provider key. The error never holds the key.
func openBYOKKey(box *gatehouse.SecretBox, id, sealed string) (gatehouse.Secret, error) {
	plain, err := box.Open(sealed, []byte("byok:"+id))
	if err != nil {
		return "", gatehouse.WrapError(err, gatehouse.EUNAVAILABLE,
			"a BYOK key of the workspace cannot be read: the server's secret key does not open it (has GATEHOUSE_SECRET_KEY changed?)")
	}
	return gatehouse.Secret(plain), nil
}

// findBYOKKey returns a BYOK key of the organization. Ids that are not
// UUIDs are not found.
func (tx *Tx) findBYOKKey(ctx context.Context, orgID, id string) (*gatehouse.BYOKKey, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, gatehouse.NotFound("byok key", id)
	}
	return found("byok key", id, scanBYOKKey, tx.QueryRow(ctx, `SELECT `+byokColumns+` FROM byok_keys
		WHERE id = ? AND organization_id = ?`, id, orgID))
}

// FindBYOKKey returns a BYOK key of the organization, without its key.
func (s *Store) FindBYOKKey(ctx context.Context, orgID, id string) (_ *gatehouse.BYOKKey, err error) {
	defer wrap(&err, "FindBYOKKey")
	return read(ctx, s, func(tx *Tx) (*gatehouse.BYOKKey, error) { return tx.findBYOKKey(ctx, orgID, id) })
}

// FindBYOKKeys lists the BYOK keys of a workspace, of one provider or all.
func (s *Store) FindBYOKKeys(ctx context.Context, orgID string, f gatehouse.BYOKKeyFilter) (_ []*gatehouse.BYOKKey, _ int, err error) {
	defer wrap(&err, "FindBYOKKeys")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.BYOKKey], error) {
		w, err := tx.findWorkspace(ctx, orgID, f.WorkspaceRef)
		if err != nil {
			return nil, err
		}
		from, args := `byok_keys WHERE workspace_id = ?`, []any{w.ID}
		if f.Provider != "" {
			from, args = from+` AND provider = ?`, append(args, f.Provider)
		}
		return findPage(ctx, tx, byokColumns, from, `created_at, id`, args, f.Page, scanBYOKKey)
	}))
}

// CreateBYOKKey creates a BYOK key in a workspace, last in its provider's
// sort order.
func (s *Store) CreateBYOKKey(ctx context.Context, orgID string, c gatehouse.BYOKKeyCreate) (_ *gatehouse.BYOKKey, err error) {
	defer wrap(&err, "CreateBYOKKey")
	base, err := gatehouse.NewBYOKKey(c)
	if err != nil {
		return nil, err
	}
	return update(ctx, s, func(tx *Tx) (*gatehouse.BYOKKey, error) {
		k := new(*base) // each run fills in a copy of its own
		w, err := tx.findWorkspace(ctx, orgID, c.WorkspaceID)
		if err != nil {
			return nil, err
		}
		var n, next int
		if err := tx.QueryRow(ctx, `SELECT count(*), COALESCE(MAX(sort_order) + 1, 0) FROM byok_keys
			WHERE workspace_id = ? AND provider = ?`, w.ID, k.Provider).Scan(&n, &next); err != nil {
			return nil, err
		}
		if n >= gatehouse.MaxBYOKKeysPerProvider {
			return nil, gatehouse.FieldError("provider", "the workspace already has %d BYOK keys for provider %s; delete one first",
				gatehouse.MaxBYOKKeysPerProvider, k.Provider)
		}
		k.ID, k.OrganizationID, k.WorkspaceID, k.SortOrder = uuid.NewString(), orgID, w.ID, next
		k.CreatedAt, k.UpdatedAt = tx.now, tx.now
		if err := tx.checkBYOKAllowlists(ctx, k, c.BYOKKeyUpdate); err != nil {
			return nil, err
		}
		if err := tx.insert(ctx, "byok_keys", byokColumns+`, sealed_key`, append(byokArgs(k), tx.sealBYOKKey(k))); err != nil {
			return nil, err
		}
		return k, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpBYOKKeyCreate, ResourceType: gatehouse.ResourceBYOKKey,
			ResourceIDs: []string{k.ID}, Details: map[string]any{"provider": k.Provider, "workspace_id": w.ID}})
	})
}

// UpdateBYOKKey updates a BYOK key; a new key is sealed in place of the old.
func (s *Store) UpdateBYOKKey(ctx context.Context, orgID, id string, u gatehouse.BYOKKeyUpdate) (_ *gatehouse.BYOKKey, err error) {
	defer wrap(&err, "UpdateBYOKKey")
	return update(ctx, s, func(tx *Tx) (*gatehouse.BYOKKey, error) {
		k, err := tx.findBYOKKey(ctx, orgID, id)
		if err != nil {
			return nil, err
		}
		if err := k.Apply(u); err != nil {
			return nil, err
		}
		if err := tx.checkBYOKAllowlists(ctx, k, u); err != nil {
			return nil, err
		}
		k.UpdatedAt = tx.now
		// byokArgs(k)[4:] are name through updated_at; sort_order and
		// created_at are written back unchanged.
		set := `name = ?, label = ?, disabled = ?, allowed_api_key_hashes = ?, allowed_models = ?, allowed_user_ids = ?,
			declared_zdr = ?, is_byok_only = ?, is_fallback = ?, is_required = ?, sort_order = ?, created_at = ?, updated_at = ?`
		values := byokArgs(k)[4:]
		if u.Key.Set {
			set, values = set+`, sealed_key = ?`, append(values, tx.sealBYOKKey(k))
		}
		if _, err := tx.Exec(ctx, `UPDATE byok_keys SET `+set+` WHERE id = ?`, append(values, k.ID)...); err != nil {
			return nil, err
		}
		k.Key = "" // given in the request; not read back
		return k, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpBYOKKeyUpdate, ResourceType: gatehouse.ResourceBYOKKey,
			ResourceIDs: []string{k.ID}, Details: map[string]any{"fields": gatehouse.ChangedFields(u)}})
	})
}

// checkBYOKAllowlists refuses allowlisted key hashes that are not regular
// keys of the key's workspace, and users who are not members of its
// organization: of the lists u sets, whose shape Apply checked.
func (tx *Tx) checkBYOKAllowlists(ctx context.Context, k *gatehouse.BYOKKey, u gatehouse.BYOKKeyUpdate) error {
	if hashes := k.AllowedAPIKeyHashes; u.AllowedAPIKeyHashes.Set && hashes != nil {
		in, args := tx.in("hash", hashes, k.OrganizationID, k.WorkspaceID)
		rows, err := tx.Query(ctx, `SELECT hash FROM api_keys WHERE organization_id = ? AND workspace_id = ?
			AND management = FALSE AND `+in, args...)
		known, err := collect(rows, err, scanString)
		if err != nil {
			return err
		}
		if unknown := missing(hashes, known); len(unknown) > 0 {
			return (&gatehouse.Error{Code: gatehouse.EINVALID, Message: "allowed_api_key_hashes: not keys of the workspace: " +
				gatehouse.ListIDs(unknown)}).WithMetadata("field", "allowed_api_key_hashes").WithMetadata("allowed_api_key_hashes", unknown)
		}
	}
	if users := k.AllowedUserIDs; u.AllowedUserIDs.Set && users != nil {
		unknown, err := tx.unknownMembers(ctx, k.OrganizationID, users)
		if err != nil {
			return err
		}
		if len(unknown) > 0 {
			return (&gatehouse.Error{Code: gatehouse.EINVALID, Message: "allowed_user_ids: not members of the organization: " +
				gatehouse.ListIDs(unknown)}).WithMetadata("field", "allowed_user_ids").WithMetadata("allowed_user_ids", unknown)
		}
	}
	return nil
}

// DeleteBYOKKey deletes a BYOK key: its row, and with it the sealed key.
func (s *Store) DeleteBYOKKey(ctx context.Context, orgID, id string) (err error) {
	defer wrap(&err, "DeleteBYOKKey")
	if _, err := uuid.Parse(id); err != nil {
		return gatehouse.NotFound("byok key", id)
	}
	return s.exec(ctx, func(tx *Tx) error {
		n, err := tx.execCount(ctx, `DELETE FROM byok_keys WHERE id = ? AND organization_id = ?`, id, orgID)
		if err == nil && n == 0 {
			return gatehouse.NotFound("byok key", id)
		}
		if err != nil {
			return err
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpBYOKKeyDelete, ResourceType: gatehouse.ResourceBYOKKey, ResourceIDs: []string{id}})
	})
}

// ProviderBYOKKeys returns the BYOK keys of a workspace for a provider, with
// their keys opened, for the gateway. Every metered request asks, so the
// answer is remembered until the next write this process commits, or
// another instance's for at most policyTTL, as GuardrailsForKey's is: a key
// disabled or deleted here is never used again, one disabled elsewhere
// within a second.
func (s *Store) ProviderBYOKKeys(ctx context.Context, workspaceID, provider string) (_ []*gatehouse.BYOKKey, err error) {
	defer wrap(&err, "ProviderBYOKKeys")
	writes, now := s.writes.Load(), time.Now()
	id := workspaceID + " " + provider
	if v, ok := s.byokKeys.Load(id); ok {
		if e := v.(*byokEntry); e.writes == writes && now.Sub(e.at) < policyTTL {
			return e.keys, nil
		}
	}
	keys, err := read(ctx, s, func(tx *Tx) ([]*gatehouse.BYOKKey, error) {
		rows, err := tx.Query(ctx, `SELECT `+byokColumns+`, sealed_key FROM byok_keys
			WHERE workspace_id = ? AND provider = ? ORDER BY sort_order, created_at, id`, workspaceID, provider)
		return collect(rows, err, tx.scanOpenBYOKKey)
	})
	if err != nil {
		return nil, err
	}
	if s.byokCount.Add(1) > maxPolicies {
		s.byokKeys.Clear()
		s.byokCount.Store(0)
	}
	s.byokKeys.Store(id, &byokEntry{writes: writes, at: now, keys: keys})
	return keys, nil
}

// byokEntry is the remembered answer of ProviderBYOKKeys for one workspace
// and provider.
type byokEntry struct {
	writes uint64
	at     time.Time
	keys   []*gatehouse.BYOKKey
}

// scanOpenBYOKKey scans a row of byokColumns and sealed_key, and opens the key.
func (tx *Tx) scanOpenBYOKKey(s Scanner) (*gatehouse.BYOKKey, error) {
	var sealed string
	k, err := scanBYOKKey(scannerWith{s, &sealed})
	if err != nil {
		return nil, err
	}
	k.Key, err = openBYOKKey(tx.box, k.ID, sealed)
	return k, err
}

// scannerWith scans a row into the destinations of a scanner's caller,
// then into more.
type scannerWith struct {
	Scanner
	more any
}

func (s scannerWith) Scan(dest ...any) error { return s.Scanner.Scan(append(dest, s.more)...) }
