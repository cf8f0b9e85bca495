package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"gatehouse"
)

// auditPageSize is how many entries a page of the audit log shows.
const auditPageSize = 50

// auditData is the data of the audit log's page.
type auditData struct {
	Filter     *form
	Operations []option
	Resources  []option
	Entries    []auditRow
	// Next is the link to the next page, "" on the last; First the link
	// to the first page when this is not it.
	Next, First string
}

// auditRow is an entry as the page shows it.
type auditRow struct {
	*gatehouse.AuditEntry
	// Actor names who made the change for people.
	Actor string
	// Resources are the entry's ids, each with a link to its page when
	// the console has one.
	Resources []resourceLink
	Details   string
}

// resourceLink is an id of an entry, linked to its page ("" for none).
type resourceLink struct {
	ID, Link string
}

// auditLog shows the organization's audit log, newest first, filtered by
// actor (an email, a user id or a key hash), operation, resource type and
// UTC days, a page at a time by cursor: the filters of the API's GET
// /audit-log, read by SearchAuditEntries (which neither counts nor skips,
// so that a page costs what the first does in millions of entries).
func (s *Server) auditLog(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	ctx := r.Context()
	q := r.URL.Query()
	f := emptyForm()
	for _, k := range []string{"actor", "operation", "resource_type", "since", "until"} {
		if v := strings.TrimSpace(q.Get(k)); v != "" {
			f.Values.Set(k, v)
		}
	}
	data := auditData{Filter: f, Operations: anyOption("any operation", gatehouse.AuditOperations()),
		Resources: anyOption("any resource", gatehouse.AuditResourceTypes())}
	filter, err := s.auditFilter(ctx, sess, f)
	if err != nil {
		if err := f.withError(err, "actor", "operation", "resource_type", "since", "until"); err != nil {
			return err
		}
		return s.render(w, r, sess, http.StatusBadRequest, "audit", "Audit log", data)
	}
	filter.Page.Limit = auditPageSize
	if after := q.Get("after"); after != "" {
		if filter.After, err = gatehouse.ParseAuditCursor(after); err != nil {
			return err
		}
		data.First = "/audit"
		if len(f.Values) > 0 {
			data.First += "?" + f.Values.Encode()
		}
	}
	page, err := s.store.SearchAuditEntries(ctx, sess.OrganizationID, filter)
	if err != nil {
		return err
	}
	if data.Entries, err = s.auditRows(ctx, sess, page.Entries); err != nil {
		return err
	}
	if page.Next != nil {
		v := cloneValues(f.Values)
		v.Set("after", page.Next.String())
		data.Next = "/audit?" + v.Encode()
	}
	return s.render(w, r, sess, http.StatusOK, "audit", "Audit log", data)
}

// anyOption are the choices of a filter: any, then values.
func anyOption(label string, values []string) []option {
	return append([]option{{Value: "", Label: label}}, plainOptions(values)...)
}

// auditFilter reads the filter form: an actor given by email is the
// member's user id; days are UTC, both ends included.
func (s *Server) auditFilter(ctx context.Context, sess *gatehouse.Session, f *form) (gatehouse.AuditFilter, error) {
	filter := gatehouse.AuditFilter{Actor: f.get("actor"), Operation: f.get("operation"), ResourceType: f.get("resource_type")}
	if strings.Contains(filter.Actor, "@") {
		members, err := s.store.FindMembersByRef(ctx, sess.OrganizationID, []string{filter.Actor})
		if err != nil {
			return filter, err
		}
		if len(members) == 0 {
			return filter, gatehouse.FieldError("actor", "no member has this email")
		}
		filter.Actor = members[0].ID
	}
	if filter.Operation != "" && !slices.Contains(gatehouse.AuditOperations(), filter.Operation) {
		return filter, gatehouse.FieldError("operation", "is not an operation of the audit log")
	}
	var err error
	if filter.Since, err = dayStart(f, "since"); err != nil {
		return filter, err
	}
	if filter.Until, err = f.date("until"); err != nil { // the end of that day
		return filter, err
	}
	return filter, nil
}

