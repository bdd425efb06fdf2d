package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"hmid/internal/access"
	"hmid/internal/apptest"
)

func TestSeedIsIdempotentAndComplete(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		if !strings.HasPrefix(e.SystemKey, "hm_") {
			t.Fatalf("system key %q", e.SystemKey)
		}
		r := e.Call(t, "GET", "/v1/permissions?limit=100", e.SystemKey, nil, http.StatusOK)
		got := map[string]bool{}
		for _, p := range r.JSON()["data"].([]any) {
			m := p.(map[string]any)
			got[m["resource"].(string)+":"+m["action"].(string)] = true
		}
		for _, c := range access.Catalogue {
			if !got[c.Resource+":"+c.Action] {
				t.Errorf("permission %s:%s not seeded", c.Resource, c.Action)
			}
		}
		if !got["chatplatform:guild.sync"] || !got["*:*"] {
			t.Fatal("chatplatform:guild.sync or *:* missing")
		}
		// Seeding again changes nothing and creates no second system key.
		if err := e.Server.Access.Seed(t.Context()); err != nil {
			t.Fatal(err)
		}
		if k, err := e.Server.Access.EnsureSystemKey(t.Context(), ""); err != nil || k != "" {
			t.Fatalf("second EnsureSystemKey = %q, %v", k, err)
		}
		perms := e.Call(t, "GET", "/v1/roles/role_developer/permissions", e.SystemKey, nil, http.StatusOK).JSON()["data"].([]any)
		var names []string
		for _, p := range perms {
			m := p.(map[string]any)
			names = append(names, m["resource"].(string)+":"+m["action"].(string))
		}
		if strings.Join(names, ",") != "api_keys:*,oauth_clients:*,two_factor:read,two_factor:write" {
			t.Fatalf("developer permissions = %v", names)
		}
		var n int
		if err := e.Server.DB.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM platforms WHERE enabled`).Scan(&n); err != nil || n != 5 {
			t.Fatalf("enabled platforms = %d, %v", n, err)
		}
	})
}

func TestRoleLifecycle(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		plain := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "POST", "/v1/roles", plain.Token, map[string]any{"name": "x"}, http.StatusForbidden)
		e.Call(t, "POST", "/v1/roles", admin.Token, map[string]any{"description": "no name"}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/roles", admin.Token, `{"name": 5}`, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/roles", admin.Token, `{"name":`, http.StatusBadRequest)
		r := e.Call(t, "POST", "/v1/roles", admin.Token, map[string]any{"name": "Auditor", "description": "reads audit", "requires_two_factor": true}, http.StatusCreated)
		role := r.JSON()["data"].(map[string]any)
		id := role["id"].(string)
		if role["requires_two_factor"] != true || role["is_system"] != false {
			t.Fatalf("role = %v", role)
		}
		e.Call(t, "POST", "/v1/roles", admin.Token, map[string]any{"name": "auditor"}, http.StatusConflict)
		e.Call(t, "GET", "/v1/roles/"+id, admin.Token, nil, http.StatusOK)
		e.Call(t, "GET", "/v1/roles/nope", admin.Token, nil, http.StatusNotFound)
		e.Call(t, "PATCH", "/v1/roles/"+id, admin.Token, map[string]any{}, http.StatusBadRequest)
		up := e.Call(t, "PATCH", "/v1/roles/"+id, admin.Token, map[string]any{"description": "changed"}, http.StatusOK).JSON()["data"].(map[string]any)
		if up["description"] != "changed" || up["name"] != "Auditor" {
			t.Fatalf("patched = %v", up)
		}
		e.Call(t, "PATCH", "/v1/roles/role_admin", admin.Token, map[string]any{"name": "Boss"}, http.StatusForbidden)
		e.Call(t, "PATCH", "/v1/roles/nope", admin.Token, map[string]any{"description": "x"}, http.StatusNotFound)

		// A permission granted to the role takes effect on the holder's next request.
		var auditRead string
		for _, p := range e.Call(t, "GET", "/v1/permissions", admin.Token, nil, http.StatusOK).JSON()["data"].([]any) {
			m := p.(map[string]any)
			if m["resource"] == "roles" && m["action"] == "read" {
				auditRead = m["id"].(string)
			}
		}
		holder := e.NewUser(t, apptest.UserSpec{Roles: []string{"role_user", id}})
		e.Call(t, "GET", "/v1/roles", holder.Token, nil, http.StatusForbidden)
		e.Call(t, "POST", "/v1/roles/"+id+"/permissions", admin.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/roles/"+id+"/permissions", admin.Token, map[string]any{"permission_id": "nope"}, http.StatusNotFound)
		e.Call(t, "POST", "/v1/roles/"+id+"/permissions", plain.Token, map[string]any{"permission_id": auditRead}, http.StatusForbidden)
		e.Call(t, "POST", "/v1/roles/"+id+"/permissions", admin.Token, map[string]any{"permission_id": auditRead}, http.StatusCreated)
		e.Call(t, "GET", "/v1/roles", holder.Token, nil, http.StatusOK)
		e.Call(t, "GET", "/v1/roles/"+id+"/permissions", holder.Token, nil, http.StatusOK)
		e.Call(t, "DELETE", "/v1/roles/"+id+"/permissions/"+auditRead, admin.Token, nil, http.StatusNoContent)
		e.Call(t, "DELETE", "/v1/roles/"+id+"/permissions/"+auditRead, admin.Token, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/roles", holder.Token, nil, http.StatusForbidden)

		e.Call(t, "DELETE", "/v1/roles/role_user", admin.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/roles/"+id, plain.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/roles/"+id, admin.Token, nil, http.StatusNoContent)
		e.Call(t, "DELETE", "/v1/roles/"+id, admin.Token, nil, http.StatusNotFound)
	})
}

// TestRolePermissionRemovalEscalation: removing a permission from a role
// follows the rule of granting it (the caller holds it; super admins and
// system keys exempt), and the permission sets of system roles change only
// by a super admin or a system key.
func TestRolePermissionRemovalEscalation(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		owner := e.NewUser(t, apptest.UserSpec{Roles: []string{"role_user", roleWith(t, e, "roles:write", "roles:read", "audit:read")}})
		writer, _ := e.NewAPIKey(t, owner.ID, "roles:write")
		all := access.PermissionID("*", "*")
		auditRead := access.PermissionID("audit", "read")
		usersRead := access.PermissionID("users", "read")

		// The finding: a roles:write key took *:* away from the Admin role.
		e.Call(t, "DELETE", "/v1/roles/role_admin/permissions/"+all, writer, nil, http.StatusForbidden)
		if n := scalar[int](t, e, `SELECT COUNT(*) FROM role_permissions WHERE role_id = 'role_admin' AND permission_id = $1`, all); n != 1 {
			t.Fatalf("Admin lost *:* (%d rows)", n)
		}
		// Even what the caller holds is not theirs to change on a system role.
		e.Call(t, "DELETE", "/v1/roles/role_user/permissions/"+access.PermissionID("two_factor", "read"), owner.Token, nil, http.StatusForbidden)
		e.Call(t, "POST", "/v1/roles/role_user/permissions", owner.Token, map[string]any{"permission_id": auditRead}, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/roles/role_admin/permissions/nope", writer, nil, http.StatusNotFound)

		// On a custom role: only what the caller holds, both ways.
		custom := roleWith(t, e, "users:read", "audit:read")
		e.Call(t, "DELETE", "/v1/roles/"+custom+"/permissions/"+usersRead, writer, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/roles/"+custom+"/permissions/"+usersRead, owner.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/roles/"+custom+"/permissions/"+auditRead, owner.Token, nil, http.StatusNoContent)
		e.Call(t, "POST", "/v1/roles/"+custom+"/permissions", owner.Token, map[string]any{"permission_id": auditRead}, http.StatusCreated)
		e.Call(t, "POST", "/v1/roles/"+custom+"/permissions", owner.Token, map[string]any{"permission_id": access.PermissionID("users", "write")}, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/roles/"+custom+"/permissions/"+usersRead, admin.Token, nil, http.StatusNoContent)

		// Super admins and system keys may change system roles.
		e.Call(t, "POST", "/v1/roles/role_user/permissions", admin.Token, map[string]any{"permission_id": auditRead}, http.StatusCreated)
		e.Call(t, "DELETE", "/v1/roles/role_user/permissions/"+auditRead, e.SystemKey, nil, http.StatusNoContent)
	})
}

func TestPermissions(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		plain := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "GET", "/v1/permissions", plain.Token, nil, http.StatusForbidden)
		e.Call(t, "POST", "/v1/permissions", plain.Token, map[string]any{"resource": "x", "action": "y"}, http.StatusForbidden)
		e.Call(t, "POST", "/v1/permissions", e.SystemKey, map[string]any{"resource": "Bad Name", "action": "y"}, http.StatusBadRequest)
		r := e.Call(t, "POST", "/v1/permissions", e.SystemKey, map[string]any{"resource": "reports", "action": "read", "description": "Read reports"}, http.StatusCreated)
		id := r.JSON()["data"].(map[string]any)["id"].(string)
		e.Call(t, "POST", "/v1/permissions", e.SystemKey, map[string]any{"resource": "reports", "action": "read"}, http.StatusConflict)
		e.Call(t, "GET", "/v1/permissions/"+id, e.SystemKey, nil, http.StatusOK)
		e.Call(t, "GET", "/v1/permissions/nope", e.SystemKey, nil, http.StatusNotFound)
		l := e.Call(t, "GET", "/v1/permissions?page=2&limit=10", e.SystemKey, nil, http.StatusOK).JSON()
		pg := l["pagination"].(map[string]any)
		if pg["page"].(float64) != 2 || pg["limit"].(float64) != 10 || pg["total"].(float64) < 51 {
			t.Fatalf("pagination = %v", pg)
		}
		links := l["_links"].(map[string]any)
		if !strings.HasPrefix(links["next"].(string), e.URL+"/v1/permissions?") || links["prev"] == nil {
			t.Fatalf("links = %v", links)
		}
		// limit is clamped to 1..100 and page below 1 becomes 1.
		pg = e.Call(t, "GET", "/v1/permissions?page=-3&limit=1000", e.SystemKey, nil, http.StatusOK).JSON()["pagination"].(map[string]any)
		if pg["page"].(float64) != 1 || pg["limit"].(float64) != 100 {
			t.Fatalf("clamped pagination = %v", pg)
		}
	})
}

func TestAPIKeys(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		dev := e.NewUser(t, apptest.UserSpec{Roles: []string{"role_user", "role_developer"}})
		plain := e.NewUser(t, apptest.UserSpec{})
		admin := e.Admin(t)

		e.Call(t, "GET", "/v1/api-keys", plain.Token, nil, http.StatusForbidden)
		e.Call(t, "POST", "/v1/api-keys", dev.Token, map[string]any{"scopes": []string{}}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/api-keys", dev.Token, map[string]any{"name": "k", "scopes": []string{"users:read"}}, http.StatusForbidden)
		e.Call(t, "POST", "/v1/api-keys", dev.Token, map[string]any{"name": "k", "scopes": []string{"nonsense"}}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/api-keys", dev.Token, map[string]any{"name": "k", "expires_at": apptest.Start.Add(-time.Hour)}, http.StatusBadRequest)
		r := e.Call(t, "POST", "/v1/api-keys", dev.Token, map[string]any{
			"name": "ci", "description": "for CI", "scopes": []string{"api_keys:read", "two_factor:read"},
			"expires_at": apptest.Start.Add(2 * time.Hour)}, http.StatusCreated)
		k := r.JSON()
		key, id := k["key"].(string), k["id"].(string)
		if !strings.HasPrefix(key, "hm_") || k["key_prefix"] != key[:10]+"…" {
			t.Fatalf("key = %v", k)
		}
		// The key authenticates with its scopes only.
		list := e.Call(t, "GET", "/v1/api-keys", key, nil, http.StatusOK).JSON()
		if list["pagination"].(map[string]any)["total"].(float64) != 1 {
			t.Fatalf("dev sees %v keys", list["pagination"])
		}
		if strings.Contains(string(e.Call(t, "GET", "/v1/api-keys/"+id, dev.Token, nil, http.StatusOK).Body), key) {
			t.Fatal("key value shown after creation")
		}
		e.Call(t, "POST", "/v1/api-keys", key, map[string]any{"name": "nested"}, http.StatusForbidden)
		// Others cannot see it; admins can.
		e.Call(t, "GET", "/v1/api-keys/"+id, e.NewUser(t, apptest.UserSpec{Roles: []string{"role_developer"}}).Token, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/api-keys/"+id, admin.Token, nil, http.StatusOK)
		e.Call(t, "GET", "/v1/api-keys/nope", dev.Token, nil, http.StatusNotFound)

		// PATCH follows the subset rule.
		e.Call(t, "PATCH", "/v1/api-keys/"+id, dev.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/api-keys/"+id, dev.Token, map[string]any{"scopes": []string{"roles:write"}}, http.StatusForbidden)
		p := e.Call(t, "PATCH", "/v1/api-keys/"+id, dev.Token, map[string]any{"name": "ci2", "scopes": []string{"api_keys:*"}}, http.StatusOK).JSON()["data"].(map[string]any)
		if p["name"] != "ci2" {
			t.Fatalf("patched = %v", p)
		}

		// Regenerate: same id, old value dead at once.
		g := e.Call(t, "POST", "/v1/api-keys/"+id+"/regenerate", dev.Token, nil, http.StatusOK).JSON()
		if g["id"] != id || g["key"] == key {
			t.Fatalf("regenerate = %v", g)
		}
		e.Call(t, "GET", "/v1/api-keys", key, nil, http.StatusUnauthorized)
		key = g["key"].(string)
		e.Call(t, "GET", "/v1/api-keys", key, nil, http.StatusOK)

		// Expiry is honoured.
		e.Clock.Advance(3 * time.Hour)
		e.Call(t, "GET", "/v1/api-keys", key, nil, http.StatusUnauthorized)
		e.Clock.Set(apptest.Start)

		// Key roles: only roles the caller holds.
		e.Call(t, "POST", "/v1/api-keys/"+id+"/roles", dev.Token, map[string]any{"role_id": "role_admin"}, http.StatusForbidden)
		e.Call(t, "POST", "/v1/api-keys/"+id+"/roles", dev.Token, map[string]any{"role_id": "nope"}, http.StatusNotFound)
		e.Call(t, "POST", "/v1/api-keys/"+id+"/roles", dev.Token, map[string]any{}, http.StatusBadRequest)
		rr := e.Call(t, "POST", "/v1/api-keys/"+id+"/roles", dev.Token, map[string]any{"role_id": "role_developer"}, http.StatusCreated).JSON()
		if len(rr["data"].([]any)) != 1 {
			t.Fatalf("key roles = %v", rr)
		}
		e.Call(t, "GET", "/v1/api-keys/"+id+"/roles", dev.Token, nil, http.StatusOK)
		e.Call(t, "DELETE", "/v1/api-keys/"+id+"/roles/role_developer", dev.Token, nil, http.StatusNoContent)
		e.Call(t, "DELETE", "/v1/api-keys/"+id+"/roles/role_developer", dev.Token, nil, http.StatusNotFound)

		// System keys: not deletable, regenerated only by super admins.
		var sysID string
		for _, k := range e.Call(t, "GET", "/v1/api-keys", admin.Token, nil, http.StatusOK).JSON()["data"].([]any) {
			if m := k.(map[string]any); m["is_system"] == true {
				sysID = m["id"].(string)
			}
		}
		e.Call(t, "DELETE", "/v1/api-keys/"+sysID, e.SystemKey, nil, http.StatusForbidden)
		e.Call(t, "POST", "/v1/api-keys/"+sysID+"/regenerate", e.SystemKey, nil, http.StatusForbidden)

		e.Call(t, "DELETE", "/v1/api-keys/"+id, plain.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/api-keys/"+id, dev.Token, nil, http.StatusNoContent)
		e.Call(t, "GET", "/v1/api-keys", key, nil, http.StatusUnauthorized)
		e.Call(t, "DELETE", "/v1/api-keys/"+id, dev.Token, nil, http.StatusNotFound)

		// A key never holds more than its owner: remove the owner's role and the key loses it.
		k2 := e.Call(t, "POST", "/v1/api-keys", dev.Token, map[string]any{"name": "k2", "scopes": []string{"api_keys:read"}}, http.StatusCreated).JSON()["key"].(string)
		e.Call(t, "GET", "/v1/api-keys", k2, nil, http.StatusOK)
		if _, err := e.Server.DB.ExecContext(t.Context(), `DELETE FROM user_roles WHERE user_id = $1 AND role_id = 'role_developer'`, dev.ID); err != nil {
			t.Fatal(err)
		}
		if err := e.Server.Epoch.Bump(t.Context()); err != nil {
			t.Fatal(err)
		}
		e.Call(t, "GET", "/v1/api-keys", k2, nil, http.StatusForbidden)
	})
}

func TestMalformedInputIsA400(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		big := `{"name":"` + strings.Repeat("a", 1<<20+10) + `"}`
		for _, body := range []string{`{`, `[]`, `{"name": {"x": 1}}`, `{"name":"a"} trailing`, big, ``} {
			r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/roles", Token: e.SystemKey, Body: body})
			if r.Status != http.StatusBadRequest {
				t.Errorf("body %.30q: status %d %s", body, r.Status, r.Body)
			}
		}
		e.Call(t, "GET", "/v1/roles", "", nil, http.StatusUnauthorized)
		r := e.Do(t, apptest.Req{Method: "GET", Path: "/v1/roles", Header: map[string]string{"Authorization": "Basic abc"}})
		if r.Status != http.StatusUnauthorized || r.JSON()["error"] != "Unauthorized" {
			t.Fatalf("basic auth: %d %s", r.Status, r.Body)
		}
	})
}
