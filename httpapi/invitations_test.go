package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"gatehouse"
	"gatehouse/httpapi"

	"github.com/google/go-cmp/cmp"
)

// invitationView is an invitation as the API shows it.
type invitationView struct {
	ID        string  `json:"id"`
	Email     string  `json:"email"`
	Role      string  `json:"role"`
	UserID    *string `json:"user_id"`
	CreatedBy *string `json:"created_by"`
	CreatedAt string  `json:"created_at"`
	ExpiresAt string  `json:"expires_at"`
	URL       string  `json:"url,omitempty"`
}

// invite creates an invitation with mgmt and returns it with its URL.
func (e *testEnv) invite(mgmt, email, role string) invitationView {
	e.t.Helper()
	body := map[string]any{"email": email}
	if role != "" {
		body["role"] = role
	}
	var out struct {
		Data invitationView `json:"data"`
	}
	e.do("POST", "/api/v1/organization/invitations", mgmt, body).want(e.t, http.StatusCreated).decode(e.t, &out)
	return out.Data
}

// invitations lists the pending invitations of mgmt's organization.
func (e *testEnv) invitations(mgmt string) []invitationView {
	e.t.Helper()
	var out struct {
		Data       []invitationView `json:"data"`
		TotalCount int              `json:"total_count"`
	}
	e.do("GET", "/api/v1/organization/invitations", mgmt, nil).want(e.t, http.StatusOK).decode(e.t, &out)
	if out.TotalCount != len(out.Data) {
		e.t.Fatalf("total_count %d, %d items", out.TotalCount, len(out.Data))
	}
	return out.Data
}

// linkToken returns the token of a link, checking its form.
func linkToken(t *testing.T, url string) string {
	t.Helper()
	token, ok := strings.CutPrefix(url, httpapi.DefaultPublicURL+"/invite/")
	if !ok || len(token) != 43 {
		t.Fatalf("url %q: want %s/invite/<43-character token>", url, httpapi.DefaultPublicURL)
	}
	return token
}

// TestInvitations: an invitation's link is shown once, lists without it,
// sets a password once, and can be revoked; its audit entry names it.
func TestInvitations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inv := e.invite(e.mgmt, " ada@example.com ", "org:admin")
	token := linkToken(t, inv.URL)
	now := testStart.UTC().Format("2006-01-02T15:04:05.000Z")
	want := invitationView{ID: gatehouse.AccountTokenID(token), Email: "ada@example.com", Role: "org:admin",
		CreatedAt: now, ExpiresAt: testStart.Add(gatehouse.InvitationTTL).UTC().Format("2006-01-02T15:04:05.000Z")}
	listed := want
	want.URL = inv.URL
	if diff := cmp.Diff(want, inv); diff != "" {
		t.Errorf("POST /organization/invitations (-want +got):\n%s", diff)
	}
	list := e.invitations(e.mgmt)
	if diff := cmp.Diff([]invitationView{listed}, list); diff != "" {
		t.Errorf("GET /organization/invitations (-want +got):\n%s", diff)
	}
	res := e.do("GET", "/api/v1/organization/invitations", e.mgmt, nil)
	if strings.Contains(string(res.Body), token) || strings.Contains(string(res.Body), "url") {
		t.Errorf("the list shows the link: %s", res.Body)
	}
	entries, _ := e.auditLog(e.mgmt, "?resource_type=invitation")
	if len(entries) != 1 || entries[0]["operation"] != "invitation.create" || strings.Contains(mustJSON(entries), token) {
		t.Errorf("audit entries of the invitation: %v", entries)
	}

	// The link sets the password, once.
	accounts := gatehouse.NewAccounts(e.db, e.clock.Now)
	m, err := accounts.AcceptInvitation(context.Background(), token, "correct horse battery")
	if err != nil || m.Email != "ada@example.com" || m.Role != gatehouse.RoleAdmin {
		t.Fatalf("AcceptInvitation = %+v, %v", m, err)
	}
	if _, err := accounts.AcceptInvitation(context.Background(), token, "correct horse battery"); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Errorf("a second use: %v", err)
	}
	if n := len(e.invitations(e.mgmt)); n != 0 {
		t.Errorf("%d invitations listed after the acceptance", n)
	}
	e.unchanged("inviting a member who has a password", func() {
		resWantError(t, e.do("POST", "/api/v1/organization/invitations", e.mgmt, map[string]any{"email": "ADA@example.com"}),
			http.StatusBadRequest, "email: ada@example.com is a member who has a password already")
	})

	// Revoked: the link no longer works, and a second revocation is 404.
	other := e.invite(e.mgmt, "grace@example.com", "")
	if other.Role != "org:member" {
		t.Errorf("default role %q", other.Role)
	}
	resWantDeleted(t, e.do("DELETE", "/api/v1/organization/invitations/"+other.ID, e.mgmt, nil))
	if _, err := e.db.FindInvitation(context.Background(), linkToken(t, other.URL)); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Errorf("a revoked link: %v", err)
	}
	e.unchanged("revoking twice", func() {
		resWantError(t, e.do("DELETE", "/api/v1/organization/invitations/"+other.ID, e.mgmt, nil), http.StatusNotFound, "invitation not found")
	})

	// Expired links are listed no more.
	e.invite(e.mgmt, "late@example.com", "")
	e.clock.Set(e.clock.Now().Add(gatehouse.InvitationTTL))
	if n := len(e.invitations(e.mgmt)); n != 0 {
		t.Errorf("%d expired invitations listed", n)
	}
}

