package app_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"hmid/internal/access"
	"hmid/internal/apptest"
	"hmid/internal/audit"
	"hmid/internal/db"
)

// scalar reads one value from the env's database.
func scalar[T any](t *testing.T, e *apptest.Env, q string, args ...any) T {
	t.Helper()
	var v T
	if err := e.Server.DB.QueryRowContext(context.Background(), q, args...).Scan(&v); err != nil {
		t.Fatalf("query: %v\n%s", err, q)
	}
	return v
}

// manager is a non-admin user holding the users permissions through a role.
func manager(t *testing.T, e *apptest.Env, perms ...string) apptest.User {
	t.Helper()
	if perms == nil {
		perms = []string{"users:read", "users:write", "users:delete"}
	}
	return e.NewUser(t, apptest.UserSpec{Roles: []string{"role_user", roleWith(t, e, perms...)}})
}

func userAuditCount(t *testing.T, e *apptest.Env, userID, eventType string) int {
	t.Helper()
	return scalar[int](t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = $2`, userID, eventType)
}

func data(t *testing.T, r *apptest.Resp) map[string]any {
	t.Helper()
	d, ok := r.JSON()["data"].(map[string]any)
	if !ok {
		t.Fatalf("no data object in %s", r.Body)
	}
	return d
}

func TestUsersListAndGet(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		u := e.NewUser(t, apptest.UserSpec{Username: "Alice_1"})
		other := e.NewUser(t, apptest.UserSpec{})
		for range 22 {
			e.NewUser(t, apptest.UserSpec{})
		}

		e.Call(t, "GET", "/v1/users", "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/users", u.Token, nil, http.StatusForbidden)
		m := e.Call(t, "GET", "/v1/users", admin.Token, nil, http.StatusOK).JSON()
		pg := m["pagination"].(map[string]any)
		if pg["limit"] != 20.0 || pg["total"] != 25.0 || pg["total_pages"] != 2.0 || len(m["data"].([]any)) != 20 {
			t.Fatalf("pagination = %v, %d items", pg, len(m["data"].([]any)))
		}
		m = e.Call(t, "GET", "/v1/users?page=2&limit=500", e.SystemKey, nil, http.StatusOK).JSON()
		if pg := m["pagination"].(map[string]any); pg["limit"] != 100.0 || len(m["data"].([]any)) != 0 {
			t.Fatalf("clamped page = %v", pg)
		}
		m = e.Call(t, "GET", "/v1/users?search=alice", admin.Token, nil, http.StatusOK).JSON()
		if items := m["data"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != u.ID {
			t.Fatalf("search = %v", items)
		}

		d := data(t, e.Call(t, "GET", "/v1/users/"+u.ID, u.Token, nil, http.StatusOK))
		for _, k := range []string{"id", "username", "email", "name", "avatar_url", "primary_platform_account_id", "created_at", "updated_at",
			"last_login_at", "deleted_at", "privacy_mode", "preferred_locale", "avatars_enabled", "is_super_admin"} {
			if _, ok := d[k]; !ok {
				t.Errorf("user lacks %s: %v", k, d)
			}
		}
		if d["username"] != "Alice_1" || d["is_super_admin"] != false || d["avatars_enabled"] != true {
			t.Fatalf("user = %v", d)
		}
		e.Call(t, "GET", "/v1/users/"+other.ID, u.Token, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/users/"+other.ID, admin.Token, nil, http.StatusOK)
		e.Call(t, "GET", "/v1/users/"+uuid.NewString(), admin.Token, nil, http.StatusNotFound)

		me := data(t, e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK))
		if me["id"] != u.ID {
			t.Fatalf("me = %v", me)
		}
		e.Call(t, "GET", "/v1/users/me", "", nil, http.StatusUnauthorized)
		// An ownerless system key is nobody.
		e.Call(t, "GET", "/v1/users/me", e.SystemKey, nil, http.StatusNotFound)
		key, _ := e.NewAPIKey(t, u.ID)
		if data(t, e.Call(t, "GET", "/v1/users/me", key, nil, http.StatusOK))["id"] != u.ID {
			t.Fatal("API key /me is not its owner")
		}
	})
}

func TestUserProfile(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "prof_user"})
		other := e.NewUser(t, apptest.UserSpec{})
		admin := e.Admin(t)
		d := data(t, e.Call(t, "GET", "/v1/users/"+u.ID+"/profile", u.Token, nil, http.StatusOK))
		if d["name"] != "prof_user" || d["display_name"] != "prof_user" || d["provider"] != "email" || d["primary_provider"] != "email" ||
			d["privacy_mode"] != false || d["avatars_enabled"] != true || d["picture"] != nil {
			t.Fatalf("profile = %v", d)
		}
		e.Call(t, "GET", "/v1/users/"+u.ID+"/profile", other.Token, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/users/"+u.ID+"/profile", admin.Token, nil, http.StatusOK)
		e.Call(t, "GET", "/v1/users/"+uuid.NewString()+"/profile", admin.Token, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/users/"+u.ID+"/profile", "", nil, http.StatusUnauthorized)
	})
}

func TestUserPatch(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "patch_me"})
		other := e.NewUser(t, apptest.UserSpec{Username: "Taken_Name", Email: "taken@example.test"})
		admin := e.Admin(t)
		mgr := manager(t, e)
		path := "/v1/users/" + u.ID

		e.Call(t, "PATCH", path, "", map[string]any{"privacy_mode": true}, http.StatusUnauthorized)
		e.Call(t, "PATCH", path, other.Token, map[string]any{"privacy_mode": true}, http.StatusForbidden)
		e.Call(t, "PATCH", path, u.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PATCH", path, u.Token, `{"privacy_mode": "yes"}`, http.StatusBadRequest)
		e.Call(t, "PATCH", path, u.Token, `{"privacy_mode":`, http.StatusBadRequest)
		e.Call(t, "PATCH", path, u.Token, map[string]any{"username": "no spaces"}, http.StatusBadRequest)
		e.Call(t, "PATCH", path, u.Token, map[string]any{"username": "ab"}, http.StatusBadRequest)
		e.Call(t, "PATCH", path, u.Token, map[string]any{"username": "taken_name"}, http.StatusConflict)
		e.Call(t, "PATCH", path, u.Token, map[string]any{"avatar_url": "javascript:alert(1)"}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/users/"+uuid.NewString(), admin.Token, map[string]any{"privacy_mode": true}, http.StatusNotFound)

		before := data(t, e.Call(t, "GET", path, u.Token, nil, http.StatusOK))
		e.Clock.Advance(time.Minute)
		d := data(t, e.Call(t, "PATCH", path, u.Token, map[string]any{"privacy_mode": true, "username": "Patched_1",
			"avatar_url": "https://cdn.example.test/a.png"}, http.StatusOK))
		if d["privacy_mode"] != true || d["username"] != "Patched_1" || d["avatar_url"] != "https://cdn.example.test/a.png" ||
			d["email"] != before["email"] || d["updated_at"] == before["updated_at"] {
			t.Fatalf("patched = %v", d)
		}
		// Only provided fields change.
		d = data(t, e.Call(t, "PATCH", path, u.Token, map[string]any{"privacy_mode": false}, http.StatusOK))
		if d["username"] != "Patched_1" || d["avatar_url"] != "https://cdn.example.test/a.png" {
			t.Fatalf("unsent fields changed: %v", d)
		}
		if n := userAuditCount(t, e, u.ID, "user_updated"); n != 2 {
			t.Fatalf("user_updated events = %d", n)
		}

		// Email: self or users:write may set it; taken addresses conflict case-insensitively.
		if d := data(t, e.Call(t, "PATCH", path, u.Token, map[string]any{"email": "self@example.test"}, http.StatusOK)); d["email"] != "self@example.test" {
			t.Fatalf("self email = %v", d["email"])
		}
		e.Call(t, "PATCH", path, mgr.Token, map[string]any{"email": "TAKEN@example.test"}, http.StatusConflict)
		e.Call(t, "PATCH", path, mgr.Token, map[string]any{"email": "not-an-email"}, http.StatusBadRequest)
		if d := data(t, e.Call(t, "PATCH", path, mgr.Token, map[string]any{"email": "New@Example.test"}, http.StatusOK)); d["email"] != "new@example.test" {
			t.Fatalf("email = %v", d["email"])
		}
		// A manager (not super admin) cannot change a super admin.
		e.Call(t, "PATCH", "/v1/users/"+admin.ID, mgr.Token, map[string]any{"email": "evil@example.test"}, http.StatusForbidden)

		// avatars_enabled false removes stored avatars, of the user and their platform accounts.
		execSQL(t, e, `UPDATE platform_accounts SET avatar_url = 'https://cdn.example.test/p.png' WHERE user_id = $1`, u.ID)
		d = data(t, e.Call(t, "PATCH", path, u.Token, map[string]any{"avatars_enabled": false}, http.StatusOK))
		if d["avatars_enabled"] != false || d["avatar_url"] != nil {
			t.Fatalf("avatars off = %v", d)
		}
		if n := scalar[int](t, e, `SELECT COUNT(*) FROM platform_accounts WHERE user_id = $1 AND avatar_url IS NOT NULL`, u.ID); n != 0 {
			t.Fatalf("%d platform avatars kept", n)
		}
		e.Call(t, "PATCH", path, u.Token, map[string]any{"avatar_url": "https://cdn.example.test/b.png"}, http.StatusBadRequest)
		d = data(t, e.Call(t, "PATCH", path, u.Token, map[string]any{"avatars_enabled": true, "avatar_url": "https://cdn.example.test/b.png"}, http.StatusOK))
		if d["avatar_url"] != "https://cdn.example.test/b.png" {
			t.Fatalf("avatar = %v", d["avatar_url"])
		}
		d = data(t, e.Call(t, "PATCH", path, u.Token, map[string]any{"avatar_url": nil}, http.StatusOK))
		if d["avatar_url"] != nil {
			t.Fatalf("avatar not cleared: %v", d["avatar_url"])
		}
	})
}

func TestUserLocaleAndUsername(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "loc_user"})
		other := e.NewUser(t, apptest.UserSpec{Username: "Other_One"})
		admin := e.Admin(t)
		loc := "/v1/users/" + u.ID + "/locale"
		if d := data(t, e.Call(t, "PATCH", loc, u.Token, map[string]any{"locale": "de"}, http.StatusOK)); d["preferred_locale"] != "de" {
			t.Fatalf("locale = %v", d["preferred_locale"])
		}
		if d := data(t, e.Call(t, "PATCH", loc, admin.Token, map[string]any{"locale": "EN"}, http.StatusOK)); d["preferred_locale"] != "en" {
			t.Fatalf("locale = %v", d["preferred_locale"])
		}
		if d := data(t, e.Call(t, "PATCH", loc, u.Token, map[string]any{"locale": nil}, http.StatusOK)); d["preferred_locale"] != nil {
			t.Fatalf("locale = %v", d["preferred_locale"])
		}
		e.Call(t, "PATCH", loc, u.Token, map[string]any{"locale": "fr"}, http.StatusBadRequest)
		e.Call(t, "PATCH", loc, u.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PATCH", loc, u.Token, map[string]any{"locale": 7}, http.StatusBadRequest)
		e.Call(t, "PATCH", loc, other.Token, map[string]any{"locale": "de"}, http.StatusForbidden)
		e.Call(t, "PATCH", "/v1/users/"+uuid.NewString()+"/locale", admin.Token, map[string]any{"locale": "de"}, http.StatusNotFound)

		un := "/v1/users/" + u.ID + "/username"
		for _, bad := range []string{"", "ab", strings.Repeat("a", 31), "has-dash", "ümlaut", "a b c"} {
			e.Call(t, "PATCH", un, u.Token, map[string]any{"username": bad}, http.StatusBadRequest)
		}
		e.Call(t, "PATCH", un, u.Token, map[string]any{"username": "other_one"}, http.StatusConflict)
		e.Call(t, "PATCH", "/v1/users/"+uuid.NewString()+"/username", admin.Token, map[string]any{"username": "free_name"}, http.StatusNotFound)
		e.Call(t, "PATCH", un, other.Token, map[string]any{"username": "free_name"}, http.StatusForbidden)
		if d := data(t, e.Call(t, "PATCH", un, u.Token, map[string]any{"username": strings.Repeat("z", 30)}, http.StatusOK)); d["username"] != strings.Repeat("z", 30) {
			t.Fatalf("username = %v", d["username"])
		}
		// Changing only the case of one's own name is not a conflict.
		e.Call(t, "PATCH", un, u.Token, map[string]any{"username": strings.Repeat("Z", 30)}, http.StatusOK)
		if n := userAuditCount(t, e, u.ID, "user_updated"); n != 5 {
			t.Fatalf("user_updated events = %d", n)
		}
	})
}

func TestUserDelete(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		mgr := manager(t, e, "users:read", "users:write")
		u := e.NewUser(t, apptest.UserSpec{})
		tok2, _ := e.NewSession(t, u.ID)
		key, _ := e.NewAPIKey(t, u.ID)
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK)
		e.Call(t, "GET", "/v1/users/me", key, nil, http.StatusOK)

		e.Call(t, "DELETE", "/v1/users/"+u.ID, "", nil, http.StatusUnauthorized)
		e.Call(t, "DELETE", "/v1/users/"+u.ID, u.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/users/"+u.ID, mgr.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/users/"+uuid.NewString(), admin.Token, nil, http.StatusNotFound)
		e.Call(t, "DELETE", "/v1/users/"+u.ID, admin.Token, nil, http.StatusNoContent)

		// Every credential of the user stops working at once.
		for _, tok := range []string{u.Token, tok2, key} {
			e.Call(t, "GET", "/v1/users/me", tok, nil, http.StatusUnauthorized)
		}
		if n := scalar[int](t, e, `SELECT COUNT(*) FROM sessions WHERE user_id = $1 AND revoked_at IS NULL`, u.ID); n != 0 {
			t.Fatalf("%d sessions left", n)
		}
		if n := scalar[int](t, e, `SELECT COUNT(*) FROM api_keys WHERE user_id = $1`, u.ID); n != 0 {
			t.Fatalf("%d API keys left", n)
		}
		if n := userAuditCount(t, e, u.ID, "user_deleted"); n != 1 {
			t.Fatalf("user_deleted events = %d", n)
		}
		d := data(t, e.Call(t, "GET", "/v1/users/"+u.ID, admin.Token, nil, http.StatusOK))
		del, _ := time.Parse(time.RFC3339Nano, d["deleted_at"].(string))
		sched, _ := time.Parse(time.RFC3339Nano, d["scheduled_deletion_at"].(string))
		if !del.Equal(apptest.Start) || sched.Sub(del) != 7*24*time.Hour {
			t.Fatalf("deleted_at %v, scheduled %v", d["deleted_at"], d["scheduled_deletion_at"])
		}
		// A deleted user is gone from the list (unless asked for) and cannot be changed or deleted again.
		for _, item := range e.Call(t, "GET", "/v1/users?limit=100", admin.Token, nil, http.StatusOK).JSON()["data"].([]any) {
			if item.(map[string]any)["id"] == u.ID {
				t.Fatal("deleted user listed")
			}
		}
		found := false
		for _, item := range e.Call(t, "GET", "/v1/users?include_deleted=true&limit=100", admin.Token, nil, http.StatusOK).JSON()["data"].([]any) {
			found = found || item.(map[string]any)["id"] == u.ID
		}
		if !found {
			t.Fatal("include_deleted does not list the deleted user")
		}
		e.Call(t, "DELETE", "/v1/users/"+u.ID, admin.Token, nil, http.StatusNotFound)
		e.Call(t, "PATCH", "/v1/users/"+u.ID, admin.Token, map[string]any{"privacy_mode": true}, http.StatusNotFound)

		// A deleter without super-admin standing cannot delete a super admin.
		del2 := manager(t, e, "users:delete")
		e.Call(t, "DELETE", "/v1/users/"+admin.ID, del2.Token, nil, http.StatusForbidden)
	})
}

func TestUserRolesAndPermissions(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		u := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		mgr := manager(t, e, "users:read", "users:write")

		perms := e.Call(t, "GET", "/v1/users/"+admin.ID+"/permissions", admin.Token, nil, http.StatusOK).JSON()["permissions"].([]any)
		if len(perms) != 1 || perms[0] != "*:*" {
			t.Fatalf("super admin permissions = %v", perms)
		}
		perms = e.Call(t, "GET", "/v1/users/"+u.ID+"/permissions", u.Token, nil, http.StatusOK).JSON()["permissions"].([]any)
		if fmt.Sprint(perms) != "[two_factor:read two_factor:write]" {
			t.Fatalf("user permissions = %v", perms)
		}
		e.Call(t, "GET", "/v1/users/"+u.ID+"/permissions", other.Token, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/users/"+uuid.NewString()+"/permissions", admin.Token, nil, http.StatusNotFound)

		roles := e.Call(t, "GET", "/v1/users/"+u.ID+"/roles", u.Token, nil, http.StatusOK).JSON()["roles"].([]any)
		if len(roles) != 1 || roles[0].(map[string]any)["id"] != "role_user" {
			t.Fatalf("roles = %v", roles)
		}
		e.Call(t, "GET", "/v1/users/"+u.ID+"/roles", other.Token, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/users/"+uuid.NewString()+"/roles", admin.Token, nil, http.StatusNotFound)

		add := "/v1/users/" + u.ID + "/roles"
		e.Call(t, "POST", add, u.Token, map[string]any{"role_id": "role_admin"}, http.StatusForbidden)
		e.Call(t, "POST", add, admin.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "POST", add, admin.Token, map[string]any{"role_id": "role_nope"}, http.StatusNotFound)
		e.Call(t, "POST", "/v1/users/"+uuid.NewString()+"/roles", admin.Token, map[string]any{"role_id": "role_user"}, http.StatusNotFound)
		// Scope escalation: a manager cannot hand out a role holding more than they have.
		e.Call(t, "POST", add, mgr.Token, map[string]any{"role_id": "role_developer"}, http.StatusForbidden)
		e.Call(t, "POST", add, mgr.Token, map[string]any{"role_id": "role_admin"}, http.StatusForbidden)

		// The user cannot list roles yet; assigning a role takes effect at once.
		e.Call(t, "GET", "/v1/roles", u.Token, nil, http.StatusForbidden)
		reader := roleWith(t, e, "roles:read")
		e.Call(t, "POST", add, mgr.Token, map[string]any{"role_id": reader}, http.StatusForbidden)
		roles = e.Call(t, "POST", add, admin.Token, map[string]any{"role_id": reader}, http.StatusCreated).JSON()["roles"].([]any)
		if len(roles) != 2 {
			t.Fatalf("roles after add = %v", roles)
		}
		e.Call(t, "POST", add, admin.Token, map[string]any{"role_id": reader}, http.StatusOK)
		e.Call(t, "GET", "/v1/roles", u.Token, nil, http.StatusOK)

		// Removing follows the same standing rule, and also takes effect at once.
		e.Call(t, "DELETE", add+"/"+reader, u.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", add+"/"+reader, mgr.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", add+"/"+reader, admin.Token, nil, http.StatusNoContent)
		e.Call(t, "DELETE", add+"/"+reader, admin.Token, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/roles", u.Token, nil, http.StatusForbidden)

		// A manager may assign a role within their own permissions.
		mine := roleWith(t, e, "users:read")
		e.Call(t, "POST", add, mgr.Token, map[string]any{"role_id": mine}, http.StatusCreated)
		e.Call(t, "DELETE", add+"/"+mine, mgr.Token, nil, http.StatusNoContent)
		if n := userAuditCount(t, e, u.ID, "user_updated"); n != 4 {
			t.Fatalf("role change events = %d", n)
		}
	})
}

func TestUserByEmail(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Email: "mail_me@example.test"})
		other := e.NewUser(t, apptest.UserSpec{Email: "other@example.test"})
		d := data(t, e.Call(t, "GET", "/v1/users/email/MAIL_ME@example.test", e.SystemKey, nil, http.StatusOK))
		if d["id"] != u.ID || d["platform"] != "email" || d["is_banned"] != false || d["email"] != "mail_me@example.test" {
			t.Fatalf("by email = %v", d)
		}
		e.Call(t, "GET", "/v1/users/email/mail_me@example.test", u.Token, nil, http.StatusOK)
		e.Call(t, "GET", "/v1/users/email/mail_me@example.test", other.Token, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/users/email/nobody@example.test", other.Token, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/users/email/nobody@example.test", e.SystemKey, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/users/email/mail_me@example.test", "", nil, http.StatusUnauthorized)

		execSQL(t, e, `INSERT INTO bans (id, user_id, reason, banned_at, is_permanent) VALUES ($1, $2, 'spam', $3, TRUE)`, uuid.NewString(), u.ID, db.TS(e.Clock.Now()))
		if d := data(t, e.Call(t, "GET", "/v1/users/email/mail_me@example.test", e.SystemKey, nil, http.StatusOK)); d["is_banned"] != true {
			t.Fatalf("is_banned = %v", d["is_banned"])
		}
	})
}

// TestUserByEmailSharedAddress: when two users share one address (registration
// and a provider sign-in can lead there), a normal caller gets only their own
// record, never the other's, whichever of them is older.
func TestUserByEmailSharedAddress(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		a := e.NewUser(t, apptest.UserSpec{Email: "shared@example.test"})
		b := e.NewUser(t, apptest.UserSpec{})
		c := e.NewUser(t, apptest.UserSpec{})
		execSQL(t, e, `UPDATE users SET email = 'Shared@example.test', created_at = $1 WHERE id = $2`, db.TS(e.Clock.Now().Add(-time.Hour)), b.ID)
		execSQL(t, e, `UPDATE users SET email = 'shared@example.test', created_at = $1 WHERE id = $2`, db.TS(e.Clock.Now().Add(time.Hour)), c.ID)
		for _, u := range []apptest.User{a, b, c} {
			if d := data(t, e.Call(t, "GET", "/v1/users/email/shared@example.test", u.Token, nil, http.StatusOK)); d["id"] != u.ID {
				t.Fatalf("user %s looked up their shared address and got %v", u.ID, d["id"])
			}
		}
		key, _ := e.NewAPIKey(t, a.ID, "users:write")
		if d := data(t, e.Call(t, "GET", "/v1/users/email/shared@example.test", key, nil, http.StatusOK)); d["id"] != a.ID {
			t.Fatalf("a's key got %v", d["id"])
		}
		if d := data(t, e.Call(t, "GET", "/v1/users/email/shared@example.test", e.SystemKey, nil, http.StatusOK)); d["id"] != b.ID {
			t.Fatalf("system key got %v, want the oldest %s", d["id"], b.ID)
		}
		// A soft-deleted caller no longer owns the address.
		execSQL(t, e, `UPDATE users SET deleted_at = $1 WHERE id = $2`, db.TS(e.Clock.Now()), c.ID)
		r := e.Do(t, apptest.Req{Method: "GET", Path: "/v1/users/email/shared@example.test", Token: c.Token})
		if r.Status == http.StatusOK {
			t.Fatalf("a soft-deleted user read %s", r.Body)
		}
	})
}

func TestOAuthLogin(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Email: "linked@example.test"})
		body := map[string]any{"email": "New.Person@example.test", "name": "New Person", "oauthProvider": "discord",
			"oauthProviderId": "1234567890", "image": "https://cdn.discord.test/a.png"}
		e.Call(t, "POST", "/v1/users/oauth", "", body, http.StatusUnauthorized)
		e.Call(t, "POST", "/v1/users/oauth", u.Token, body, http.StatusForbidden)

		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/users/oauth", Token: e.SystemKey, Body: body, Header: map[string]string{"X-Source-Service": "id"}})
		if r.Status != http.StatusCreated {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		d := data(t, r)
		id := d["id"].(string)
		if d["username"] != "New_Person" || d["email"] != "new.person@example.test" || d["platform"] != "discord" ||
			d["avatar_url"] != "https://cdn.discord.test/a.png" || d["is_banned"] != false || d["last_login_at"] == nil {
			t.Fatalf("created = %v", d)
		}
		if userAuditCount(t, e, id, "user_created") != 1 || userAuditCount(t, e, id, "login") != 1 {
			t.Fatal("user_created / login not audited")
		}
		if src := scalar[string](t, e, `SELECT source_service FROM audit_events WHERE user_id = $1 AND event_type = 'login'`, id); src != "id" {
			t.Fatalf("source_service = %s", src)
		}

		// The same provider account again: updated, not created.
		e.Clock.Advance(time.Hour)
		body["image"] = "https://cdn.discord.test/b.png"
		d = data(t, e.Call(t, "POST", "/v1/users/oauth", e.SystemKey, body, http.StatusOK))
		if d["id"] != id || d["avatar_url"] != "https://cdn.discord.test/b.png" {
			t.Fatalf("updated = %v", d)
		}
		if at, _ := time.Parse(time.RFC3339Nano, d["last_login_at"].(string)); !at.Equal(apptest.Start.Add(time.Hour)) {
			t.Fatalf("last_login_at = %v", d["last_login_at"])
		}

		// Avatars off: the provider's image is not stored.
		e.Call(t, "PATCH", "/v1/users/"+id, e.SystemKey, map[string]any{"avatars_enabled": false}, http.StatusOK)
		d = data(t, e.Call(t, "POST", "/v1/users/oauth", e.SystemKey, body, http.StatusOK))
		if d["avatar_url"] != nil || scalar[int](t, e, `SELECT COUNT(*) FROM platform_accounts WHERE user_id = $1 AND avatar_url IS NOT NULL`, id) != 0 {
			t.Fatalf("avatar stored while disabled: %v", d)
		}

		// Another platform with the email of an existing user links to that user.
		link := map[string]any{"email": "LINKED@example.test", "name": "Linked", "oauthProvider": "github", "oauthProviderId": "gh-1", "image": nil}
		d = data(t, e.Call(t, "POST", "/v1/users/oauth", e.SystemKey, link, http.StatusOK))
		if d["id"] != u.ID || d["platform"] != "github" {
			t.Fatalf("linked = %v", d)
		}
		if userAuditCount(t, e, u.ID, "account_linked") != 1 {
			t.Fatal("account_linked not audited")
		}
		if n := scalar[int](t, e, `SELECT COUNT(*) FROM platform_accounts WHERE user_id = $1`, u.ID); n != 2 {
			t.Fatalf("platform accounts = %d", n)
		}

		// An unverified contact email does not capture someone else's first sign-in.
		e.Call(t, "PATCH", "/v1/users/"+u.ID, u.Token, map[string]any{"email": "victim@example.test"}, http.StatusOK)
		d = data(t, e.Call(t, "POST", "/v1/users/oauth", e.SystemKey, map[string]any{"email": "victim@example.test", "name": "Victim",
			"oauthProvider": "google", "oauthProviderId": "g-victim"}, http.StatusCreated))
		if d["id"] == u.ID {
			t.Fatal("sign-in linked to an account by an unverified email")
		}

		// No email at all creates a user without one.
		d = data(t, e.Call(t, "POST", "/v1/users/oauth", e.SystemKey, map[string]any{"email": nil, "name": "x", "oauthProvider": "twitch", "oauthProviderId": "t1"}, http.StatusCreated))
		if d["email"] != nil || len(d["username"].(string)) < 3 {
			t.Fatalf("no-email user = %v", d)
		}

		for _, bad := range []map[string]any{
			{"name": "a", "oauthProvider": "discord"},
			{"name": "", "oauthProvider": "discord", "oauthProviderId": "1"},
			{"name": "a", "oauthProvider": "myspace", "oauthProviderId": "1"},
			{"name": "a", "oauthProvider": "discord", "oauthProviderId": "2", "email": "nope"},
			{"name": "a", "oauthProvider": "discord", "oauthProviderId": "2", "image": "ftp://x"},
		} {
			e.Call(t, "POST", "/v1/users/oauth", e.SystemKey, bad, http.StatusBadRequest)
		}
		e.Call(t, "POST", "/v1/users/oauth", e.SystemKey, `{"name": 5}`, http.StatusBadRequest)

		// Closed registration refuses new users but lets known accounts in; a disabled platform refuses everyone.
		execSQL(t, e, `UPDATE platforms SET registration_enabled = FALSE WHERE slug = 'discord'`)
		e.Call(t, "POST", "/v1/users/oauth", e.SystemKey, map[string]any{"name": "b", "oauthProvider": "discord", "oauthProviderId": "999"}, http.StatusForbidden)
		e.Call(t, "POST", "/v1/users/oauth", e.SystemKey, body, http.StatusOK)
		execSQL(t, e, `UPDATE platforms SET enabled = FALSE WHERE slug = 'discord'`)
		e.Call(t, "POST", "/v1/users/oauth", e.SystemKey, body, http.StatusForbidden)
		execSQL(t, e, `UPDATE platforms SET enabled = TRUE, registration_enabled = TRUE WHERE slug = 'discord'`)

		// A soft-deleted account cannot sign in.
		e.Call(t, "DELETE", "/v1/users/"+id, e.SystemKey, nil, http.StatusNoContent)
		e.Call(t, "POST", "/v1/users/oauth", e.SystemKey, body, http.StatusForbidden)
	})
}

func TestDeadCredentials(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		key, keyID := e.NewAPIKey(t, u.ID)
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK)
		e.Call(t, "GET", "/v1/users/me", key, nil, http.StatusOK)

		// last_used_at is written at most once a minute.
		used := func() int64 {
			return scalar[sql.NullInt64](t, e, `SELECT last_used_at FROM api_keys WHERE id = $1`, keyID).Int64
		}
		first := used()
		if first != db.TS(apptest.Start) {
			t.Fatalf("last_used_at = %d", first)
		}
		e.Clock.Advance(40 * time.Second) // past the principal cache, inside the minute
		e.Call(t, "GET", "/v1/users/me", key, nil, http.StatusOK)
		if used() != first {
			t.Fatal("last_used_at rewritten within a minute")
		}
		e.Clock.Advance(25 * time.Second)
		e.Call(t, "GET", "/v1/users/me", key, nil, http.StatusOK)
		if got := used(); got != db.TS(apptest.Start.Add(65*time.Second)) {
			t.Fatalf("last_used_at after a minute = %d", got)
		}

		// A ban (written by the bans area, which bumps the epoch) stops every credential.
		execSQL(t, e, `INSERT INTO bans (id, user_id, reason, banned_at, expires_at, is_permanent) VALUES ($1, $2, 'test', $3, $4, FALSE)`,
			uuid.NewString(), u.ID, db.TS(e.Clock.Now()), db.TS(e.Clock.Now().Add(time.Hour)))
		if err := e.Server.Epoch.Bump(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/users/me", key, nil, http.StatusUnauthorized)
		// …until the timed ban ends.
		e.Clock.Advance(time.Hour + time.Second)
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK)

		// An expired API key answers 401.
		exp, expID := e.NewAPIKey(t, u.ID)
		execSQL(t, e, `UPDATE api_keys SET expires_at = $1 WHERE id = $2`, db.TS(e.Clock.Now().Add(time.Minute)), expID)
		e.Call(t, "GET", "/v1/users/me", exp, nil, http.StatusOK)
		e.Clock.Advance(time.Minute)
		e.Call(t, "GET", "/v1/users/me", exp, nil, http.StatusUnauthorized)

		// An expired session answers 401.
		e.Clock.Advance(31 * 24 * time.Hour)
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusUnauthorized)
	})
}

func TestOAuthLoginConcurrentFirstSignIn(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		body := map[string]any{"email": "race@example.test", "name": "Racer", "oauthProvider": "google", "oauthProviderId": "g-race"}
		statuses := apptest.AtOnce(8, func(int) int {
			return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/users/oauth", Token: e.SystemKey, Body: body}).Status
		})
		created := 0
		for _, s := range statuses {
			switch s {
			case http.StatusCreated:
				created++
			case http.StatusOK:
			default:
				t.Errorf("status %d", s)
			}
		}
		if created != 1 {
			t.Fatalf("%d sign-ins created the user", created)
		}
		if n := scalar[int](t, e, `SELECT COUNT(*) FROM users WHERE email = 'race@example.test'`); n != 1 {
			t.Fatalf("%d users", n)
		}
	})
}

// TestOAuthLoginConcurrentSameName: sixteen first sign-ins of different
// accounts with the same display name at once all succeed, each with a
// username of its own (they derive the same name and must not collide).
func TestOAuthLoginConcurrentSameName(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const n = 16
		type answer struct {
			status   int
			username string
		}
		answers := make(chan answer, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := map[string]any{"email": fmt.Sprintf("same%d@example.test", i), "name": "Same Name", "oauthProvider": "discord",
					"oauthProviderId": fmt.Sprintf("same-%d", i)}
				<-start
				r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/users/oauth", Token: e.SystemKey, Body: body})
				a := answer{status: r.Status}
				if d, ok := r.JSON()["data"].(map[string]any); ok {
					a.username, _ = d["username"].(string)
				}
				answers <- a
			}()
		}
		close(start)
		wg.Wait()
		close(answers)
		seen := map[string]bool{}
		for a := range answers {
			if a.status != http.StatusCreated || a.username == "" {
				t.Errorf("sign-in answered %d, username %q", a.status, a.username)
				continue
			}
			if seen[strings.ToLower(a.username)] {
				t.Errorf("username %q given twice", a.username)
			}
			seen[strings.ToLower(a.username)] = true
		}
		if got := scalar[int](t, e, `SELECT COUNT(*) FROM users WHERE name = 'Same Name'`); got != n {
			t.Fatalf("%d users, want %d", got, n)
		}
	})
}

func TestSeedIsIdempotentAndComplete(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// TestSetupFirstAdministrator walks the setup link of a server without a
// super admin: the form, refusals that change nothing, the administrator
// created, and the link (and any other) dead afterwards.
func TestSetupFirstAdministrator(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		taken := e.NewUser(t, apptest.UserSpec{Username: "early_bird", Email: "bird@example.test"})
		link, err := e.Server.Setup.Link(ctx, e.URL)
		if err != nil || !strings.Contains(link, "/setup?token=hm_su_") {
			t.Fatalf("link %q: %v", link, err)
		}
		other, _ := e.Server.Setup.Link(ctx, e.URL)
		u, _ := url.Parse(link)
		tok := u.Query().Get("token")
		b := newBrowser(t, e)
		if p := b.get("/setup?token=hm_su_nothing"); p.status != http.StatusBadRequest || !strings.Contains(p.body, "does not work") {
			t.Fatalf("bad token: %d %s", p.status, p.body)
		}
		p := b.get(u.RequestURI())
		if p.status != http.StatusOK || !strings.Contains(p.body, `action="/setup"`) || !strings.Contains(p.body, `autocomplete="new-password"`) {
			t.Fatalf("form: %d %s", p.status, p.body)
		}
		de := newBrowser(t, e)
		de.lang = "de"
		if q := de.get(u.RequestURI()); q.status != http.StatusOK || !strings.Contains(q.body, "Ersten Administrator anlegen") || !strings.Contains(q.body, "Passwort wiederholen") {
			t.Fatalf("German form: %d %s", q.status, q.body)
		}
		submit := func(email, pw, again string) page {
			return b.post(t, p.body, "/setup", url.Values{"token": {tok}, "email": {email}, "password": {pw}, "password_confirm": {again}})
		}
		admins := func() int {
			return count(t, e, `SELECT COUNT(*) FROM users WHERE is_super_admin`)
		}
		for _, c := range []struct {
			email, pw, again string
			want             int
		}{
			{"root@example.test", "long-enough-1", "long-enough-2", http.StatusBadRequest},
			{"root@example.test", "short", "short", http.StatusBadRequest},
			{"not an address", "long-enough-1", "long-enough-1", http.StatusBadRequest},
			{taken.Email, "long-enough-1", "long-enough-1", http.StatusConflict},
		} {
			if q := submit(c.email, c.pw, c.again); q.status != c.want {
				t.Fatalf("%+v: %d %s", c, q.status, q.body)
			}
			if admins() != 0 {
				t.Fatal("a refused setup created an administrator")
			}
		}
		if q := submit("Root@Example.test", "long-enough-1", "long-enough-1"); q.status != http.StatusOK || !strings.Contains(q.body, "root@example.test") {
			t.Fatalf("setup: %d %s", q.status, q.body)
		}
		if admins() != 1 || count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = $1 AND source_service = 'id'`, audit.UserCreated) != 1 {
			t.Fatal("no administrator, or no audit event")
		}
		res := e.Call(t, "POST", "/v1/auth/login", "", map[string]string{"email": "root@example.test", "password": "long-enough-1"}, http.StatusOK).JSON()
		tokAdmin, _ := res["session_token"].(string)
		if tokAdmin == "" {
			tokAdmin, _ = res["token"].(string)
		}
		if me := e.Call(t, "GET", "/v1/users/me", tokAdmin, nil, http.StatusOK).JSON()["data"].(map[string]any); me["is_super_admin"] != true {
			t.Fatalf("not super admin: %v", me)
		}
		// Both links are dead now: one used, the other because an administrator exists.
		for _, l := range []string{link, other} {
			lu, _ := url.Parse(l)
			if q := b.get(lu.RequestURI()); q.status != http.StatusBadRequest {
				t.Fatalf("link after setup: %d", q.status)
			}
		}
		if again, _ := e.Server.Setup.Link(ctx, e.URL); again != "" || count(t, e, `SELECT COUNT(*) FROM setup_tokens`) != 0 {
			t.Fatalf("a link with an administrator: %q", again)
		}
	})
}

