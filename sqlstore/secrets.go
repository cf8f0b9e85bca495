package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"gatehouse"
)

// ResealSecrets re-encrypts every destination's secrets, every BYOK key and
// every identity provider's client secret with the current key, in one
// transaction. Secrets that no key of the
// store opens fail it, naming them all, and nothing changes; unless
// skipUnreadable: then they are left as they are, and listed.
func (s *Store) ResealSecrets(ctx context.Context, skipUnreadable bool) (_ gatehouse.Resealed, err error) {
	defer wrap(&err, "ResealSecrets")
	return update(ctx, s, func(tx *Tx) (gatehouse.Resealed, error) {
		var n gatehouse.Resealed
		var err error
		if n.Destinations, err = tx.resealDestinations(ctx, &n.Skipped); err != nil {
			return n, err
		}
		if n.BYOKKeys, err = tx.resealBYOKKeys(ctx, &n.Skipped); err != nil {
			return n, err
		}
		if n.SSOProviders, err = tx.resealClientSecrets(ctx, &n.Skipped); err != nil {
			return n, err
		}
		if len(n.Skipped) > 0 && !skipUnreadable {
			return n, errUnreadable(n.Skipped)
		}
		return n, nil
	})
}

// UnreadableSecrets lists the destinations and BYOK keys whose secrets no
// key of the store opens.
func (s *Store) UnreadableSecrets(ctx context.Context) (_ []gatehouse.UnreadableSecret, err error) {
	defer wrap(&err, "UnreadableSecrets")
	return view(ctx, s, func(tx *Tx) ([]gatehouse.UnreadableSecret, error) {
		var out []gatehouse.UnreadableSecret
		err := tx.eachSealed(ctx, func(r sealedRow) error {
			if _, err := r.open(tx.box); errors.Is(err, errUnopenable) {
				out = append(out, r.UnreadableSecret)
			} else if err != nil {
				return err
			}
			return nil
		}, gatehouse.SecretOfDestination, gatehouse.SecretOfBYOKKey, gatehouse.SecretOfSSOProvider)
		return out, err
	})
}

// sealedRow is a destination's sealed secrets or a BYOK key's, with what
// names it.
type sealedRow struct {
	gatehouse.UnreadableSecret
	config, sealed string // a destination's non-secret config; the sealed value
}

// open opens a row's secrets: a destination's configuration, or a BYOK
// key. An error wrapping errUnopenable when no key of box opens them.
func (r sealedRow) open(box *gatehouse.SecretBox) (any, error) {
	if r.Kind == gatehouse.SecretOfSSOProvider {
		secret, err := openClientSecret(box, r.ID, r.sealed)
		if err != nil {
			return nil, fmt.Errorf("identity provider %s: %w: %w", r.ID, errUnopenable, err)
		}
		return secret, nil
	}
	if r.Kind == gatehouse.SecretOfBYOKKey {
		key, err := openBYOKKey(box, r.ID, r.sealed)
		if err != nil {
			return nil, fmt.Errorf("BYOK key %s: %w: %w", r.ID, errUnopenable, err)
		}
		return key, nil
	}
	return openConfig(box, r.ID, r.config, &r.sealed)
}

// sealedQueries read the sealed secrets of each kind, in id order: every
// destination that has some (the soft-deleted ones too), every BYOK key.
var sealedQueries = map[string]string{
	gatehouse.SecretOfDestination: `SELECT id, organization_id, workspace_id, deleted_at IS NOT NULL, config, secrets
		FROM destinations WHERE secrets IS NOT NULL ORDER BY id`,
	gatehouse.SecretOfBYOKKey: `SELECT id, organization_id, workspace_id, 1 = 0, '', sealed_key FROM byok_keys ORDER BY id`,
	gatehouse.SecretOfSSOProvider: `SELECT id, organization_id, '', 1 = 0, '', sealed_client_secret FROM sso_providers
		WHERE sealed_client_secret IS NOT NULL ORDER BY id`,
}

