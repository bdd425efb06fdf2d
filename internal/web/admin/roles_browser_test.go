package admin_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hmid/internal/access"
	"hmid/internal/apptest"
	"hmid/internal/web/webtest"
)

// TestBrowserAdminRoles drives a headless Chromium through /admin/roles as
// a super admin: create a role requiring two-factor authentication, give it
// two permissions and take one away (confirming the dialog), turn the
// requirement off, see a system role's page refuse deletion in words, open
// the permission catalogue, and delete the role with its confirmation box.
// Every page passes axe-core; with HMID_SCREENSHOTS set the list and the
// role's page are saved at desktop and phone width.
func TestBrowserAdminRoles(t *testing.T) {
	t.Parallel()
	ctx := webtest.Chromium(t)
	// The forms' data-confirm asks before a removal or deletion: accept
	// every dialog, and count them.
	dialogs := webtest.AcceptDialogs(ctx)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.NewUser(t, apptest.UserSpec{Username: "grace_hopper", Email: "grace@example.test", Password: pw, SuperAdmin: true})
		text := func(what string) string { return webtest.Read(t, ctx, what, chromedp.Text(css(`main`))) }
		role := func(id string) map[string]any {
			return e.Call(t, "GET", "/v1/roles/"+id, e.SystemKey, nil, http.StatusOK).JSON()["data"].(map[string]any)
		}
		// waitFor waits until the browser is at path and the page shows sel
		// (the answer to a form, after its redirect), and, when notice is
		// not "", a confirmation containing it.
		waitFor := func(what, path, sel, notice string) {
			t.Helper()
			check := `(() => { const n = document.querySelector(".notice");
				return location.pathname === ` + strconv.Quote(path) + ` && document.querySelector(` + strconv.Quote(sel) + `) !== null &&
					(` + strconv.Quote(notice) + ` === "" || (n !== null && n.textContent.includes(` + strconv.Quote(notice) + `))); })()`
			deadline := time.Now().Add(10 * time.Second)
			for !webtest.Read(t, ctx, what, chromedp.Evaluate[bool](check)) {
				if time.Now().After(deadline) {
					t.Fatalf("%s: the browser is at %s showing %q", what, webtest.Read(t, ctx, "location", chromedp.Location()), text("page"))
				}
				time.Sleep(50 * time.Millisecond)
			}
		}

		webtest.Login(t, ctx, e.URL, admin.Email, pw)
		webtest.Axe(t, ctx, e.URL+"/admin/roles")

		// Create a role that requires two-factor authentication.
		webtest.Do(t, ctx, "fill in the new role",
			chromedp.SendKeys(css(`#name`), "Support desk"),
			chromedp.SendKeys(css(`#description`), "Answers the help desk's tickets"),
			chromedp.Click(css(`form[action="/admin/roles"] input[name=requires_two_factor]`)),
			chromedp.Click(css(`form[action="/admin/roles"] button[type=submit]`)),
			chromedp.WaitVisible(css(`#role-h`)))
		loc := webtest.Read(t, ctx, "location", chromedp.Location())
		id := strings.TrimPrefix(loc, e.URL+"/admin/roles/")
		if got := role(id); got["name"] != "Support desk" || got["requires_two_factor"] != true {
			t.Fatalf("created role %v (page %s)", got, loc)
		}
		if s := text("role page"); !strings.Contains(s, "The role was created.") {
			t.Errorf("no confirmation: %q", s)
		}

		// Give it two permissions, then take one away.
		for _, perm := range []string{access.PermissionID("users", "read"), access.PermissionID("audit", "read")} {
			webtest.Do(t, ctx, "add a permission",
				chromedp.SetValue(css(`#permission_id`), perm),
				chromedp.Click(css(`form[action="/admin/roles/`+id+`/permissions"] button[type=submit]`)))
			waitFor("the permission is listed", "/admin/roles/"+id, `form[action="/admin/roles/`+id+`/permissions/`+perm+`/remove"]`, "")
		}
		if got := e.RolePermissions(t, id); strings.Join(got, " ") != "audit:read users:read" {
			t.Fatalf("permissions after adding: %v", got)
		}
		webtest.Axe(t, ctx, "")
		webtest.Screenshots(t, ctx, "admin-roles-role")

		// The list shows the role with its two permissions and the requirement.
		webtest.Do(t, ctx, "open the list", chromedp.Navigate(e.URL+"/admin/roles"), chromedp.WaitVisible(css(`#roles-h`)))
		if s := text("list"); !strings.Contains(s, "Support desk") || !strings.Contains(s, "System role") || !strings.Contains(s, "Required") {
			t.Errorf("list: %q", s)
		}
		webtest.Screenshots(t, ctx, "admin-roles")

		usersRead := access.PermissionID("users", "read")
		webtest.Do(t, ctx, "remove users:read", chromedp.Navigate(e.URL+"/admin/roles/"+id), chromedp.WaitVisible(css(`#perms-h`)),
			chromedp.Click(css(`form[action="/admin/roles/`+id+`/permissions/`+usersRead+`/remove"] button`)))
		waitFor("the permission is gone", "/admin/roles/"+id, `#perms-h`, "The permission was removed")
		if got := e.RolePermissions(t, id); strings.Join(got, " ") != "audit:read" {
			t.Fatalf("permissions after removing: %v", got)
		}

		// Turn the two-factor requirement off.
		webtest.Do(t, ctx, "untick two-factor",
			chromedp.Click(css(`form[action="/admin/roles/`+id+`"] input[name=requires_two_factor]`)),
			chromedp.Click(css(`form[action="/admin/roles/`+id+`"] button[type=submit]`)))
		waitFor("saved", "/admin/roles/"+id, `#edit-h`, "The role was saved")
		if got := role(id); got["requires_two_factor"] != false || got["name"] != "Support desk" {
			t.Fatalf("edited role %v", got)
		}

		// A system role cannot be deleted: the page says so and has no button.
		webtest.Axe(t, ctx, e.URL+"/admin/roles/role_admin")
		if s := text("system role"); !strings.Contains(s, "This is a system role: it cannot be deleted.") {
			t.Errorf("system role page: %q", s)
		}
		if n := webtest.Read(t, ctx, "delete forms", chromedp.Evaluate[int](`document.querySelectorAll('form[action$="/delete"]').length`)); n != 0 {
			t.Errorf("a system role's page has %d delete forms", n)
		}

		webtest.Axe(t, ctx, e.URL+"/admin/roles/permissions")
		if s := text("catalogue"); !strings.Contains(s, "roles:write") {
			t.Errorf("catalogue: %q", s)
		}

		// Delete the role: the box, then the dialog.
		webtest.Do(t, ctx, "delete the role",
			chromedp.Navigate(e.URL+"/admin/roles/"+id), chromedp.WaitVisible(css(`#delete-h`)),
			chromedp.Click(css(`form[action="/admin/roles/`+id+`/delete"] input[name=confirm]`)),
			chromedp.Click(css(`form[action="/admin/roles/`+id+`/delete"] button[type=submit]`)))
		waitFor("deleted", "/admin/roles", `#roles-h`, "The role was deleted")
		e.Call(t, "GET", "/v1/roles/"+id, e.SystemKey, nil, http.StatusNotFound)
	})
	if n := dialogs.Load(); n < 2 {
		t.Errorf("%d confirmation dialogs, want one for the removal and one for the deletion per engine", n)
	}
}
