package sqlstore

import (
	"context"
	"errors"

	"gatehouse"
)

// Console sessions. A session is read on every request of the console, in
// one query that also checks its member or management key; it is written
// when it begins and ends, and at most once a SessionTouchInterval when it
// is active.

// sessionColumns are the columns of a session row joined with its member
// (m) and key (k), in scanSession order: a key's session reads "" and
// RoleAdmin, the first argument of the query.
const sessionColumns = `s.id, s.organization_id, s.user_id, s.key_hash, COALESCE(m.email, ''), COALESCE(m.role, ?),
	s.csrf_token, s.created_at, s.last_seen_at, s.expires_at`

// liveSession is the FROM clause that selects the live sessions: within
// their absolute and idle ends, of a member who exists or of an active
// management key of their organization. Its arguments: now, now minus the
// idle timeout, now. A deactivated member's sessions are not live.
const liveSession = `console_sessions s
	LEFT JOIN members m ON m.organization_id = s.organization_id AND m.id = s.user_id
	LEFT JOIN api_keys k ON k.hash = s.key_hash
	WHERE s.expires_at > ? AND s.last_seen_at > ?
	AND ((m.id IS NOT NULL AND m.deactivated_at IS NULL) OR (k.management = TRUE AND k.organization_id = s.organization_id
		AND k.disabled = FALSE AND (k.expires_at IS NULL OR k.expires_at > ?)))`

func scanSession(s Scanner) (*gatehouse.Session, error) {
	var v gatehouse.Session
	return &v, s.Scan(&v.ID, &v.OrganizationID, &v.UserID, &v.KeyHash, &v.Email, &v.Role,
		&v.CSRFToken, msTime(&v.CreatedAt), msTime(&v.LastSeenAt), msTime(&v.ExpiresAt))
}

// liveArgs are the arguments of sessionColumns and liveSession.
func (tx *Tx) liveArgs() []any {
	now := ms(tx.now)
	return []any{gatehouse.RoleAdmin, now, ms(tx.now.Add(-gatehouse.SessionIdleTimeout)), now}
}

// CreateSession creates a session of a member or a management key.
func (s *Store) CreateSession(ctx context.Context, c gatehouse.SessionCreate) (_ *gatehouse.Session, _ string, err error) {
	defer wrap(&err, "CreateSession")
	if err := c.Validate(); err != nil {
		return nil, "", err
	}
	token := gatehouse.NewAccountToken()
	method := "password"
	if c.KeyHash != nil {
		method = "management_key"
	}
	v, err := update(ctx, s, func(tx *Tx) (*gatehouse.Session, error) {
		return tx.createSession(ctx, c, token, map[string]any{"method": method})
	})
	if err != nil {
		return nil, "", err
	}
	return v, token, nil
}

// createSession opens a session; details (its method) go in the audit
// entry.
func (tx *Tx) createSession(ctx context.Context, c gatehouse.SessionCreate, token string, details map[string]any) (*gatehouse.Session, error) {
	v := &gatehouse.Session{ID: gatehouse.AccountTokenID(token), OrganizationID: c.OrganizationID, UserID: c.UserID,
		KeyHash: c.KeyHash, CSRFToken: gatehouse.NewAccountToken(), CreatedAt: tx.now, LastSeenAt: tx.now,
		ExpiresAt: tx.now.Add(c.Lifetime)}
	if err := tx.sessionOwner(ctx, v); err != nil {
		return nil, err
	}
	// Sign-ins are rare: each clears the sessions that have ended, so
	// that the table holds about the live ones.
	if _, err := tx.Exec(ctx, `DELETE FROM console_sessions WHERE expires_at <= ? OR last_seen_at <= ?`,
		ms(tx.now), ms(tx.now.Add(-gatehouse.SessionIdleTimeout))); err != nil {
		return nil, err
	}
	if err := tx.insert(ctx, "console_sessions", `id, organization_id, user_id, key_hash, csrf_token, created_at, last_seen_at, expires_at`,
		[]any{v.ID, v.OrganizationID, v.UserID, v.KeyHash, v.CSRFToken, ms(v.CreatedAt), ms(v.LastSeenAt), ms(v.ExpiresAt)}); err != nil {
		return nil, err
	}
	return v, tx.audit(actorOr(ctx, v.Actor()), v.OrganizationID, gatehouse.AuditRecord{Operation: gatehouse.OpSessionCreate,
		ResourceType: gatehouse.ResourceSession, ResourceIDs: []string{v.ID}, Details: details})
}

