package app_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"hmid/internal/access"
	"hmid/internal/apptest"
)

// rolePerms returns the permission strings of a role as the REST API lists them.
func rolePerms(t *testing.T, e *apptest.Env, roleID string) []string {
	t.Helper()
	var out []string
	for _, p := range e.Call(t, "GET", "/v1/roles/"+roleID+"/permissions", e.SystemKey, nil, http.StatusOK).JSON()["data"].([]any) {
		m := p.(map[string]any)
		out = append(out, m["resource"].(string)+":"+m["action"].(string))
	}
	return out
}

// TestAdminRoles drives /admin/roles as a super admin: create a role (bad
// input refused, a taken name refused), edit it, give it a permission and
// take it away, delete it with the confirmation box, and be refused, in
// words and without a button, the deletion of a system role.
func TestAdminRoles(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery", SuperAdmin: true})
		b := signedInBrowser(t, e, admin)
		roles := func() int { return count(t, e, `SELECT COUNT(*) FROM roles`) }
		before := roles()

		list := b.get("/admin/roles")
		if list.status != http.StatusOK || !strings.Contains(list.body, `href="/admin/roles/role_user"`) ||
			!strings.Contains(list.body, "System role") || !strings.Contains(list.body, `action="/admin/roles"`) ||
			!strings.Contains(list.body, `href="/admin/roles/permissions"`) || !strings.Contains(list.body, `href="/admin/roles" aria-current="page"`) {
			t.Fatalf("roles page: %d %s", list.status, list.body)
		}
		// The Developer role's row counts its four permissions.
		if i := strings.Index(list.body, `href="/admin/roles/role_developer"`); i < 0 || !strings.Contains(list.body[i:min(len(list.body), i+400)], `<td data-label="Permissions">4</td>`) {
			t.Errorf("the Developer role's permission count is not shown: %s", list.body)
		}

		// Bad input: a field error, 400, nothing created; a taken name: 409.
		if p := developerPost(t, b, "/admin/roles", "/admin/roles", url.Values{"name": {"  "}, "description": {"kept"}}); p.status != http.StatusBadRequest ||
			!strings.Contains(p.body, `id="name-error"`) || !strings.Contains(p.body, "Nothing was saved") || !strings.Contains(p.body, ">kept</textarea>") {
			t.Errorf("blank name: %d %s", p.status, p.body)
		}
		if p := developerPost(t, b, "/admin/roles", "/admin/roles", url.Values{"name": {"moderator"}}); p.status != http.StatusConflict ||
			!strings.Contains(p.body, "A role with this name already exists.") || !strings.Contains(p.body, `aria-invalid="true"`) {
			t.Errorf("taken name: %d %s", p.status, p.body)
		}
		if n := roles(); n != before {
			t.Fatalf("bad input created %d roles", n-before)
		}

		// Create: the answer is the new role's page.
		p := developerPost(t, b, "/admin/roles", "/admin/roles", url.Values{"name": {" Auditors "}, "description": {"Read the log"}, "requires_two_factor": {"yes"}})
		if p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, "/admin/roles/") {
			t.Fatalf("create: %d %q %s", p.status, p.location, p.body)
		}
		id := strings.TrimPrefix(p.location, "/admin/roles/")
		got := e.Call(t, "GET", "/v1/roles/"+id, e.SystemKey, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if got["name"] != "Auditors" || got["description"] != "Read the log" || got["requires_two_factor"] != true || got["is_system"] != false {
			t.Fatalf("created role: %v", got)
		}
		page := b.get(p.location)
		if page.status != http.StatusOK || !strings.Contains(page.body, "The role was created.") || !strings.Contains(page.body, `<h2 id="role-h">Auditors`) ||
			!strings.Contains(page.body, `action="/admin/roles/`+id+`/delete"`) {
			t.Fatalf("role page: %d %s", page.status, page.body)
		}

		// Edit: rename, change the description, no longer require two-factor.
		if q := developerPost(t, b, "/admin/roles/"+id, "/admin/roles/"+id, url.Values{"name": {"Log readers"}, "description": {"changed"}}); q.status != http.StatusSeeOther ||
			q.location != "/admin/roles/"+id {
			t.Fatalf("edit: %d %q %s", q.status, q.location, q.body)
		}
		got = e.Call(t, "GET", "/v1/roles/"+id, e.SystemKey, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if got["name"] != "Log readers" || got["description"] != "changed" || got["requires_two_factor"] != false {
			t.Fatalf("edited role: %v", got)
		}
		if q := developerPost(t, b, "/admin/roles/"+id, "/admin/roles/"+id, url.Values{"name": {"Developer"}, "description": {"x"}}); q.status != http.StatusConflict ||
			!strings.Contains(q.body, `id="name-error"`) || !strings.Contains(q.body, `value="Developer"`) {
			t.Errorf("rename to a taken name: %d %s", q.status, q.body)
		}
		if got := e.Call(t, "GET", "/v1/roles/"+id, e.SystemKey, nil, http.StatusOK).JSON()["data"].(map[string]any); got["name"] != "Log readers" {
			t.Fatalf("a refused rename changed the role: %v", got)
		}

		// Permissions: add one, see it counted, remove it.
		auditRead := access.PermissionID("audit", "read")
		if q := developerPost(t, b, "/admin/roles/"+id, "/admin/roles/"+id+"/permissions", url.Values{"permission_id": {auditRead}}); q.status != http.StatusSeeOther {
			t.Fatalf("add permission: %d %s", q.status, q.body)
		}
		if got := rolePerms(t, e, id); len(got) != 1 || got[0] != "audit:read" {
			t.Fatalf("permissions after adding: %v", got)
		}
		page = b.get("/admin/roles/" + id)
		if !strings.Contains(page.body, "The permission was added to the role.") || !strings.Contains(page.body, `action="/admin/roles/`+id+`/permissions/`+auditRead+`/remove"`) ||
			strings.Contains(page.body, `<option value="`+auditRead+`"`) {
			t.Errorf("role page after adding: %s", page.body)
		}
		if q := developerPost(t, b, "/admin/roles/"+id, "/admin/roles/"+id+"/permissions", url.Values{"permission_id": {"nope"}}); q.status != http.StatusNotFound {
			t.Errorf("unknown permission: %d %s", q.status, q.body)
		}
		if q := developerPost(t, b, "/admin/roles/"+id, "/admin/roles/"+id+"/permissions/"+auditRead+"/remove", url.Values{}); q.status != http.StatusSeeOther {
			t.Fatalf("remove permission: %d %s", q.status, q.body)
		}
		if got := rolePerms(t, e, id); len(got) != 0 {
			t.Fatalf("permissions after removing: %v", got)
		}

		// Without the CSRF token nothing happens.
		if q := b.do("POST", "/admin/roles/"+id+"/permissions", url.Values{"permission_id": {auditRead}}); q.status != http.StatusForbidden || len(rolePerms(t, e, id)) != 0 {
			t.Errorf("add without CSRF token: %d", q.status)
		}

		// A system role: the page says it cannot be deleted and has no button;
		// a forged post is refused by the service, in words, and changes nothing.
		sys := b.get("/admin/roles/role_user")
		if sys.status != http.StatusOK || strings.Contains(sys.body, `action="/admin/roles/role_user/delete"`) ||
			!strings.Contains(sys.body, "This is a system role: it cannot be deleted.") || strings.Contains(sys.body, `id="name"`) {
			t.Fatalf("system role page: %d %s", sys.status, sys.body)
		}
		q := b.do("POST", "/admin/roles/role_user/delete", url.Values{"confirm": {"yes"}, "csrf_token": {formToken(t, sys.body, "/admin/roles/role_user")}})
		if q.status != http.StatusForbidden || !strings.Contains(q.body, "is a system role and cannot be deleted") || !strings.Contains(q.body, `role="alert"`) {
			t.Errorf("deleting a system role: %d %s", q.status, q.body)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM roles WHERE id = 'role_user'`); n != 1 {
			t.Fatal("the User role was deleted")
		}
		// A system role keeps its name: a forged rename is refused.
		if q := b.do("POST", "/admin/roles/role_user", url.Values{"name": {"People"}, "description": {"x"}, "csrf_token": {formToken(t, sys.body, "/admin/roles/role_user")}}); q.status != http.StatusForbidden ||
			!strings.Contains(q.body, "system roles cannot be renamed") {
			t.Errorf("renaming a system role: %d %s", q.status, q.body)
		}

		// Delete: without the box, 400 and nothing happens; with it, gone.
		if q := developerPost(t, b, "/admin/roles/"+id, "/admin/roles/"+id+"/delete", url.Values{}); q.status != http.StatusBadRequest ||
			!strings.Contains(q.body, `id="confirm_delete-error"`) {
			t.Errorf("delete without confirmation: %d %s", q.status, q.body)
		}
		e.Call(t, "GET", "/v1/roles/"+id, e.SystemKey, nil, http.StatusOK)
		if q := developerPost(t, b, "/admin/roles/"+id, "/admin/roles/"+id+"/delete", url.Values{"confirm": {"yes"}}); q.status != http.StatusSeeOther || q.location != "/admin/roles" {
			t.Fatalf("delete: %d %q %s", q.status, q.location, q.body)
		}
		e.Call(t, "GET", "/v1/roles/"+id, e.SystemKey, nil, http.StatusNotFound)
		if l := b.get("/admin/roles"); !strings.Contains(l.body, "The role was deleted.") || strings.Contains(l.body, "Log readers") {
			t.Errorf("list after deleting: %s", l.body)
		}
		if g := b.get("/admin/roles/" + id); g.status != http.StatusNotFound {
			t.Errorf("deleted role's page: %d", g.status)
		}
	})
}

// TestAdminRolesEscalation: an operator holding roles:read, :write and
// :delete but not everything is offered only the permissions they hold,
// and a forged form for one they lack, for one a role has that they lack,
// or for a system role is refused in words with nothing changed: the rule
// of POST and DELETE /v1/roles/{id}/permissions.
func TestAdminRolesEscalation(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		op := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery",
			Roles: []string{"role_user", roleWith(t, e, "roles:read", "roles:write", "roles:delete", "audit:read")}})
		b := signedInBrowser(t, e, op)
		custom := roleWith(t, e, "users:read")
		usersRead, auditRead, settingsWrite := access.PermissionID("users", "read"), access.PermissionID("audit", "read"), access.PermissionID("settings", "write")

		page := b.get("/admin/roles/" + custom)
		if page.status != http.StatusOK || !strings.Contains(page.body, "You can add and remove only permissions you hold yourself.") ||
			!strings.Contains(page.body, `<option value="`+auditRead+`"`) || strings.Contains(page.body, `<option value="`+settingsWrite+`"`) ||
			strings.Contains(page.body, `/permissions/`+usersRead+`/remove"`) || !strings.Contains(page.body, "You do not hold this permission") {
			t.Fatalf("custom role page for the operator: %d %s", page.status, page.body)
		}
		tok := formToken(t, page.body, "/admin/roles/"+custom+"/permissions")

		// Granting what the operator lacks: refused, said why, nothing added.
		q := b.do("POST", "/admin/roles/"+custom+"/permissions", url.Values{"permission_id": {settingsWrite}, "csrf_token": {tok}})
		if q.status != http.StatusForbidden || !strings.Contains(q.body, "This is not allowed: you cannot grant settings:write, which you do not hold") {
			t.Errorf("escalating grant: %d %s", q.status, q.body)
		}
		// Taking away what the operator lacks: refused, nothing removed.
		q = b.do("POST", "/admin/roles/"+custom+"/permissions/"+usersRead+"/remove", url.Values{"csrf_token": {tok}})
		if q.status != http.StatusForbidden || !strings.Contains(q.body, "you cannot remove users:read, which you do not hold") {
			t.Errorf("escalating removal: %d %s", q.status, q.body)
		}
		if got := rolePerms(t, e, custom); len(got) != 1 || got[0] != "users:read" {
			t.Fatalf("refused changes changed the role: %v", got)
		}
		// What the operator holds they may give.
		if q := b.do("POST", "/admin/roles/"+custom+"/permissions", url.Values{"permission_id": {auditRead}, "csrf_token": {tok}}); q.status != http.StatusSeeOther {
			t.Fatalf("grant held permission: %d %s", q.status, q.body)
		}
		if got := rolePerms(t, e, custom); len(got) != 2 {
			t.Fatalf("permissions after granting: %v", got)
		}

		// A system role: no forms for its permissions, and a forged one refused.
		sys := b.get("/admin/roles/role_moderator")
		if sys.status != http.StatusOK || !strings.Contains(sys.body, "only a super admin can change its permissions") ||
			strings.Contains(sys.body, `action="/admin/roles/role_moderator/permissions"`) || strings.Contains(sys.body, "/remove\"") {
			t.Fatalf("system role page for the operator: %d %s", sys.status, sys.body)
		}
		q = b.do("POST", "/admin/roles/role_moderator/permissions", url.Values{"permission_id": {auditRead}, "csrf_token": {tok}})
		if q.status != http.StatusForbidden || !strings.Contains(q.body, "only a super admin can change the permissions of the system role") {
			t.Errorf("changing a system role's permissions: %d %s", q.status, q.body)
		}
		if got := rolePerms(t, e, "role_moderator"); len(got) != 2 {
			t.Fatalf("the Moderator role changed: %v", got)
		}

		// The operator lacks permissions:read: no link, and the catalogue page is refused.
		if l := b.get("/admin/roles"); l.status != http.StatusOK || strings.Contains(l.body, `href="/admin/roles/permissions"`) {
			t.Errorf("roles list for the operator: %d %s", l.status, l.body)
		}
		if g := b.get("/admin/roles/permissions"); g.status != http.StatusForbidden {
			t.Errorf("permissions page without permissions:read: %d", g.status)
		}
	})
}

