package scim

import (
	"net/http"
	"strings"

	"gatehouse"

	"github.com/elimity-com/scim"
	"github.com/elimity-com/scim/optional"
)

// userHandler serves /Users: the organization's members. Gatehouse keeps
// userName, externalId, displayName, name.givenName and name.familyName,
// one email (the member's) and active; the other attributes a provider
// sends are accepted and not kept (a password never is).
type userHandler struct{ h *Handler }

// userResource is a member as SCIM shows it.
func userResource(u *gatehouse.SCIMUser) scim.Resource {
	attrs := scim.ResourceAttributes{
		"userName": u.UserName,
		"active":   !u.Deactivated,
		"emails":   []any{map[string]any{"value": u.Email, "type": "work", "primary": true}},
	}
	name := map[string]any{}
	if u.FirstName != nil {
		name["givenName"] = *u.FirstName
	}
	if u.LastName != nil {
		name["familyName"] = *u.LastName
	}
	if len(name) > 0 {
		attrs["name"] = name
	}
	if u.DisplayName != nil {
		attrs["displayName"] = *u.DisplayName
	}
	groups := make([]any, 0, len(u.Groups))
	for _, g := range u.Groups {
		groups = append(groups, map[string]any{"value": g.ID, "display": g.DisplayName, "$ref": "Groups/" + g.ID})
	}
	attrs["groups"] = groups
	created, modified := u.CreatedAt, u.UpdatedAt
	r := scim.Resource{ID: u.ID, Attributes: attrs, Meta: scim.Meta{Created: &created, LastModified: &modified}}
	if u.ExternalID != nil {
		r.ExternalID = optional.NewString(*u.ExternalID)
	}
	return r
}

// userWrite reads a whole user (POST, PUT) into w, which holds what a
// missing attribute leaves: active stays as it is when not given (a PUT
// that leaves it out does not deactivate anyone).
func userWrite(attrs scim.ResourceAttributes, w *gatehouse.SCIMUserWrite) {
	w.UserName, _ = attrs["userName"].(string)
	w.ExternalID = optionalString(attrs["externalId"])
	w.DisplayName = optionalString(attrs["displayName"])
	name, _ := attrs["name"].(map[string]any)
	w.GivenName, w.FamilyName = optionalString(name["givenName"]), optionalString(name["familyName"])
	w.Email = primaryEmail(attrs["emails"])
	if a, ok := attrs["active"].(bool); ok {
		w.Active = a
	}
}

// optionalString is a string attribute's value, nil when absent or empty.
func optionalString(v any) *string {
	if s, ok := v.(string); ok && s != "" {
		return &s
	}
	return nil
}

// primaryEmail picks the member's email from a list of emails: the primary
// one, else the work one, else the first.
func primaryEmail(v any) string {
	list, _ := v.([]any)
	var work, first string
	for _, e := range list {
		m, _ := e.(map[string]any)
		value, _ := m["value"].(string)
		if value == "" {
			continue
		}
		if p, _ := m["primary"].(bool); p {
			return value
		}
		if t, _ := m["type"].(string); strings.EqualFold(t, "work") && work == "" {
			work = value
		}
		if first == "" {
			first = value
		}
	}
	if work != "" {
		return work
	}
	return first
}

func (u *userHandler) Create(r *http.Request, attrs scim.ResourceAttributes) (scim.Resource, error) {
	w := gatehouse.SCIMUserWrite{Active: true}
	userWrite(attrs, &w)
	user, err := u.h.store.CreateSCIMUser(r.Context(), org(r), w)
	if err != nil {
		return scim.Resource{}, u.h.scimError(r, err)
	}
	return userResource(user), nil
}

func (u *userHandler) Get(r *http.Request, id string) (scim.Resource, error) {
	user, err := u.h.store.FindSCIMUser(r.Context(), org(r), id)
	if err != nil {
		return scim.Resource{}, u.h.scimError(r, err)
	}
	return userResource(user), nil
}

func (u *userHandler) GetAll(r *http.Request, params scim.ListRequestParams) (scim.Page, error) {
	f := gatehouse.SCIMUserFilter{StartIndex: params.StartIndex, Count: params.Count}
	exact := narrow(params.FilterValidator, map[string]*string{"id": &f.ID, "username": &f.UserName, "externalid": &f.ExternalID})
	if !exact {
		return u.filtered(r, params)
	}
	users, total, err := u.h.store.FindSCIMUsers(r.Context(), org(r), f)
	if err != nil {
		return scim.Page{}, u.h.scimError(r, err)
	}
	page := scim.Page{TotalResults: total, Resources: []scim.Resource{}}
	for _, user := range users {
		page.Resources = append(page.Resources, userResource(user))
	}
	return page, nil
}

// filtered answers a filter that is not one exact match of a kept
// attribute by reading the organization's users (narrowed when the filter
// allows it) and keeping those that pass it.
func (u *userHandler) filtered(r *http.Request, params scim.ListRequestParams) (scim.Page, error) {
	var f gatehouse.SCIMUserFilter
	narrow(params.FilterValidator, map[string]*string{"id": &f.ID, "username": &f.UserName, "externalid": &f.ExternalID})
	var all []scim.Resource
	err := eachPage(func(start int) (int, error) {
		f.StartIndex, f.Count = start, gatehouse.MaxPageSize
		users, _, err := u.h.store.FindSCIMUsers(r.Context(), org(r), f)
		for _, user := range users {
			res := userResource(user)
			if params.FilterValidator.PassesFilter(filterable(res)) == nil {
				all = append(all, res)
			}
		}
		return len(users), err
	})
	if err != nil {
		return scim.Page{}, u.h.scimError(r, err)
	}
	return window(all, params.StartIndex, params.Count), nil
}

func (u *userHandler) Replace(r *http.Request, id string, attrs scim.ResourceAttributes) (scim.Resource, error) {
	user, err := u.h.store.UpdateSCIMUser(r.Context(), org(r), id, func(w *gatehouse.SCIMUserWrite) error {
		*w = gatehouse.SCIMUserWrite{Active: w.Active}
		userWrite(attrs, w)
		return nil
	})
	if err != nil {
		return scim.Resource{}, u.h.scimError(r, err)
	}
	return userResource(user), nil
}

func (u *userHandler) Delete(r *http.Request, id string) error {
	if err := u.h.store.DeleteSCIMUser(r.Context(), org(r), id); err != nil {
		return u.h.scimError(r, err)
	}
	return nil
}

func (u *userHandler) Patch(r *http.Request, id string, ops []scim.PatchOperation) (scim.Resource, error) {
	user, err := u.h.store.UpdateSCIMUser(r.Context(), org(r), id, func(w *gatehouse.SCIMUserWrite) error {
		for _, op := range ops {
			if err := patchUser(w, op); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return scim.Resource{}, u.h.scimError(r, err)
	}
	return userResource(user), nil
}
