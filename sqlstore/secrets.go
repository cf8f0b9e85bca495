package sqlstore

import (
	"context"
	"database/sql"
)

// ResealSecrets re-encrypts every destination's secrets with the current key.
func (s *Store) ResealSecrets(ctx context.Context) (int, error) {
	n := 0
	err := s.exec(ctx, func(tx *Tx) error {
		n = 0
		rows, err := tx.Query(ctx, `SELECT id, config, secrets FROM destinations WHERE secrets IS NOT NULL ORDER BY id`)
		if err != nil {
			return err
		}
		type sealed struct {
			id, config string
			secrets    sql.NullString
		}
		list, err := collect(rows, nil, func(s Scanner) (sealed, error) {
			var r sealed
			return r, s.Scan(&r.id, &r.config, &r.secrets)
		})
		if err != nil {
			return err
		}
		for _, r := range list {
			cfg, err := openConfig(tx.box, r.id, r.config, r.secrets)
			if err != nil {
				return err
			}
			_, resealed, err := sealConfig(tx.box, r.id, cfg)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE destinations SET secrets = ? WHERE id = ?`, resealed, r.id); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