// TestAdminRolesPermissions: the catalogue at /admin/roles/permissions
// lists every permission for holders of permissions:read and creates one
// for holders of permissions:write, with the rules of /v1/permissions.
func TestAdminRolesPermissions(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		reader := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery", Roles: []string{"role_user", roleWith(t, e, "roles:read", "permissions:read")}})
		rb := signedInBrowser(t, e, reader)
		total := count(t, e, `SELECT COUNT(*) FROM permissions`)
		l := rb.get("/admin/roles/permissions")
		if l.status != http.StatusOK || !strings.Contains(l.body, "<code>audit:read</code>") || strings.Contains(l.body, `action="/admin/roles/permissions"`) {
			t.Fatalf("catalogue for a reader: %d %s", l.status, l.body)
		}
		if !strings.Contains(l.body, ">"+strconv.Itoa(total)+" permissions</h2>") {
			t.Errorf("the catalogue does not say it has %d permissions", total)
		}
		if q := rb.do("POST", "/admin/roles/permissions", url.Values{"resource": {"reports"}, "action": {"read"}, "csrf_token": {formField(t, csrfRE, l.body)}}); q.status != http.StatusForbidden {
			t.Errorf("create without permissions:write: %d", q.status)
		}
		// Paging: the second page of ten.
		if p2 := rb.get("/admin/roles/permissions?page=2&limit=10"); p2.status != http.StatusOK || !strings.Contains(p2.body, `rel="prev"`) || !strings.Contains(p2.body, "Page 2 of") {
			t.Errorf("second page: %d %s", p2.status, p2.body)
		}

		admin := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery", SuperAdmin: true})
		b := signedInBrowser(t, e, admin)
		for _, c := range []struct{ resource, action, field string }{{"Bad Name", "read", "resource"}, {"reports", "", "action"}} {
			q := developerPost(t, b, "/admin/roles/permissions", "/admin/roles/permissions", url.Values{"resource": {c.resource}, "action": {c.action}, "description": {"kept"}})
			if q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="`+c.field+`-error"`) || !strings.Contains(q.body, ">kept</textarea>") {
				t.Errorf("%s:%s: %d %s", c.resource, c.action, q.status, q.body)
			}
		}
		if n := count(t, e, `SELECT COUNT(*) FROM permissions`); n != total {
			t.Fatalf("bad input created %d permissions", n-total)
		}
		q := developerPost(t, b, "/admin/roles/permissions", "/admin/roles/permissions", url.Values{"resource": {"reports"}, "action": {"read"}, "description": {"Read reports"}})
		if q.status != http.StatusSeeOther || q.location != "/admin/roles/permissions" {
			t.Fatalf("create: %d %s", q.status, q.body)
		}
		found := false
		for _, p := range e.Call(t, "GET", "/v1/permissions?limit=100", e.SystemKey, nil, http.StatusOK).JSON()["data"].([]any) {
			m := p.(map[string]any)
			found = found || (m["resource"] == "reports" && m["action"] == "read" && m["description"] == "Read reports")
		}
		if !found {
			t.Fatal("the created permission is not listed by the API")
		}
		if q := developerPost(t, b, "/admin/roles/permissions", "/admin/roles/permissions", url.Values{"resource": {"reports"}, "action": {"read"}}); q.status != http.StatusConflict ||
			!strings.Contains(q.body, "This permission already exists.") {
			t.Errorf("duplicate: %d %s", q.status, q.body)
		}
	})
}

// TestAdminRolesNeedRolesRead: without roles:read the pages answer the
// 403 page, and the actions are refused without changing anything.
func TestAdminRolesNeedRolesRead(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery", Roles: []string{"role_user", roleWith(t, e, "audit:read")}})
		b := signedInBrowser(t, e, u)
		for _, path := range []string{"/admin/roles", "/admin/roles/role_user", "/admin/roles/permissions"} {
			if p := b.get(path); p.status != http.StatusForbidden || !strings.Contains(p.body, "<html") {
				t.Errorf("GET %s: %d %s", path, p.status, p.body)
			}
		}
		before := count(t, e, `SELECT COUNT(*) FROM roles`)
		if p := b.do("POST", "/admin/roles", url.Values{"name": {"Sneaky"}}); p.status != http.StatusForbidden || count(t, e, `SELECT COUNT(*) FROM roles`) != before {
			t.Errorf("create without roles:write: %d", p.status)
		}
	})
}
