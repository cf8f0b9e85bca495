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
// box cannot open, each named by kind and id. q reads the database.
func SealedSecrets(ctx context.Context, q Querier, box *gatehouse.SecretBox) (total int, unreadable []string, err error) {
	type sealed struct{ id, config, secrets string }
	scan := func(s Scanner) (sealed, error) {
		var r sealed
		return r, s.Scan(&r.id, &r.config, &r.secrets)
	}
	rows, err := q.Query(ctx, `SELECT id, config, secrets FROM destinations WHERE secrets IS NOT NULL ORDER BY id`)
	dests, err := collect(rows, err, scan)
	if err != nil {
		return 0, nil, err
	}
	for _, r := range dests {
		if _, err := openConfig(box, r.id, r.config, &r.secrets); err != nil {
			unreadable = append(unreadable, "destination "+r.id)
		}
	}
	rows, err = q.Query(ctx, `SELECT id, '', sealed_key FROM byok_keys ORDER BY id`)
	keys, err := collect(rows, err, scan)
	if err != nil {
		return 0, nil, err
	}
	for _, r := range keys {
		if _, err := box.Open(r.secrets, []byte("byok:"+r.id)); err != nil {
			unreadable = append(unreadable, "BYOK key "+r.id)
		}
	}
	rows, err = q.Query(ctx, `SELECT id, '', sealed_client_secret FROM sso_providers WHERE sealed_client_secret IS NOT NULL ORDER BY id`)
	providers, err := collect(rows, err, scan)
	if err != nil {
		return 0, nil, err
	}
	for _, r := range providers {
		if _, err := openClientSecret(box, r.id, r.secrets); err != nil {
			unreadable = append(unreadable, "the client secret of identity provider "+r.id)
		}
	}
	rows, err = q.Query(ctx, `SELECT generation_id, '', sealed FROM generation_content ORDER BY created_at DESC, generation_id DESC LIMIT 1`)
	content, err := collect(rows, err, scan)
	if err != nil {
		return 0, nil, err
	}
	for _, r := range content {
		if _, err := box.Open(r.secrets, contentAD(r.id)); err != nil {
			unreadable = append(unreadable, "the stored content of generation "+r.id)
		}
	}
	return len(dests) + len(keys) + len(providers) + len(content), unreadable, nil
}
