package gatehouse

// What a console session may see and change. An admin (a member with
// RoleAdmin, or the session of a management key) governs the whole
// organization; a member sees and manages only the keys they created, and
// their usage, and puts keys only in the workspaces they belong to.

// KeyScope returns the member whose keys the session sees: nil for an
// admin (every key of the organization), else the member's id.
func (s *Session) KeyScope() *string {
	if s.IsAdmin() {
		return nil
	}
	if s.UserID == nil {
		return new("") // no member: nothing is theirs
	}
	return s.UserID
}

// MayManageKey reports whether the session may see and change k.
func (s *Session) MayManageKey(k *Key) bool {
	if k.OrganizationID != s.OrganizationID || k.Management {
		return false
	}
	scope := s.KeyScope()
	return scope == nil || k.CreatorUserID != nil && *k.CreatorUserID == *scope
}

// MayChangeKey reports whether the session may enable k or change its
// terms (name, limit, expiry), given the workspaces it may put keys in
// (allowed, as for ChooseWorkspace): a member removed from a key's
// workspace may still disable or delete their key, but not bring it back
// or extend it, as they could not create it there.
func (s *Session) MayChangeKey(k *Key, allowed []*Workspace) bool {
	if !s.MayManageKey(k) {
		return false
	}
	if s.IsAdmin() {
		return true
	}
	for _, w := range allowed {
		if w.ID == k.WorkspaceID {
			return true
		}
	}
	return false
}

// ChooseWorkspace returns the workspace that ref names (its id or slug;
// "" the default one) among those the session may put keys in (for an
// admin every workspace, for a member theirs: WorkspaceService's
// FindMemberWorkspaces). EINVALID naming the field otherwise.
func ChooseWorkspace(allowed []*Workspace, field, ref string) (*Workspace, error) {
	for _, w := range allowed {
		if ref == "" && w.IsDefault || ref != "" && (w.ID == ref || w.Slug == ref) {
			return w, nil
		}
	}
	return nil, FieldError(field, "is not a workspace you may use")
}
