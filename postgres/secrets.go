package postgres

import (
	"context"
	"database/sql"

	"gatehouse/dbrow"
)

// ResealSecrets re-encrypts every destination's secrets with the current key.
func (db *DB) ResealSecrets(ctx context.Context) (int, error) {
	n := 0
	err := db.update(ctx, func(tx *Tx) error {
		n = 0
		rows, err := tx.Query(ctx, `SELECT id, config, secrets FROM destinations WHERE secrets IS NOT NULL ORDER BY id FOR UPDATE`)
		type sealed struct {
			id, config string
			secrets    sql.NullString
		}
		list, err := collect(rows, err, func(s dbrow.Scanner) (sealed, error) {
			var r sealed
			return r, s.Scan(&r.id, &r.config, &r.secrets)
		})
		if err != nil {
			return err
		}
		for _, r := range list {
			cfg, err := dbrow.OpenConfig(db.box, r.id, r.config, r.secrets)
			if err != nil {
				return err
			}
			_, resealed, err := dbrow.SealConfig(db.box, r.id, cfg)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE destinations SET secrets = $1 WHERE id = $2`, resealed, r.id); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
