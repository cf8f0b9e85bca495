package console

import (
	"context"
	"net/http"
	"time"

	"gatehouse"
)

// keyData is the data of a key's page.
type keyData struct {
	Row   keyRow
	Form  *form
	Chart *chart
	// Spend, Requests and Tokens sum the chart's window.
	Spend            gatehouse.Money
	Requests, Tokens int64
	// Locked is a key of a workspace the member has left: the page offers
	// to disable or delete it only (mayChangeKey).
	Locked bool
}

// findKey returns a key the session may see, or ENOTFOUND: a member
// asking for another's key learns nothing of it, not even that it exists.
func (s *Server) findKey(ctx context.Context, sess *gatehouse.Session, hash string) (*gatehouse.Key, error) {
	notFound := gatehouse.Errorf(gatehouse.ENOTFOUND, "There is no such key, or it is not yours to see.")
	if !gatehouse.IsKeyHash(hash) {
		return nil, notFound
	}
	k, err := s.store.FindKey(gatehouse.WithFreshReads(ctx), sess.OrganizationID, hash)
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND || err == nil && !sess.MayManageKey(k) {
		return nil, notFound
	}
	return k, err
}

// key shows a key: its figures, its edit form, its usage chart.
func (s *Server) key(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	k, err := s.findKey(r.Context(), sess, r.PathValue("hash"))
	if err != nil {
		return err
	}
	return s.keyPage(w, r, sess, http.StatusOK, k, keyForm(k))
}

// keyForm is the edit form of a key as it is.
func keyForm(k *gatehouse.Key) *form {
	f := emptyForm()
	f.Values.Set("name", k.Name)
	if k.Limit != nil {
		f.Values.Set("limit", k.Limit.String())
	}
	f.Values.Set("limit_reset", string(k.LimitReset))
	f.Values.Set("expires_at", expiryDay(k.ExpiresAt))
	return f
}

// expiryDay is the last day a key works as the form shows it: the day of
// the instant before its expiry (a key that expires at midnight works the
// whole day before).
func expiryDay(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.Add(-time.Nanosecond).UTC().Format("2006-01-02")
}

// keyPage renders a key's page with the edit form f.
func (s *Server) keyPage(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, status int, k *gatehouse.Key, f *form) error {
	ctx := r.Context()
	d := activityDays(s.now())
	filters := []gatehouse.AnalyticsFilter{{Field: "api_key_id", Operator: "eq", Values: []string{k.Hash}}}
	t, c, err := s.usageByModel(ctx, sess, d, filters)
	if err != nil {
		return err
	}
	allowed, err := s.keyWorkspaces(ctx, sess)
	if err != nil {
		return err
	}
	data := keyData{Row: newKeyRow(k, workspaceNames(allowed), s.now()), Form: f, Chart: c, Locked: !sess.MayChangeKey(k, allowed)}
	data.Spend, data.Requests, data.Tokens = t.since(d, d.first)
	return s.render(w, r, sess, status, "key", k.Name, data)
}

// updateKey changes what the form changed of a key's name, limit, reset
// and expiry.
func (s *Server) updateKey(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	k, err := s.findKey(r.Context(), sess, r.PathValue("hash"))
	if err != nil {
		return err
	}
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	u, err := keyUpdate(k, f)
	if err == nil {
		err = s.mayChangeKey(r.Context(), sess, k)
	}
	if err == nil {
		_, err = s.store.UpdateKey(r.Context(), sess.OrganizationID, k.Hash, u)
	}
	if err != nil {
		if err := f.withError(err, "name", "limit", "limit_reset", "expires_at"); err != nil {
			return err
		}
		return s.keyPage(w, r, sess, http.StatusBadRequest, k, f)
	}
	http.Redirect(w, r, "/keys/"+k.Hash+"?done=saved", http.StatusSeeOther)
	return nil
}

// mayChangeKey refuses (403) to enable or change a key of a workspace the
// session may no longer put keys in: a member removed from it keeps only
// the power to disable or delete their key.
func (s *Server) mayChangeKey(ctx context.Context, sess *gatehouse.Session, k *gatehouse.Key) error {
	allowed, err := s.keyWorkspaces(ctx, sess)
	if err != nil {
		return err
	}
	if !sess.MayChangeKey(k, allowed) {
		return gatehouse.Errorf(gatehouse.EFORBIDDEN, "You no longer belong to this key's workspace: you may disable or delete the key, not enable or change it. Ask an admin.")
	}
	return nil
}

// keyUpdate reads the edit form of key k: the fields whose value differs
// from k's (so that the audit log names what changed, and an expiry left
// as it was, even a past one, is not set again).
func keyUpdate(k *gatehouse.Key, f *form) (gatehouse.KeyUpdate, error) {
	var u gatehouse.KeyUpdate
	if name := f.get("name"); name != k.Name {
		u.Name = gatehouse.Val(name)
	}
	limit, err := f.money("limit")
	if err != nil {
		return u, err
	}
	if !sameMoney(limit, k.Limit) {
		u.Limit = patchOf(limit)
	}
	reset, err := f.interval("limit_reset")
	if err != nil {
		return u, err
	}
	if reset != k.LimitReset {
		u.LimitReset = gatehouse.Val(reset)
	}
	if f.get("expires_at") != expiryDay(k.ExpiresAt) {
		expires, err := f.date("expires_at")
		if err != nil {
			return u, err
		}
		u.ExpiresAt = patchOf(expires)
	}
	return u, nil
}

// patchOf sets a field to v, or to null when v is nil.
func patchOf[T any](v *T) gatehouse.Patch[T] {
	if v == nil {
		return gatehouse.Null[T]()
	}
	return gatehouse.Val(*v)
}

func sameMoney(a, b *gatehouse.Money) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// disableKey stops a key at once; enableKey lets it make requests again.
func (s *Server) disableKey(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	return s.setDisabled(w, r, sess, true, "disabled")
}

func (s *Server) enableKey(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	return s.setDisabled(w, r, sess, false, "enabled")
}

func (s *Server) setDisabled(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, disabled bool, done string) error {
	k, err := s.findKey(r.Context(), sess, r.PathValue("hash"))
	if err != nil {
		return err
	}
	if !disabled {
		if err := s.mayChangeKey(r.Context(), sess, k); err != nil {
			return err
		}
	}
	if _, err := s.store.UpdateKey(r.Context(), sess.OrganizationID, k.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(disabled)}); err != nil {
		return err
	}
	http.Redirect(w, r, "/keys/"+k.Hash+"?done="+done, http.StatusSeeOther)
	return nil
}

// deleteKey deletes a key once its form's confirmation box is ticked.
func (s *Server) deleteKey(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	k, err := s.findKey(r.Context(), sess, r.PathValue("hash"))
	if err != nil {
		return err
	}
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	if f.get("confirm") != "yes" {
		f.Errors["confirm"] = "Tick the box to confirm: a deleted key cannot be brought back."
		return s.keyPage(w, r, sess, http.StatusBadRequest, k, keyForm(k).merge(f))
	}
	if err := s.store.DeleteKey(r.Context(), sess.OrganizationID, k.Hash); err != nil {
		return err
	}
	http.Redirect(w, r, "/keys?done=deleted", http.StatusSeeOther)
	return nil
}
