package console

import (
	"context"
	"net/http"
	"strconv"

	"gatehouse"
)

// findDestination returns the live destination of the path's {id}, or
// ENOTFOUND (a deleted one too).
func (s *Server) findDestination(ctx context.Context, sess *gatehouse.Session, id string) (*gatehouse.Destination, error) {
	notFound := gatehouse.Errorf(gatehouse.ENOTFOUND, "There is no such destination.")
	if !isUUID(id) {
		return nil, notFound
	}
	d, err := s.store.FindDestination(ctx, sess.OrganizationID, id)
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		return nil, notFound
	}
	return d, err
}

// destination shows a destination's edit form: its settings, its
// type's configuration with every secret masked, its deletion.
func (s *Server) destination(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	d, err := s.findDestination(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	return s.destinationPage(w, r, sess, http.StatusOK, d, destinationForm(d), emptyForm())
}

// testDestination sends the destination a test event and shows the page
// with what its service answered.
func (s *Server) testDestination(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	d, err := s.findDestination(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	if _, err := newForm(w, r); err != nil {
		return err
	}
	if s.opts.Deliveries == nil {
		return gatehouse.Errorf(gatehouse.EUNAVAILABLE, "This server delivers no traces.")
	}
	t, err := s.opts.Deliveries.TestDestination(r.Context(), d)
	if err != nil {
		return err
	}
	return s.destinationPageWith(w, r, sess, http.StatusOK, d, destinationForm(d), emptyForm(), t)
}

// destinationForm is the edit form of a destination as it is: no secret
// in it, the headers' values masked.
func destinationForm(d *gatehouse.Destination) *form {
	f := emptyForm()
	f.Values.Set("name", deref(d.Name))
	for _, c := range configFields(d.Type, d) {
		if !c.Secret {
			f.Values.Set(c.Name(), d.Config.Values[c.Key])
		}
	}
	f.Values.Set("headers", headersText(d))
	if d.Enabled {
		f.Values.Set("enabled", "on")
	}
	if d.PrivacyMode {
		f.Values.Set("privacy_mode", "on")
	}
	f.Values.Set("sampling_rate", strconv.FormatFloat(d.SamplingRate, 'f', -1, 64))
	return f
}

func (s *Server) destinationPage(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, status int, d *gatehouse.Destination, f, del *form) error {
	return s.destinationPageWith(w, r, sess, status, d, f, del, nil)
}

func (s *Server) destinationPageWith(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, status int, d *gatehouse.Destination, f, del *form, test *gatehouse.DeliveryTest) error {
	ws, err := s.store.FindWorkspace(r.Context(), sess.OrganizationID, d.WorkspaceID)
	if err != nil {
		return err
	}
	var delivery *gatehouse.DeliveryStatus
	if s.opts.Deliveries != nil {
		sts, err := s.opts.Deliveries.DeliveryStatuses(r.Context(), sess.OrganizationID, []string{d.ID})
		if err != nil {
			return err
		}
		st := sts[d.ID]
		delivery = &st
	}
	data := destinationData{Destination: d, Workspace: ws, Type: d.Type, TypeName: destinationTypeName(d.Type),
		Config: configFields(d.Type, d), Form: f, Delete: del, Delivery: delivery, Test: test,
		HeadersHint: "One a line, as Name: value. A stored value shows as ********: leave the line so to keep it, remove the line to remove the header"}
	title := deref(d.Name)
	if title == "" {
		title = data.TypeName + " destination"
	}
	return s.render(w, r, sess, status, "destination", title, data)
}

// updateDestination changes what the form changed, as the API does.
func (s *Server) updateDestination(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	d, err := s.findDestination(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	u, err := destinationUpdate(d, d.Type, f)
	if err == nil {
		_, err = s.opts.Destinations.Update(r.Context(), sess.OrganizationID, d.ID, u)
	}
	if err != nil {
		if err := destinationFormError(f, err, configFields(d.Type, d), headersText(d)); err != nil {
			return err
		}
		return s.destinationPage(w, r, sess, http.StatusBadRequest, d, f, emptyForm())
	}
	http.Redirect(w, r, "/destinations/"+d.ID+"?done=saved", http.StatusSeeOther)
	return nil
}

// deleteDestination deletes a destination (a soft delete, as the API's)
// once the form's box is ticked.
func (s *Server) deleteDestination(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	d, err := s.findDestination(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	if f.get("confirm") != "yes" {
		f.Errors["confirm"] = "Tick the box to confirm the deletion."
		return s.destinationPage(w, r, sess, http.StatusBadRequest, d, destinationForm(d), f)
	}
	if err := s.opts.Destinations.Delete(r.Context(), sess.OrganizationID, d.ID); err != nil {
		return err
	}
	http.Redirect(w, r, "/destinations?done=deleted&workspace="+d.WorkspaceID, http.StatusSeeOther)
	return nil
}
