package console_test

import (
	"context"
	"strings"
	"testing"

	"gatehouse"
	"gatehouse/sso/ssotest"

	"github.com/chromedp/chromedp"
)

// TestBrowserSSO: an admin adds a real OpenID provider (zitadel's OP on the
// loopback) and maps its admins' group to the admin role and a workspace;
// a person signs in through the provider's login page and comes back an
// admin of the workspace; the provider takes them out of the group, and at
// their next sign-in they are a member, out of the workspace, their key
// there disabled. Then passwords are turned off, and the management key
// still signs in.
func TestBrowserSSO(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	op := ssotest.Start(t, []string{e.URL + gatehouse.RedirectPath},
		ssotest.User{ID: "u-ada", Username: "ada", Password: "correct horse battery", Email: "ada@example.com",
			EmailVerified: true, FirstName: "Ada", LastName: "Lovelace", Groups: []string{"gatehouse-admins"}})
	research, err := e.store.CreateWorkspace(ctx, e.org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Research"), Slug: gatehouse.Val("research")}, nil)
	if err != nil {
		t.Fatal(err)
	}

	admin := e.newBrowser(t)
	admin.signInWithKey()
	admin.visit("/sso")
	admin.must(admin.text("#redirect-uri") == e.URL+"/sso/callback", "redirect URI shown: %q", admin.text("#redirect-uri"))
	admin.fill(map[string]string{"#f-name": "Zitadel", "#f-issuer_url": op.Issuer, "#f-client_id": op.ClientID,
		"#f-client_secret": op.ClientSecret, "#f-scopes": "openid email profile groups", "#f-allowed_domains": "example.com"})
	admin.submit(`form[action="/sso/providers"] button[type="submit"]`)
	admin.must(strings.HasPrefix(admin.path(), "/sso/providers/"), "after adding the provider: %s", admin.path())
	admin.must(strings.Contains(admin.text("main"), "********"), "the provider's page does not show the secret masked")
	admin.must(!strings.Contains(admin.text("main"), op.ClientSecret), "the provider's page shows the secret")
	admin.screenshot("sso-provider")
	admin.visit("/sso")
	admin.fill(map[string]string{"#f-group": "gatehouse-admins"})
	admin.run(chromedp.SetValue(chromedp.CSS("#f-role"), gatehouse.RoleAdmin), chromedp.Click(chromedp.CSS(`input[name="workspace_ids"][value="`+research.ID+`"]`)))
	admin.submit(`form[action="/sso/mappings"] button[type="submit"]`)
	admin.must(strings.Contains(admin.text("#mappings + p + .table-wrap"), "gatehouse-admins"), "the mapping is not listed: %s", admin.text("main"))
	admin.screenshot("sso-page")

	ada := e.newBrowser(t)
	ada.visit("/sign-in")
	ada.must(strings.Contains(ada.text(".sso"), "Sign in with Zitadel"), "no button on the sign-in page: %q", ada.text("main"))
	ada.screenshot("sso-sign-in")
	ada.ssoSignIn(op, "ada", "correct horse battery", "sso-provider-login")
	ada.must(ada.path() == "/", "after the provider: %s", ada.path())
	ada.must(strings.Contains(ada.text(".who"), "ada@example.com · admin"), "signed in as %q", ada.text(".who"))
	ada.must(strings.Contains(ada.text(".menu"), "Workspaces"), "an admin's menu lacks Workspaces")
	ada.screenshot("sso-signed-in-admin")
	ws, err := e.store.FindMemberWorkspaces(ctx, e.org.ID, e.memberID("ada@example.com"))
	if err != nil || len(ws) != 2 {
		t.Fatalf("ada's workspaces: %v, %v", ws, err)
	}
	adaID := e.memberID("ada@example.com")
	key, _, err := e.store.CreateKey(ctx, e.org.ID, gatehouse.KeyCreate{Name: "ada's research key", CreatorUserID: &adaID, WorkspaceID: research.ID})
	if err != nil {
		t.Fatal(err)
	}

	// The provider takes her out of the admins' group: at her next sign-in
	// she is a member, out of the workspace, her key there disabled.
	op.SetGroups("u-ada")
	ada.submit(`form[action="/sign-out"] button`)
	ada.ssoSignIn(op, "ada", "correct horse battery", "")
	ada.must(strings.Contains(ada.text(".who"), "ada@example.com · member"), "after the group change, signed in as %q", ada.text(".who"))
	ada.must(!strings.Contains(ada.text(".menu"), "Workspaces"), "a member's menu shows Workspaces")
	ada.visit("/keys/" + key.Hash)
	ada.must(strings.Contains(ada.text("main"), "disabled"), "her key in the workspace she left: %q", ada.text("main"))
	ada.screenshot("sso-group-change")
	ws, err = e.store.FindMemberWorkspaces(ctx, e.org.ID, adaID)
	if err != nil || len(ws) != 1 {
		t.Fatalf("ada's workspaces after the group change: %v, %v", ws, err)
	}

	// Single sign-on works: passwords may go; the management key still signs in.
	admin.visit("/sso")
	admin.run(chromedp.Click(chromedp.CSS("#f-password_sign_in")))
	admin.submit(`form[action="/sso/settings"] button`)
	admin.must(admin.text(".notice") != "", "turning passwords off: %q", admin.text("main"))
	settings, err := e.store.FindSignInSettings(ctx, e.org.ID)
	if err != nil || settings.PasswordSignIn {
		t.Fatalf("password sign-in still on: %+v, %v", settings, err)
	}
	breakGlass := e.newBrowser(t)
	breakGlass.signInWithKey()
	breakGlass.must(breakGlass.path() == "/", "the management key no longer signs in: %s", breakGlass.path())

	entries, _, err := e.store.FindAuditEntries(ctx, e.org.ID, gatehouse.AuditFilter{Operation: gatehouse.OpSessionCreate, Page: gatehouse.Page{Limit: 10}})
	if err != nil {
		t.Fatal(err)
	}
	methods := map[any]int{}
	for _, en := range entries {
		methods[en.Details["method"]]++
	}
	if methods["oidc"] != 2 || methods["management_key"] != 2 {
		t.Errorf("sign-ins in the audit log by method: %v", methods)
	}
}

// ssoSignIn signs in from the sign-in page through the provider's login
// page (taking a screenshot of it, when named), and waits for the
// console's page it comes back to.
func (b *browser) ssoSignIn(op *ssotest.Provider, username, password, screenshot string) {
	b.t.Helper()
	if !strings.HasPrefix(b.path(), "/sign-in") {
		b.visit("/sign-in")
	}
	b.run(chromedp.Click(chromedp.CSS(`.sso a.button`)), chromedp.WaitVisible(chromedp.CSS("#username")))
	b.must(strings.HasPrefix(b.location(), op.Issuer+"/login/"), "not at the provider's login page: %s", b.location())
	b.run(chromedp.SetValue(chromedp.CSS("#username"), username), chromedp.SetValue(chromedp.CSS("#password"), password))
	if screenshot != "" {
		b.screenshot(screenshot)
	}
	b.run(chromedp.Click(chromedp.CSS(`button[type="submit"]`)), chromedp.WaitReady(chromedp.CSS("main")))
}

// memberID returns the id of the member with an email.
func (e *env) memberID(email string) string {
	e.t.Helper()
	list, err := e.store.FindMembersByRef(context.Background(), e.org.ID, []string{email})
	if err != nil || len(list) != 1 {
		e.t.Fatalf("member %s: %v, %v", email, list, err)
	}
	return list[0].ID
}