// eachSealed calls fn with every sealed secret of the kinds given, kind by
// kind.
func (tx *Tx) eachSealed(ctx context.Context, fn func(sealedRow) error, kinds ...string) error {
	for _, kind := range kinds {
		q := struct{ kind, query string }{kind, sealedQueries[kind]}
		rows, err := tx.Query(ctx, q.query)
		list, err := collect(rows, err, func(s Scanner) (sealedRow, error) {
			r := sealedRow{UnreadableSecret: gatehouse.UnreadableSecret{Kind: q.kind}}
			return r, s.Scan(&r.ID, &r.OrganizationID, &r.WorkspaceID, &r.Deleted, &r.config, &r.sealed)
		})
		if err != nil {
			return err
		}
		for _, r := range list {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// resealDestinations re-seals the secrets of every destination (soft-deleted
// ones too) and returns how many it re-sealed; those no key opens are
// added to skipped.
func (tx *Tx) resealDestinations(ctx context.Context, skipped *[]gatehouse.UnreadableSecret) (int, error) {
	n := 0
	err := tx.eachSealed(ctx, func(r sealedRow) error {
		cfg, err := openConfig(tx.box, r.ID, r.config, &r.sealed)
		if errors.Is(err, errUnopenable) {
			*skipped = append(*skipped, r.UnreadableSecret)
			return nil
		}
		if err != nil {
			return err
		}
		_, resealed, err := sealConfig(tx.box, r.ID, cfg)
		if err != nil {
			return err
		}
		n++
		_, err = tx.Exec(ctx, `UPDATE destinations SET secrets = ? WHERE id = ?`, resealed, r.ID)
		return err
	}, gatehouse.SecretOfDestination)
	return n, err
}

// resealBYOKKeys re-seals every BYOK key and returns how many it re-sealed;
// those no key opens are added to skipped.
func (tx *Tx) resealBYOKKeys(ctx context.Context, skipped *[]gatehouse.UnreadableSecret) (int, error) {
	n := 0
	err := tx.eachSealed(ctx, func(r sealedRow) error {
		key, err := openBYOKKey(tx.box, r.ID, r.sealed)
		if err != nil {
			*skipped = append(*skipped, r.UnreadableSecret)
			return nil
		}
		resealed := tx.sealBYOKKey(&gatehouse.BYOKKey{ID: r.ID, Key: key})
		n++
		_, err = tx.Exec(ctx, `UPDATE byok_keys SET sealed_key = ? WHERE id = ?`, resealed, r.ID)
		return err
	}, gatehouse.SecretOfBYOKKey)
	return n, err
}

// resealClientSecrets re-seals the client secret of every identity
// provider that has one and returns how many it re-sealed; those no key
// opens are added to skipped.
func (tx *Tx) resealClientSecrets(ctx context.Context, skipped *[]gatehouse.UnreadableSecret) (int, error) {
	n := 0
	err := tx.eachSealed(ctx, func(r sealedRow) error {
		secret, err := openClientSecret(tx.box, r.ID, r.sealed)
		if err != nil {
			*skipped = append(*skipped, r.UnreadableSecret)
			return nil
		}
		n++
		_, err = tx.Exec(ctx, `UPDATE sso_providers SET sealed_client_secret = ? WHERE id = ?`, tx.sealClientSecret(r.ID, string(secret)), r.ID)
		return err
	}, gatehouse.SecretOfSSOProvider)
	return n, err
}

// errUnreadable refuses a re-seal that would leave secrets no key opens.
func errUnreadable(list []gatehouse.UnreadableSecret) error {
	names := make([]string, len(list))
	ids := make([]string, len(list))
	for i, u := range list {
		names[i], ids[i] = u.String(), u.ID
	}
	return &gatehouse.Error{Code: gatehouse.ECONFLICT,
		Message:  fmt.Sprintf("no key given opens %d secrets: %s", len(list), strings.Join(names, "; ")),
		Metadata: map[string]any{"ids": ids}}
}
