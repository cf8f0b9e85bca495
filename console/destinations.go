package console

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"gatehouse"
)

// destinationsPageSize is how many destinations a page of the list shows.
const destinationsPageSize = 50

// destinationsData is the data of the destinations page: one workspace's
// destinations, and the choice of a type to add one.
type destinationsData struct {
	Workspace    *gatehouse.Workspace
	Workspaces   []option
	Destinations []destinationRow
	Total        int
	Prev, Next   string
	Types        []option
}

// destinationRow is a destination as the list shows it.
type destinationRow struct {
	*gatehouse.Destination
	TypeName string
	// Sampled is the share of requests traced, in per cent.
	Sampled string
}

// destinations lists the live destinations of a workspace (?workspace=,
// the default one without it).
func (s *Server) destinations(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	ctx := r.Context()
	ws, choices, err := s.chosenWorkspace(ctx, sess, r.URL.Query().Get("workspace"))
	if err != nil {
		return err
	}
	offset := offsetParam(r)
	list, total, err := s.store.FindDestinations(ctx, sess.OrganizationID, ws.ID, gatehouse.Page{Offset: offset, Limit: destinationsPageSize})
	if err != nil {
		return err
	}
	data := destinationsData{Workspace: ws, Workspaces: choices, Total: total, Types: destinationTypeOptions("webhook")}
	for _, d := range list {
		data.Destinations = append(data.Destinations, destinationRow{Destination: d, TypeName: destinationTypeName(d.Type),
			Sampled: strconv.FormatFloat(d.SamplingRate*100, 'f', -1, 64) + "%"})
	}
	data.Prev, data.Next = pageLinks("/destinations", url.Values{"workspace": {ws.ID}}, offset, len(list), total, destinationsPageSize)
	return s.render(w, r, sess, http.StatusOK, "destinations", "Observability destinations", data)
}

// destinationData is the data of a destination's form: a new one's (of
// Type, in Workspace) or an existing one's (Destination set).
type destinationData struct {
	Destination *gatehouse.Destination
	Workspace   *gatehouse.Workspace
	Type        string
	TypeName    string
	Config      []configField
	Form        *form
	Delete      *form
	HeadersHint string
	// Delivery is how deliveries to it have gone; Test what its service
	// answered the test event just sent. Nil when not known.
	Delivery *gatehouse.DeliveryStatus
	Test     *gatehouse.DeliveryTest
}

// newDestination shows the form of a new destination of the chosen type.
func (s *Server) newDestination(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	q := r.URL.Query()
	return s.newDestinationPage(w, r, sess, http.StatusOK, q.Get("type"), q.Get("workspace"), emptyForm())
}

func (s *Server) newDestinationPage(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, status int, typ, workspace string, f *form) error {
	ws, _, err := s.chosenWorkspace(r.Context(), sess, workspace)
	if err != nil {
		return err
	}
	fields := configFields(typ, nil)
	if fields == nil {
		return gatehouse.Errorf(gatehouse.ENOTFOUND, "There is no destination type %q.", typ)
	}
	if len(f.Values) == 0 {
		f.Values.Set("enabled", "on")
		f.Values.Set("sampling_rate", "1")
		for _, c := range fields {
			if c.Choices != nil {
				f.Values.Set(c.Name(), c.Default)
			}
		}
	}
	data := destinationData{Workspace: ws, Type: typ, TypeName: destinationTypeName(typ), Config: fields, Form: f,
		HeadersHint: "Sent with every delivery, one a line, as Name: value (such as X-Team: search). Kept as secrets"}
	return s.render(w, r, sess, status, "destination", "New "+data.TypeName+" destination", data)
}

// createDestination creates a destination as the API does (the egress
// policy checked, the trace publisher told: gatehouse.Destinations).
func (s *Server) createDestination(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	typ, workspace := f.get("type"), f.get("workspace_id")
	fields := configFields(typ, nil)
	if fields == nil {
		return gatehouse.Errorf(gatehouse.EINVALID, "There is no destination type %q.", typ)
	}
	c := gatehouse.DestinationCreate{Type: typ, WorkspaceID: workspace}
	c.DestinationUpdate, err = destinationUpdate(nil, typ, f)
	var d *gatehouse.Destination
	if err == nil {
		d, err = s.opts.Destinations.Create(r.Context(), sess.OrganizationID, c)
	}
	if err != nil {
		if err := destinationFormError(f, err, fields, ""); err != nil {
			return err
		}
		return s.newDestinationPage(w, r, sess, http.StatusBadRequest, typ, workspace, f)
	}
	http.Redirect(w, r, "/destinations/"+d.ID+"?done=created", http.StatusSeeOther)
	return nil
}

