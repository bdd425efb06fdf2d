package app_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apptest"
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
		statuses := make(chan int, 8)
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses <- e.Do(t, apptest.Req{Method: "POST", Path: "/v1/users/oauth", Token: e.SystemKey, Body: body}).Status
			}()
		}
		wg.Wait()
		close(statuses)
		created := 0
		for s := range statuses {
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