// TestInvitationPublicURL: the links start with the configured public URL.
func TestInvitationPublicURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.handler.(*httpapi.Server).SetPublicURL("https://gatehouse.example.com/")
	inv := e.invite(e.mgmt, "ada@example.com", "")
	token, ok := strings.CutPrefix(inv.URL, "https://gatehouse.example.com/invite/")
	if !ok || gatehouse.AccountTokenID(token) != inv.ID {
		t.Errorf("url %q, id %s", inv.URL, inv.ID)
	}
}

// TestPasswordReset: a reset removes the member's password and ends their
// console sessions, and its link sets a new password.
func TestPasswordReset(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	inv := e.invite(e.mgmt, "ada@example.com", "")
	accounts := gatehouse.NewAccounts(e.db, e.clock.Now)
	m, err := accounts.AcceptInvitation(ctx, linkToken(t, inv.URL), "first password!")
	if err != nil {
		t.Fatal(err)
	}
	_, session, err := accounts.SignIn(ctx, "ada@example.com", "first password!")
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Data invitationView `json:"data"`
	}
	e.do("POST", "/api/v1/organization/members/"+m.ID+"/password-reset", e.mgmt, nil).want(t, http.StatusCreated).decode(t, &out)
	if out.Data.UserID == nil || *out.Data.UserID != m.ID || out.Data.Email != m.Email || out.Data.Role != "org:member" {
		t.Errorf("password-reset = %+v", out.Data)
	}
	if _, err := e.db.FindSession(ctx, session); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Errorf("the member's session after the reset: %v", err)
	}
	if _, _, err := accounts.SignIn(ctx, "ada@example.com", "first password!"); gatehouse.ErrorCode(err) != gatehouse.EUNAUTHORIZED {
		t.Errorf("signing in with the old password: %v", err)
	}
	if _, err := accounts.AcceptInvitation(ctx, linkToken(t, out.Data.URL), "second password!"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := accounts.SignIn(ctx, "ada@example.com", "second password!"); err != nil {
		t.Errorf("signing in with the new password: %v", err)
	}
	entries, _ := e.auditLog(e.mgmt, "?resource_id="+m.ID)
	if len(entries) == 0 || entries[0]["operation"] != "invitation.accept" && entries[0]["operation"] != "member.password_reset" {
		t.Errorf("audit entries of the member: %v", entries)
	}
	e.unchanged("reset of an unknown member", func() {
		resWantError(t, e.do("POST", "/api/v1/organization/members/user_ghost/password-reset", e.mgmt, nil), http.StatusNotFound, "member not found")
	})
}

// TestMemberRole: PATCH /organization/members/{user_id} changes a role,
// and never leaves the organization without an admin.
func TestMemberRole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ada := e.addMember(e.mgmt, "ada@example.com")
	grace := e.addMember(e.mgmt, "grace@example.com")
	patch := func(user, role string) *response {
		return e.do("PATCH", "/api/v1/organization/members/"+user, e.mgmt, map[string]any{"role": role})
	}
	var out struct {
		Data memberView `json:"data"`
	}
	patch(ada, "org:admin").want(t, http.StatusOK).decode(t, &out)
	if diff := cmp.Diff(memberView{ID: ada, Email: "ada@example.com", Role: "org:admin"}, out.Data); diff != "" {
		t.Errorf("PATCH role (-want +got):\n%s", diff)
	}
	e.unchanged("refused role changes", func() {
		resWantError(t, patch(ada, "org:member"), http.StatusBadRequest, "role: ada@example.com is the organization's last admin")
		resWantError(t, patch(ada, "admin"), http.StatusBadRequest, "role: must be org:admin or org:member")
		resWantError(t, patch("user_ghost", "org:admin"), http.StatusNotFound, "member not found")
	})
	patch(grace, "org:admin").want(t, http.StatusOK)
	patch(ada, "org:member").want(t, http.StatusOK)
	entries, _ := e.auditLog(e.mgmt, "?resource_id="+ada)
	if len(entries) < 2 || entries[0]["operation"] != "member.update" {
		t.Errorf("audit entries of %s: %v", ada, entries)
	}
}

// TestEmptyRoleRefused: a role that is given must be a role, on every
// operation that takes one; only an absent role means the default.
func TestEmptyRoleRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range []string{"/api/v1/organization/members", "/api/v1/organization/invitations"} {
		for _, role := range []any{"", " ", "admin", nil} {
			e.unchanged(path, func() {
				res := e.do("POST", path, e.mgmt, map[string]any{"email": "new@example.com", "role": role})
				resWantError(t, res, http.StatusBadRequest, "role")
			})
		}
	}
	e.do("POST", "/api/v1/organization/members", e.mgmt, map[string]any{"email": "new@example.com"}).want(t, http.StatusCreated)
}

// TestUpdateMemberNeedsRole: a member's update without a role says that the
// role is required, rather than that an empty one is not a role.
func TestUpdateMemberNeedsRole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.addMember(e.mgmt, "ada@example.com")
	e.unchanged("no role", func() {
		resWantError(t, e.do("PATCH", "/api/v1/organization/members/"+id, e.mgmt, map[string]any{}), http.StatusBadRequest, "role: is required")
		resWantError(t, e.do("PATCH", "/api/v1/organization/members/"+id, e.mgmt, map[string]any{"role": nil}), http.StatusBadRequest, "role")
	})
	e.do("PATCH", "/api/v1/organization/members/"+id, e.mgmt, map[string]any{"role": "org:admin"}).want(t, http.StatusOK)
}
