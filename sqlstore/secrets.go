package sqlstore

import "context"

// ResealSecrets re-encrypts every destination's secrets with the current key.
func (s *Store) ResealSecrets(ctx context.Context) (_ int, err error) {
	defer wrap(&err, "ResealSecrets")
	return update(ctx, s, func(tx *Tx) (int, error) {
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
	})
}