// sessionOwner checks the member or management key of a new session, and
// fills in the member's email and role (a key's session is an admin's).
func (tx *Tx) sessionOwner(ctx context.Context, v *gatehouse.Session) error {
	if v.UserID != nil {
		var deactivated bool
		err := tx.QueryRow(ctx, `SELECT email, role, deactivated_at IS NOT NULL FROM members WHERE organization_id = ? AND id = ?`,
			v.OrganizationID, *v.UserID).Scan(&v.Email, &v.Role, &deactivated)
		if errors.Is(err, ErrNoRows) {
			return gatehouse.NotFound("member", *v.UserID)
		}
		if err == nil && deactivated {
			return gatehouse.ErrMemberDeactivated()
		}
		return err
	}
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM api_keys WHERE hash = ? AND organization_id = ? AND management = TRUE
		AND disabled = FALSE AND (expires_at IS NULL OR expires_at > ?)`, *v.KeyHash, v.OrganizationID, ms(tx.now)).Scan(&one)
	if errors.Is(err, ErrNoRows) {
		return gatehouse.NotFound("management key", *v.KeyHash)
	}
	v.Role = gatehouse.RoleAdmin
	return err
}

// actorOr returns ctx with actor a unless it carries one already: the
// actor of a sign-in or sign-out is the session's own member or key.
func actorOr(ctx context.Context, a gatehouse.Actor) context.Context {
	if _, ok := gatehouse.ActorFrom(ctx); ok {
		return ctx
	}
	return gatehouse.WithActor(ctx, a)
}

// FindSession returns the live session of a token.
func (s *Store) FindSession(ctx context.Context, token string) (_ *gatehouse.Session, err error) {
	defer wrap(&err, "FindSession")
	id := gatehouse.AccountTokenID(token)
	return read(ctx, s, func(tx *Tx) (*gatehouse.Session, error) {
		v, err := scanSession(tx.QueryRow(ctx, `SELECT `+sessionColumns+` FROM `+liveSession+` AND s.id = ?`, append(tx.liveArgs(), id)...))
		if errors.Is(err, ErrNoRows) {
			return nil, gatehouse.Errorf(gatehouse.ENOTFOUND, "no such session, or it has ended")
		}
		return v, err
	})
}

// TouchSession records activity of a live session, at most once a
// SessionTouchInterval.
func (s *Store) TouchSession(ctx context.Context, id string) (err error) {
	defer wrap(&err, "TouchSession")
	return s.exec(ctx, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `UPDATE console_sessions SET last_seen_at = ?
			WHERE id = ? AND last_seen_at <= ? AND last_seen_at > ? AND expires_at > ?`,
			ms(tx.now), id, ms(tx.now.Add(-gatehouse.SessionTouchInterval)), ms(tx.now.Add(-gatehouse.SessionIdleTimeout)), ms(tx.now))
		return err
	})
}

// DeleteSession ends a session.
func (s *Store) DeleteSession(ctx context.Context, id string) (err error) {
	defer wrap(&err, "DeleteSession")
	return s.exec(ctx, func(tx *Tx) error {
		var v gatehouse.Session
		err := tx.QueryRow(ctx, `SELECT id, organization_id, user_id, key_hash FROM console_sessions WHERE id = ?`, id).
			Scan(&v.ID, &v.OrganizationID, &v.UserID, &v.KeyHash)
		if errors.Is(err, ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM console_sessions WHERE id = ?`, id); err != nil {
			return err
		}
		return tx.audit(actorOr(ctx, v.Actor()), v.OrganizationID, gatehouse.AuditRecord{Operation: gatehouse.OpSessionDelete,
			ResourceType: gatehouse.ResourceSession, ResourceIDs: []string{id}})
	})
}

// DeleteSessions ends every session of a member.
func (s *Store) DeleteSessions(ctx context.Context, orgID, userID string) (err error) {
	defer wrap(&err, "DeleteSessions")
	return s.exec(ctx, func(tx *Tx) error {
		if err := tx.memberExists(ctx, orgID, userID); err != nil {
			return err
		}
		n, err := tx.deleteSessions(ctx, orgID, userID)
		if err != nil {
			return err
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpSessionsDelete,
			ResourceType: gatehouse.ResourceMember, ResourceIDs: []string{userID}, Details: map[string]any{"sessions": n}})
	})
}

// deleteSessions ends every session of a member and returns how many.
func (tx *Tx) deleteSessions(ctx context.Context, orgID, userID string) (int64, error) {
	return tx.Exec(ctx, `DELETE FROM console_sessions WHERE organization_id = ? AND user_id = ?`, orgID, userID)
}
