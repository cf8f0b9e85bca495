package sqlstore

import (
	"context"

	"gatehouse"
)

// ResealSecrets re-encrypts every destination's secrets and every BYOK key
// with the current key, in one transaction: a secret that no key of the
// store opens fails it, and nothing changes.
func (s *Store) ResealSecrets(ctx context.Context) (_ gatehouse.Resealed, err error) {
	defer wrap(&err, "ResealSecrets")
	return update(ctx, s, func(tx *Tx) (gatehouse.Resealed, error) {
		var n gatehouse.Resealed
		var err error
		if n.Destinations, err = tx.resealDestinations(ctx); err != nil {
			return n, err
		}
		n.BYOKKeys, err = tx.resealBYOKKeys(ctx)
		return n, err
	})
}

// resealDestinations re-seals the secrets of every destination (soft-deleted
// ones too) and returns how many it re-sealed.
func (tx *Tx) resealDestinations(ctx context.Context) (int, error) {
	rows, err := tx.Query(ctx, `SELECT id, config, secrets FROM destinations WHERE secrets IS NOT NULL ORDER BY id`)
	type sealed struct {
		id, config string
		secrets    *string
	}
	list, err := collect(rows, err, func(s Scanner) (sealed, error) {
		var r sealed
		return r, s.Scan(&r.id, &r.config, &r.secrets)
	})
	if err != nil {
		return 0, err
	}
	for _, r := range list {
		cfg, err := openConfig(tx.box, r.id, r.config, r.secrets)
		if err != nil {
			return 0, err
		}
		_, resealed, err := sealConfig(tx.box, r.id, cfg)
		if err != nil {
			return 0, err
		}
		if _, err := tx.Exec(ctx, `UPDATE destinations SET secrets = ? WHERE id = ?`, resealed, r.id); err != nil {
			return 0, err
		}
	}
	return len(list), nil
}

// resealBYOKKeys re-seals every BYOK key and returns how many it re-sealed.
func (tx *Tx) resealBYOKKeys(ctx context.Context) (int, error) {
	rows, err := tx.Query(ctx, `SELECT id, sealed_key FROM byok_keys ORDER BY id`)
	type sealed struct{ id, key string }
	list, err := collect(rows, err, func(s Scanner) (sealed, error) {
		var r sealed
		return r, s.Scan(&r.id, &r.key)
	})
	if err != nil {
		return 0, err
	}
	for _, r := range list {
		key, err := openBYOKKey(tx.box, r.id, r.key)
		if err != nil {
			return 0, err
		}
		resealed := tx.sealBYOKKey(&gatehouse.BYOKKey{ID: r.id, Key: key})
		if _, err := tx.Exec(ctx, `UPDATE byok_keys SET sealed_key = ? WHERE id = ?`, resealed, r.id); err != nil {
			return 0, err
		}
	}
	return len(list), nil
}
