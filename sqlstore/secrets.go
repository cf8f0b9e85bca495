package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"gatehouse"
)

// sealedRow is a destination's sealed secrets, with what names it.
type sealedRow struct {
	gatehouse.UnreadableDestination
	config  string
	secrets *string
}

// sealedRows reads every destination that has sealed secrets.
func (tx *Tx) sealedRows(ctx context.Context) ([]sealedRow, error) {
	rows, err := tx.Query(ctx, `SELECT id, organization_id, workspace_id, deleted_at IS NOT NULL, config, secrets
		FROM destinations WHERE secrets IS NOT NULL ORDER BY id`)
	return collect(rows, err, func(s Scanner) (sealedRow, error) {
		var r sealedRow
		return r, s.Scan(&r.ID, &r.OrganizationID, &r.WorkspaceID, &r.Deleted, &r.config, &r.secrets)
	})
}

// ResealSecrets re-encrypts every destination's secrets with the current
// key; see gatehouse.DestinationService.
func (s *Store) ResealSecrets(ctx context.Context, skipUnreadable bool) (_ int, _ []gatehouse.UnreadableDestination, err error) {
	defer wrap(&err, "ResealSecrets")
	type result struct {
		resealed   int
		unreadable []gatehouse.UnreadableDestination
	}
	got, err := update(ctx, s, func(tx *Tx) (result, error) {
		list, err := tx.sealedRows(ctx)
		if err != nil {
			return result{}, err
		}
		var r result
		for _, row := range list {
			cfg, err := openConfig(tx.box, row.ID, row.config, row.secrets)
			if errors.Is(err, errUnopenable) {
				r.unreadable = append(r.unreadable, row.UnreadableDestination)
				continue
			}
			if err != nil {
				return result{}, err
			}
			_, resealed, err := sealConfig(tx.box, row.ID, cfg)
			if err != nil {
				return result{}, err
			}
			if _, err := tx.Exec(ctx, `UPDATE destinations SET secrets = ? WHERE id = ?`, resealed, row.ID); err != nil {
				return result{}, err
			}
			r.resealed++
		}
		if len(r.unreadable) > 0 && !skipUnreadable {
			return result{}, errUnreadable(r.unreadable)
		}
		return r, nil
	})
	return got.resealed, got.unreadable, err
}

// errUnreadable refuses a re-seal that would leave secrets no key opens.
func errUnreadable(list []gatehouse.UnreadableDestination) error {
	names := make([]string, len(list))
	ids := make([]string, len(list))
	for i, u := range list {
		names[i], ids[i] = u.String(), u.ID
	}
	return &gatehouse.Error{Code: gatehouse.ECONFLICT,
		Message:  fmt.Sprintf("no key given opens the secrets of %d destinations: %s", len(list), strings.Join(names, "; ")),
		Metadata: map[string]any{"destination_ids": ids}}
}

// UnreadableDestinations lists the destinations whose secrets no key of
// the store opens.
func (s *Store) UnreadableDestinations(ctx context.Context) (_ []gatehouse.UnreadableDestination, err error) {
	defer wrap(&err, "UnreadableDestinations")
	return view(ctx, s, func(tx *Tx) ([]gatehouse.UnreadableDestination, error) {
		list, err := tx.sealedRows(ctx)
		if err != nil {
			return nil, err
		}
		var out []gatehouse.UnreadableDestination
		for _, row := range list {
			_, err := openConfig(tx.box, row.ID, row.config, row.secrets)
			if errors.Is(err, errUnopenable) {
				out = append(out, row.UnreadableDestination)
			} else if err != nil {
				return nil, err
			}
		}
		return out, nil
	})
}
