package sqlstore

import (
	"context"

	"gatehouse"
)

// SealedSecrets checks the sealed secrets of a database (a backup, say)
// against a secret box, without changing anything: every destination's
// secrets (soft-deleted ones included), BYOK key and identity provider's
// client secret, and the newest stored
// content of generations (new content is sealed with the current key, so
// it tells a wrong key; older content may hold a key kept in
// GATEHOUSE_SECRET_KEY_PREVIOUS). It returns how many it checked and what
// box cannot open, each named by kind and id. q reads the database; has
// tells which tables it has, since a database of an early release, which
// a backup copies as it is, lacks those of later ones (byok_keys,
// generation_content): what it lacks holds no secret.
func SealedSecrets(ctx context.Context, q Querier, box *gatehouse.SecretBox, has func(table string) bool) (total int, unreadable []string, err error) {
	for _, s := range []struct {
		table, query string
		open         func(id, config, sealed string) error
		name         string
	}{
		{"destinations", `SELECT id, config, secrets FROM destinations WHERE secrets IS NOT NULL ORDER BY id`,
			func(id, config, sealed string) error { _, err := openConfig(box, id, config, &sealed); return err }, "destination "},
		{"byok_keys", `SELECT id, '', sealed_key FROM byok_keys ORDER BY id`,
			func(id, _, sealed string) error { _, err := box.Open(sealed, []byte("byok:"+id)); return err }, "BYOK key "},
		{"sso_providers", `SELECT id, '', sealed_client_secret FROM sso_providers WHERE sealed_client_secret IS NOT NULL ORDER BY id`,
			func(id, _, sealed string) error { _, err := openClientSecret(box, id, sealed); return err }, "the client secret of identity provider "},
		{"generation_content", `SELECT generation_id, '', sealed FROM generation_content ORDER BY created_at DESC, generation_id DESC LIMIT 1`,
			func(id, _, sealed string) error { _, err := box.Open(sealed, contentAD(id)); return err }, "the stored content of generation "},
	} {
		if !has(s.table) {
			continue
		}
		rows, err := q.Query(ctx, s.query)
		found, err := collect(rows, err, func(sc Scanner) ([3]string, error) {
			var r [3]string
			return r, sc.Scan(&r[0], &r[1], &r[2])
		})
		if err != nil {
			return 0, nil, err
		}
		for _, r := range found {
			if s.open(r[0], r[1], r[2]) != nil {
				unreadable = append(unreadable, s.name+r[0])
			}
		}
		total += len(found)
	}
	return total, unreadable, nil
}
