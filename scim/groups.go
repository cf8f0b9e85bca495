package scim

import (
	"net/http"
	"strings"

	"gatehouse"

	"github.com/elimity-com/scim"
	"github.com/elimity-com/scim/optional"
)

// groupHandler serves /Groups: the groups the provider pushes, whose
// members the group mappings give roles and workspaces.
type groupHandler struct{ h *Handler }

// groupResource is a group as SCIM shows it; without members when asked to
// leave them out.
func groupResource(g *gatehouse.SCIMGroup, withMembers bool) scim.Resource {
	attrs := scim.ResourceAttributes{"displayName": g.DisplayName}
	if withMembers {
		members := make([]any, 0, len(g.Members))
		for _, m := range g.Members {
			members = append(members, map[string]any{"value": m.UserID, "display": m.Display, "$ref": "Users/" + m.UserID})
		}
		attrs["members"] = members
	}
	created, modified := g.CreatedAt, g.UpdatedAt
	r := scim.Resource{ID: g.ID, Attributes: attrs, Meta: scim.Meta{Created: &created, LastModified: &modified}}
	if g.ExternalID != nil {
		r.ExternalID = optional.NewString(*g.ExternalID)
	}
	return r
}

// withoutMembers reports whether the request leaves members out
// (excludedAttributes=members, as Entra ID sends).
func withoutMembers(r *http.Request) bool {
	for a := range strings.SplitSeq(r.URL.Query().Get("excludedAttributes"), ",") {
		if strings.EqualFold(strings.TrimSpace(a), "members") {
			return true
		}
	}
	return false
}

// groupWrite reads a whole group (POST, PUT).
func groupWrite(attrs scim.ResourceAttributes) gatehouse.SCIMGroupWrite {
	name, _ := attrs["displayName"].(string)
	return gatehouse.SCIMGroupWrite{DisplayName: name, ExternalID: optionalString(attrs["externalId"]), MemberIDs: memberIDs(attrs["members"])}
}

func (g *groupHandler) Create(r *http.Request, attrs scim.ResourceAttributes) (scim.Resource, error) {
	group, err := g.h.store.CreateSCIMGroup(r.Context(), org(r), groupWrite(attrs))
	if err != nil {
		return scim.Resource{}, g.h.scimError(r, err)
	}
	return groupResource(group, true), nil
}

func (g *groupHandler) Get(r *http.Request, id string) (scim.Resource, error) {
	without := withoutMembers(r)
	group, err := g.h.store.FindSCIMGroup(r.Context(), org(r), id, without)
	if err != nil {
		return scim.Resource{}, g.h.scimError(r, err)
	}
	return groupResource(group, !without), nil
}

func (g *groupHandler) GetAll(r *http.Request, params scim.ListRequestParams) (scim.Page, error) {
	without := withoutMembers(r)
	f := gatehouse.SCIMGroupFilter{StartIndex: params.StartIndex, Count: params.Count, WithoutMembers: without}
	fields := map[string]*string{"id": &f.ID, "displayname": &f.DisplayName, "externalid": &f.ExternalID}
	if !narrow(params.FilterValidator, fields) {
		return g.filtered(r, params, f, without)
	}
	groups, total, err := g.h.store.FindSCIMGroups(r.Context(), org(r), f)
	if err != nil {
		return scim.Page{}, g.h.scimError(r, err)
	}
	page := scim.Page{TotalResults: total, Resources: []scim.Resource{}}
	for _, group := range groups {
		page.Resources = append(page.Resources, groupResource(group, !without))
	}
	return page, nil
}

// filtered answers any other filter (such as Entra ID's membership check,
// id eq "…" and members[value eq "…"]) by reading the groups the filter's
// exact matches narrow to, with their members, and keeping those that
// pass it.
func (g *groupHandler) filtered(r *http.Request, params scim.ListRequestParams, f gatehouse.SCIMGroupFilter, without bool) (scim.Page, error) {
	f.WithoutMembers = false
	var all []scim.Resource
	err := eachPage(func(start int) (int, error) {
		f.StartIndex, f.Count = start, gatehouse.MaxPageSize
		groups, _, err := g.h.store.FindSCIMGroups(r.Context(), org(r), f)
		for _, group := range groups {
			if params.FilterValidator.PassesFilter(filterable(groupResource(group, true))) == nil {
				all = append(all, groupResource(group, !without))
			}
		}
		return len(groups), err
	})
	if err != nil {
		return scim.Page{}, g.h.scimError(r, err)
	}
	return window(all, params.StartIndex, params.Count), nil
}

func (g *groupHandler) Replace(r *http.Request, id string, attrs scim.ResourceAttributes) (scim.Resource, error) {
	group, err := g.h.store.UpdateSCIMGroup(r.Context(), org(r), id, func(w *gatehouse.SCIMGroupWrite) error {
		*w = groupWrite(attrs)
		return nil
	})
	if err != nil {
		return scim.Resource{}, g.h.scimError(r, err)
	}
	return groupResource(group, true), nil
}

func (g *groupHandler) Delete(r *http.Request, id string) error {
	if err := g.h.store.DeleteSCIMGroup(r.Context(), org(r), id); err != nil {
		return g.h.scimError(r, err)
	}
	return nil
}

// Patch applies the operations and answers 204 No Content, as Entra ID and
// Okta expect of a group's PATCH (a group's members may be many).
func (g *groupHandler) Patch(r *http.Request, id string, ops []scim.PatchOperation) (scim.Resource, error) {
	_, err := g.h.store.UpdateSCIMGroup(r.Context(), org(r), id, func(w *gatehouse.SCIMGroupWrite) error {
		for _, op := range ops {
			if err := patchGroup(w, op); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return scim.Resource{}, g.h.scimError(r, err)
	}
	return scim.Resource{}, nil
}