// destinationUpdate reads a destination's form: of a new destination of
// type typ when d is nil, else the fields whose value differs from d's. A
// secret field left empty keeps the stored secret; nothing of a secret is
// ever put back in a page, so an empty field is how every form shows one.
func destinationUpdate(d *gatehouse.Destination, typ string, f *form) (gatehouse.DestinationUpdate, error) {
	var u gatehouse.DestinationUpdate
	if name := f.get("name"); d == nil || name != deref(d.Name) {
		u.Name = gatehouse.Val(name)
	}
	p, err := configPatch(d, typ, f)
	if err != nil {
		return u, err
	}
	if d == nil || len(p.Values) > 0 || p.HeadersSet {
		u.Config = p
	}
	enabled, private := f.get("enabled") == "on", f.get("privacy_mode") == "on"
	if d == nil || enabled != d.Enabled {
		u.Enabled = gatehouse.Val(enabled)
	}
	if d == nil || private != d.PrivacyMode {
		u.PrivacyMode = gatehouse.Val(private)
	}
	rate, err := strconv.ParseFloat(f.get("sampling_rate"), 64)
	if err != nil {
		return u, gatehouse.FieldError("sampling_rate", "must be a number between 0.0001 and 1, such as 0.25")
	}
	if d == nil || rate != d.SamplingRate {
		u.SamplingRate = gatehouse.Val(rate)
	}
	return u, nil
}

// configPatch reads the configuration fields of the form: every value
// given for a new destination; for d, the values that changed, a secret
// only when one is typed (or, for an optional one, when its clear box is
// ticked), the headers only when their text changed.
func configPatch(d *gatehouse.Destination, typ string, f *form) (*gatehouse.ConfigPatch, error) {
	p := &gatehouse.ConfigPatch{Values: map[string]*string{}}
	for _, c := range configFields(typ, d) {
		v := f.get(c.Name())
		switch {
		case c.Secret && v != "":
			p.Values[c.Key] = &v
		case c.Secret:
			if d != nil && !c.Required && c.Stored != "" && f.get("clear."+c.Key) == "on" {
				p.Values[c.Key] = nil
			}
		case d == nil:
			if v != "" {
				p.Values[c.Key] = &v
			}
		case v != d.Config.Values[c.Key]:
			p.Values[c.Key] = optional(v) // an optional key emptied takes its default again
		}
	}
	text := strings.TrimSpace(f.Values.Get("headers"))
	if d != nil && text == headersText(d) {
		return p, nil
	}
	headers, err := parseHeaders(text)
	if err != nil {
		return nil, err
	}
	if d != nil || headers != nil {
		p.Headers, p.HeadersSet = headers, true
	}
	return p, nil
}

// headersText is how a form shows a destination's headers: their names,
// each value masked. A line left so keeps the stored value (the domain
// reads a masked value sent back as unchanged).
func headersText(d *gatehouse.Destination) string {
	shown := d.ShownConfig().Headers
	names := make([]string, 0, len(shown))
	for name := range shown {
		names = append(names, name)
	}
	slices.Sort(names)
	lines := make([]string, len(names))
	for i, name := range names {
		lines[i] = name + ": " + shown[name]
	}
	return strings.Join(lines, "\n")
}

// parseHeaders reads headers typed one a line as "Name: value"; nil for
// none.
func parseHeaders(text string) (map[string]string, error) {
	var out map[string]string
	for i, line := range splitLines(text) {
		name, value, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, gatehouse.FieldError("headers", "line %d: write each header as Name: value", i+1)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[strings.TrimSpace(name)] = strings.TrimSpace(value)
	}
	return out, nil
}

// destinationFormError records a refused change on the form (see
// form.withError), whose headers come back as stored (their values
// masked). When the domain asks for stored secrets again (the
// change moves where the destination connects, or its secrets cannot be
// opened any more), each is marked on its field and the form says why in
// plain words.
func destinationFormError(f *form, err error, fields []configField, stored string) error {
	if err := destinationErrorOn(f, err, fields); err != nil {
		return err
	}
	// The form comes back without the header values typed (they are
	// secrets): as they are stored, or none for a new destination.
	if typed := strings.TrimSpace(f.Values.Get("headers")); typed != stored {
		f.Values.Set("headers", stored)
		if f.Errors["headers"] == "" {
			f.Errors["headers"] = "Type the headers again: their values are secrets, never shown back."
		}
	}
	return nil
}

// destinationErrorOn puts a refused change's error on the form.
func destinationErrorOn(f *form, err error, fields []configField) error {
	if e, ok := errors.AsType[*gatehouse.Error](err); ok {
		if needed, _ := e.Metadata["secrets_required"].([]string); len(needed) > 0 {
			for _, n := range needed {
				if header, ok := strings.CutPrefix(n, "config.headers."); ok {
					f.Errors["headers"] = "Type the value of " + header + " again."
				} else {
					f.Errors[n] = "Type it again."
				}
			}
			f.Error = "Gatehouse sends a stored secret only where it was set to go. "
			if changed, _ := e.Metadata["changed"].([]string); len(changed) > 0 {
				f.Error += "This change moves where the destination sends its data (" + strings.Join(changed, ", ") + "), so type the secrets marked below again, in this same form."
			} else {
				f.Error += "The server's secret key changed and the stored secrets cannot be opened: type the secrets marked below again."
			}
			return nil
		}
	}
	if e, ok := errors.AsType[*gatehouse.Error](err); ok && e.Code == gatehouse.EINVALID {
		if field, _ := e.Metadata["field"].(string); strings.HasPrefix(field, "config.headers") {
			f.Errors["headers"] = e.Message
			return nil
		}
	}
	var names []string
	for _, c := range fields {
		names = append(names, c.Name())
	}
	// "config" last: it would take the errors of its keys.
	return f.withError(err, append(names, "name", "type", "sampling_rate", "enabled", "privacy_mode", "config")...)
}
