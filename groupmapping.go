package gatehouse

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Group mappings: what an identity provider's groups give their members in
// an organization (a role, workspaces). The store applies them whenever a
// member's groups or the mappings change (see SSOService).

// GroupMapping gives the members of an identity provider's group an
// organization role and workspace memberships. Group is the group as the
// provider names it: a value of the groups claim, or a SCIM group's
// displayName, externalId or id.
type GroupMapping struct {
	ID             string
	OrganizationID string
	Group          string
	// Role is the organization role the group gives, "" for none.
	Role         string
	WorkspaceIDs []string // sorted
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// GroupMappingUpdate holds the fields of a mapping's create or update;
// unset fields stay unchanged; role null gives no role; workspace_ids is
// replaced whole.
type GroupMappingUpdate struct {
	Group        Patch[string]   `json:"group"`
	Role         Patch[string]   `json:"role"`
	WorkspaceIDs Patch[[]string] `json:"workspace_ids"`
}

// MaxGroupMappings bounds the mappings of an organization.
const MaxGroupMappings = 1000

// ValidateGroupName checks a group's name in the named field.
func ValidateGroupName(field, g string) error {
	if strings.TrimSpace(g) == "" || len(g) > MaxGroupNameLength {
		return FieldError(field, "must be 1 to %d bytes", MaxGroupNameLength)
	}
	if !IsPlainText(g) {
		return FieldError(field, "must be UTF-8 text without NUL characters")
	}
	return CheckDisplayText(field, g, false)
}

// NewGroupMapping returns a mapping built from a create request, validated:
// group is required, and it must give a role or a workspace.
func NewGroupMapping(c GroupMappingUpdate) (*GroupMapping, error) {
	if !c.Group.Set || c.Group.Null {
		return nil, FieldError("group", "is required: the group as the identity provider names it")
	}
	m := &GroupMapping{}
	return m, m.Apply(c)
}

// Apply validates u and applies it to m. Whether the workspaces exist (and
// are not the default one, which holds every member anyway) is the store's
// to check.
func (m *GroupMapping) Apply(u GroupMappingUpdate) error {
	if u.Group.Null {
		return FieldError("group", "must not be null")
	}
	if u.Group.Set {
		if err := ValidateGroupName("group", u.Group.Value); err != nil {
			return err
		}
		m.Group = u.Group.Value
	}
	if u.Role.Set {
		m.Role = ""
		if !u.Role.Null {
			if err := ValidateRole("role", u.Role.Value, false); err != nil {
				return FieldError("role", "must be %s, %s or null", RoleAdmin, RoleMember)
			}
			m.Role = u.Role.Value
		}
	}
	if u.WorkspaceIDs.Null {
		return FieldError("workspace_ids", "must not be null: send [] for no workspace")
	}
	if u.WorkspaceIDs.Set {
		ids, err := validateWorkspaceIDs(u.WorkspaceIDs.Value)
		if err != nil {
			return err
		}
		m.WorkspaceIDs = ids
	}
	if m.Role == "" && len(m.WorkspaceIDs) == 0 {
		return Errorf(EINVALID, "a mapping gives a role, workspaces or both: set role or workspace_ids")
	}
	return nil
}

func validateWorkspaceIDs(ids []string) ([]string, error) {
	if len(ids) > MaxBulkIDs {
		return nil, FieldError("workspace_ids", "must have at most %d entries", MaxBulkIDs)
	}
	out := []string{}
	for i, ref := range ids {
		id, _, ok := ParseWorkspaceRef(ref)
		if !ok || id == "" {
			return nil, FieldError(fmt.Sprintf("workspace_ids[%d]", i), "must be a workspace id (a UUID)")
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// GroupAccess is what a member's groups give: an organization role, and
// workspace memberships.
type GroupAccess struct {
	// Role is the member's role: RoleAdmin when a group of theirs gives
	// it, else RoleMember; "" when no mapping of the organization gives a
	// role at all (roles are then not the groups' to decide).
	Role         string
	WorkspaceIDs []string // sorted
}

// ResolveGroupAccess returns what mappings give a member in the groups
// they map: the highest role any gives (admin over member), and every
// workspace any gives. rolesGoverned says that some mapping of the
// organization gives a role: then a member whom none of theirs gives one
// is a member.
func ResolveGroupAccess(mappings []*GroupMapping, rolesGoverned bool) GroupAccess {
	var a GroupAccess
	if rolesGoverned {
		a.Role = RoleMember
	}
	for _, m := range mappings {
		if m.Role == RoleAdmin {
			a.Role = RoleAdmin
		}
		a.WorkspaceIDs = append(a.WorkspaceIDs, m.WorkspaceIDs...)
	}
	slices.Sort(a.WorkspaceIDs)
	a.WorkspaceIDs = slices.Compact(a.WorkspaceIDs)
	return a
}