// TestOAuthLoginLinkingByVerification: the sign-in upsert links to the user
// whose address is verified, as the spec says, and an unverified
// registration of the same address is neither linked nor stripped of its
// login (docs/decisions.md, "One linking rule for every way in").
func TestOAuthLoginLinkingByVerification(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		// Verified by its mailed link: a provider sign-in links to it.
		r := e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": "proven@example.test", "password": "proven-password"}, http.StatusCreated)
		proven := r.JSON()["user"].(map[string]any)["id"].(string)
		tok := verifyTokenTo(t, e, "proven@example.test")
		e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": tok}, http.StatusOK)
		d := data(t, e.Call(t, "POST", "/v1/users/oauth", e.SystemKey, map[string]any{"email": "proven@example.test", "name": "Proven",
			"oauthProvider": "discord", "oauthProviderId": "d-proven"}, http.StatusOK))
		if d["id"] != proven {
			t.Fatalf("a verified address did not link: %v", d)
		}

		// Unverified: a user of its own, and the registration keeps its login.
		r = e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": "pending@example.test", "password": "pending-password"}, http.StatusCreated)
		holder := r.JSON()["user"].(map[string]any)["id"].(string)
		execSQL(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, holder)
		d = data(t, e.Call(t, "POST", "/v1/users/oauth", e.SystemKey, map[string]any{"email": "pending@example.test", "name": "Pending",
			"oauthProvider": "github", "oauthProviderId": "gh-pending"}, http.StatusCreated))
		owner := d["id"].(string)
		if owner == holder || d["primary_platform_account_id"] == nil || d["email"] != "pending@example.test" {
			t.Fatalf("sign-in upsert = %v (holder %s)", d, holder)
		}
		assertReleased(t, e, holder, owner, "pending@example.test", "pending-password")
		if m := outbox(t, e, "pending@example.test")[0]; m.Locale != "de" || !strings.Contains(m.Text, "GitHub") {
			t.Errorf("released mail: locale %q, text %q", m.Locale, m.Text)
		}
		// The holder's own user record still answers, with its login.
		acc := e.Call(t, "GET", "/v1/users/"+holder+"/accounts", e.SystemKey, nil, http.StatusOK).JSON()["data"].([]any)
		if len(acc) != 1 {
			t.Errorf("holder's platform accounts = %v", acc)
		}
	})
}