// dayStart reads an optional date as the start of that UTC day.
func dayStart(f *form, name string) (*time.Time, error) {
	end, err := f.date(name)
	if err != nil || end == nil {
		return nil, err
	}
	start := end.AddDate(0, 0, -1)
	return &start, nil
}

// auditRows names the actors of entries (members by email, keys by name)
// and links their resources.
func (s *Server) auditRows(ctx context.Context, sess *gatehouse.Session, entries []*gatehouse.AuditEntry) ([]auditRow, error) {
	var users []string
	for _, e := range entries {
		if e.ActorUserID != nil && !slices.Contains(users, *e.ActorUserID) {
			users = append(users, *e.ActorUserID)
		}
	}
	members, err := s.store.FindMembersByRef(ctx, sess.OrganizationID, users)
	if err != nil {
		return nil, err
	}
	emails := map[string]string{}
	for _, m := range members {
		emails[m.ID] = m.Email
	}
	keys := map[string]string{}
	out := make([]auditRow, len(entries))
	for i, e := range entries {
		out[i] = auditRow{AuditEntry: e, Actor: s.actorName(ctx, sess, e, emails, keys), Details: auditDetails(e.Details)}
		for _, id := range e.ResourceIDs {
			out[i].Resources = append(out[i].Resources, resourceLink{ID: id, Link: resourcePage(e.ResourceType, id)})
		}
	}
	return out, nil
}

// systemActors name what acts when no key and no member does.
var systemActors = map[string]string{
	gatehouse.ActorFirstStart:  "the server's first start",
	gatehouse.ActorKeyExchange: "an application's key exchange",
	gatehouse.ActorVisitor:     "a visitor (not signed in)",
}

// actorName names who made an entry's change: a member by email, a key
// by its name (keys memoizes the names looked up), what acted when
// neither did, the command line.
func (s *Server) actorName(ctx context.Context, sess *gatehouse.Session, e *gatehouse.AuditEntry, emails, keys map[string]string) string {
	switch {
	case e.ActorSystem != nil && e.ActorKeyHash == nil && e.ActorUserID == nil:
		if name := systemActors[*e.ActorSystem]; name != "" {
			return name
		}
		return *e.ActorSystem
	case e.ActorUserID != nil && e.ActorKeyHash == nil:
		if email := emails[*e.ActorUserID]; email != "" {
			return email + " (console)"
		}
		return *e.ActorUserID + " (console)"
	case e.ActorKeyHash != nil:
		h := *e.ActorKeyHash
		if _, seen := keys[h]; !seen {
			keys[h] = "key " + h[:min(len(h), 12)] // a key deleted since
			if k, err := s.store.FindKeyByHash(ctx, h); err == nil && k.OrganizationID == sess.OrganizationID {
				keys[h] = "key “" + k.Name + "”"
				if k.Management {
					keys[h] = "management " + keys[h]
				}
			}
		}
		if e.ActorUserID != nil && emails[*e.ActorUserID] != "" {
			return keys[h] + " of " + emails[*e.ActorUserID]
		}
		return keys[h]
	}
	return "the command line"
}

// resourcePage is the console's page of a resource, "" when it has none.
func resourcePage(typ, id string) string {
	switch typ {
	case gatehouse.ResourceKey:
		if gatehouse.IsKeyHash(id) {
			return "/keys/" + id
		}
	case gatehouse.ResourceWorkspace:
		return "/workspaces/" + url.PathEscape(id)
	case gatehouse.ResourceGuardrail:
		return "/guardrails/" + url.PathEscape(id)
	case gatehouse.ResourceDestination:
		return "/destinations/" + url.PathEscape(id)
	}
	return ""
}

// auditDetails shows an entry's details (field names, ids and counts,
// never values) as "name: value" pairs in name order.
func auditDetails(d map[string]any) string {
	names := make([]string, 0, len(d))
	for k := range d {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		v := d[k]
		if list, ok := v.([]any); ok {
			items := make([]string, len(list))
			for j, it := range list {
				items[j] = fmt.Sprint(it)
			}
			v = strings.Join(items, ", ")
		}
		parts[i] = k + ": " + fmt.Sprint(v)
	}
	return strings.Join(parts, " · ")
}
