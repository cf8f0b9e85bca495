package sqlstore

import (
	"context"

	"gatehouse"
)

// SealedSecrets checks the destination secrets of a database (a backup,
// say) against a secret box: it returns how many destinations hold sealed
// secrets and the ids of those box cannot open, soft-deleted ones
// included, without changing anything. q reads the database.
func SealedSecrets(ctx context.Context, q Querier, box *gatehouse.SecretBox) (total int, unreadable []string, err error) {
	rows, err := q.Query(ctx, `SELECT id, config, secrets FROM destinations WHERE secrets IS NOT NULL ORDER BY id`)
	type sealed struct {
		id, config string
		secrets    *string
	}
	list, err := collect(rows, err, func(s Scanner) (sealed, error) {
		var r sealed
		return r, s.Scan(&r.id, &r.config, &r.secrets)
	})
	if err != nil {
		return 0, nil, err
	}
	for _, r := range list {
		if _, err := openConfig(box, r.id, r.config, r.secrets); err != nil {
			unreadable = append(unreadable, r.id)
		}
	}
	return len(list), unreadable, nil
}
