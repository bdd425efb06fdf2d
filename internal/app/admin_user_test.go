package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/mail"
	"hmid/internal/mail/mailtest"
)

// operatorPassword is the password of the operators the admin tests sign in.
const operatorPassword = "operator horse battery"

// operator is a user holding exactly perms (through a role of their own,
// beside the default role) who can sign in through the login page.
func operator(t *testing.T, e *apptest.Env, perms ...string) apptest.User {
	t.Helper()
	return e.NewUser(t, apptest.UserSpec{Password: operatorPassword, Roles: []string{"role_user", roleWith(t, e, perms...)}})
}

// adminPost sends the form posting to action on the page at from, with the
// page's CSRF token and the fields given.
func adminPost(t *testing.T, b *browser, from, action string, fields url.Values) page {
	t.Helper()
	p := b.get(from)
	if p.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", from, p.status, p.body)
	}
	form := url.Values{"csrf_token": {formToken(t, p.body, action)}}
	for k, v := range fields {
		form[k] = v
	}
	return b.do("POST", action, form)
}

// postWithToken posts fields to action with a valid console CSRF token (a
// console page's token is the session's, valid for every console form), for
// forms the page does not show: the refusals of the route and the service.
func postWithToken(t *testing.T, b *browser, action string, fields url.Values) page {
	t.Helper()
	p := b.get("/account")
	form := url.Values{"csrf_token": {formToken(t, p.body, "/account/profile")}}
	for k, v := range fields {
		form[k] = v
	}
	return b.do("POST", action, form)
}

// wantDone checks a successful console action: a redirect to to.
func wantDone(t *testing.T, p page, to string) {
	t.Helper()
	if p.status != http.StatusSeeOther || p.location != to {
		t.Fatalf("want a redirect to %s, got %d %q: %s", to, p.status, p.location, p.body)
	}
}

// backendEvents counts the audit events of eventType about userID done by
// actorID from the admin console.
func backendEvents(t *testing.T, e *apptest.Env, userID, actorID, eventType string) int {
	t.Helper()
	return count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND actor_id = $2 AND event_type = $3 AND source_service = 'backend'`,
		userID, actorID, eventType)
}

func TestAdminUserPageAccess(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "ada_lovelace"})
		path := "/admin/users/" + u.ID

		// Signed out: the login page, which comes back here.
		if p := newBrowser(t, e).get(path); p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, "/login?return_to=") {
			t.Fatalf("anonymous: %d %q", p.status, p.location)
		}
		// Without users:read (the rule of GET /v1/users/{id}): the 403 page.
		plain := signedInBrowser(t, e, operator(t, e, "audit:read"))
		if p := plain.get(path); p.status != http.StatusForbidden || !strings.Contains(p.body, "<html") {
			t.Fatalf("without users:read: %d %s", p.status, p.body)
		}

		// users:read alone: the page, without any form.
		reader := operator(t, e, "users:read")
		rb := signedInBrowser(t, e, reader)
		p := rb.get(path)
		if p.status != http.StatusOK || !strings.Contains(p.body, "<h1 id=\"page-title\">ada_lovelace</h1>") || !strings.Contains(p.body, u.ID) {
			t.Fatalf("page: %d %s", p.status, p.body)
		}
		for _, action := range []string{path + "/ban", path + "/roles", path + "/2fa/reset", path + "/deletion", path + "/sessions/revoke-all", path + "/audit"} {
			if strings.Contains(p.body, `"`+action+`"`) {
				t.Errorf("a reader without the permission is offered %s", action)
			}
		}
		if !strings.Contains(p.body, "two_factor:manage") {
			t.Error("the page does not say why the two-factor state is hidden")
		}
		// Each action has its REST twin's rule: posting anyway is the 403 page, and nothing changes.
		for action, fields := range map[string]url.Values{
			path + "/ban":                                 {"confirm": {"yes"}, "duration_seconds": {"permanent"}},
			path + "/ban/lift":                            nil,
			path + "/roles":                               {"role_id": {"role_moderator"}},
			path + "/roles/role_user/remove":              nil,
			path + "/sessions/" + u.SessionID + "/revoke": nil,
			path + "/sessions/revoke-all":                 nil,
			path + "/2fa/reset":                           {"confirm": {"yes"}, "reason": {"lost phone"}},
			path + "/deletion":                            {"confirm": {"yes"}},
			path + "/deletion/cancel":                     nil,
			path + "/deletion/force":                      {"confirm_username": {"ada_lovelace"}},
		} {
			if q := postWithToken(t, rb, action, fields); q.status != http.StatusForbidden {
				t.Errorf("POST %s without its permission: %d", action, q.status)
			}
		}
		if q := rb.get(path + "/audit"); q.status != http.StatusForbidden {
			t.Errorf("the audit log without audit:read: %d", q.status)
		}
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK)
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1`, u.ID); n != 0 {
			t.Errorf("refused posts recorded %d events", n)
		}
		// In the reader's language.
		execSQL(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, reader.ID)
		if p := rb.get(path); !strings.Contains(p.body, "Anmeldekonten") || !strings.Contains(p.body, `<html lang="de">`) {
			t.Errorf("the page in German: %s", p.body)
		}
		// An unknown user is the 404 page.
		if q := rb.get("/admin/users/no-such-user"); q.status != http.StatusNotFound {
			t.Errorf("unknown user: %d", q.status)
		}
	})
}

func TestAdminUserRoles(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		path := "/admin/users/" + u.ID
		small := roleWith(t, e, "users:read")
		op := operator(t, e, "users:read", "users:write")
		b := signedInBrowser(t, e, op)

		// The form offers only the roles whose every permission the operator holds.
		p := b.get(path)
		if !strings.Contains(p.body, `<option value="`+small+`"`) || strings.Contains(p.body, `<option value="role_admin"`) {
			t.Fatalf("role choice: %s", p.body)
		}
		wantDone(t, adminPost(t, b, path, path+"/roles", url.Values{"role_id": {small}}), path)
		roles := e.Call(t, "GET", "/v1/users/"+u.ID+"/roles", e.SystemKey, nil, http.StatusOK).Body
		if !strings.Contains(string(roles), small) {
			t.Fatalf("roles after assigning: %s", roles)
		}
		if after := b.get(path); !strings.Contains(after.body, "The role was assigned.") {
			t.Errorf("no flash after assigning")
		}
		if n := backendEvents(t, e, u.ID, op.ID, "user_updated"); n != 1 {
			t.Fatalf("role audit events from the console = %d", n)
		}
		// A role beyond the operator's permissions is refused as REST refuses it (403), at the field.
		q := postWithToken(t, b, path+"/roles", url.Values{"role_id": {"role_admin"}})
		if q.status != http.StatusForbidden || !strings.Contains(q.body, `id="role-err"`) {
			t.Fatalf("assigning role_admin: %d %s", q.status, q.body)
		}
		if strings.Contains(string(e.Call(t, "GET", "/v1/users/"+u.ID+"/roles", e.SystemKey, nil, http.StatusOK).Body), "role_admin") {
			t.Fatal("role_admin was assigned")
		}
		// No role chosen: 400 at the field.
		if q := adminPost(t, b, path, path+"/roles", url.Values{"role_id": {""}}); q.status != http.StatusBadRequest || !strings.Contains(q.body, `aria-invalid="true"`) {
			t.Fatalf("no role: %d", q.status)
		}

		wantDone(t, adminPost(t, b, path, path+"/roles/"+small+"/remove", nil), path)
		roles = e.Call(t, "GET", "/v1/users/"+u.ID+"/roles", e.SystemKey, nil, http.StatusOK).Body
		if strings.Contains(string(roles), small) {
			t.Fatalf("roles after removing: %s", roles)
		}
		if q := postWithToken(t, b, path+"/roles/"+small+"/remove", nil); q.status != http.StatusNotFound {
			t.Errorf("removing a role the user lacks: %d", q.status)
		}
	})
}

func TestAdminUserSessions(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		second, _ := e.NewSession(t, u.ID)
		path := "/admin/users/" + u.ID
		op := operator(t, e, "users:read", "users:write")
		b := signedInBrowser(t, e, op)

		p := b.get(path)
		if !strings.Contains(p.body, path+"/sessions/"+u.SessionID+"/revoke") {
			t.Fatalf("sessions: %s", p.body)
		}
		wantDone(t, adminPost(t, b, path, path+"/sessions/"+u.SessionID+"/revoke", nil), path)
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/users/me", second, nil, http.StatusOK)
		if q := postWithToken(t, b, path+"/sessions/"+u.SessionID+"/revoke", nil); q.status != http.StatusNotFound {
			t.Errorf("revoking an ended session: %d", q.status)
		}
		wantDone(t, adminPost(t, b, path, path+"/sessions/revoke-all", nil), path)
		e.Call(t, "GET", "/v1/users/me", second, nil, http.StatusUnauthorized)
		if n := backendEvents(t, e, u.ID, op.ID, "session_revoked"); n != 2 {
			t.Fatalf("session audit events from the console = %d", n)
		}
		if after := b.get(path); !strings.Contains(after.body, "The user is not signed in anywhere.") {
			t.Error("the page still lists sessions")
		}
		// An operator who is no super admin cannot sign a super admin out.
		super := e.Admin(t)
		sp := "/admin/users/" + super.ID
		if q := adminPost(t, b, sp, sp+"/sessions/revoke-all", nil); q.status != http.StatusForbidden {
			t.Errorf("signing out a super admin: %d", q.status)
		}
		e.Call(t, "GET", "/v1/users/me", super.Token, nil, http.StatusOK)
	})
}

func TestAdminUserBan(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "user horse battery"})
		path := "/admin/users/" + u.ID
		op := operator(t, e, "users:read", "users:ban")
		b := signedInBrowser(t, e, op)
		status := func() map[string]any {
			return e.Call(t, "GET", "/v1/users/"+u.ID+"/ban", e.SystemKey, nil, http.StatusOK).JSON()
		}

		// Without the box ticked, and with a duration off the list: 400, no ban.
		if q := adminPost(t, b, path, path+"/ban", url.Values{"reason": {"spam"}, "duration_seconds": {"86400"}}); q.status != http.StatusBadRequest ||
			!strings.Contains(q.body, `id="ban-confirm-err"`) || !strings.Contains(q.body, ">spam</textarea>") {
			t.Fatalf("ban without confirmation: %d %s", q.status, q.body)
		}
		for _, d := range []string{"soon", ""} {
			if q := adminPost(t, b, path, path+"/ban", url.Values{"confirm": {"yes"}, "duration_seconds": {d}}); q.status != http.StatusBadRequest ||
				!strings.Contains(q.body, `id="ban-duration-err"`) {
				t.Fatalf("ban with the duration %q: %d", d, q.status)
			}
		}
		if q := adminPost(t, b, path, path+"/ban", url.Values{"confirm": {"yes"}, "duration_seconds": {"-5"}}); q.status != http.StatusBadRequest {
			t.Fatalf("ban with a negative duration: %d", q.status)
		}
		if status()["is_banned"] != false {
			t.Fatal("a refused ban banned the user")
		}

		wantDone(t, adminPost(t, b, path, path+"/ban", url.Values{"confirm": {"yes"}, "reason": {"spam"}, "duration_seconds": {"86400"}}), path)
		st := status()
		ban, _ := st["active_ban"].(map[string]any)
		if st["is_banned"] != true || ban["reason"] != "spam" || ban["banned_by"] != op.ID || ban["is_permanent"] != false ||
			ban["expires_at"] != apptest.Start.Add(24*time.Hour).Format(time.RFC3339) {
			t.Fatalf("ban = %v", st)
		}
		// The user's session is refused by the API, and signing in is refused.
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusUnauthorized)
		e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": u.Email, "password": u.Password}, http.StatusForbidden)
		if n := backendEvents(t, e, u.ID, op.ID, "user_banned"); n != 1 {
			t.Fatalf("ban audit events from the console = %d", n)
		}
		p := b.get(path)
		if !strings.Contains(p.body, "Banned since") || !strings.Contains(p.body, path+"/ban/lift") {
			t.Fatalf("banned page: %s", p.body)
		}
		// Banning again is the API's 409.
		if q := postWithToken(t, b, path+"/ban", url.Values{"confirm": {"yes"}, "duration_seconds": {"permanent"}}); q.status != http.StatusConflict {
			t.Errorf("second ban: %d", q.status)
		}

		wantDone(t, adminPost(t, b, path, path+"/ban/lift", nil), path)
		if status()["is_banned"] != false {
			t.Fatal("the ban was not lifted")
		}
		e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": u.Email, "password": u.Password}, http.StatusOK)
		if n := backendEvents(t, e, u.ID, op.ID, "user_unbanned"); n != 1 {
			t.Fatalf("unban audit events from the console = %d", n)
		}
		if q := postWithToken(t, b, path+"/ban/lift", nil); q.status != http.StatusNotFound {
			t.Errorf("lifting no ban: %d", q.status)
		}
		// A permanent ban, and the history on the page.
		wantDone(t, adminPost(t, b, path, path+"/ban", url.Values{"confirm": {"yes"}, "duration_seconds": {"permanent"}}), path)
		if st := status(); st["active_ban"].(map[string]any)["is_permanent"] != true {
			t.Fatalf("permanent ban = %v", st)
		}
		hist := b.get(path).body
		if !strings.Contains(hist, "Lifted") || !strings.Contains(hist, "lifted by "+op.Username) || !strings.Contains(hist, "The ban is permanent.") {
			t.Fatalf("ban history: %s", hist)
		}
		// Nobody bans themselves.
		self := "/admin/users/" + op.ID
		if q := postWithToken(t, b, self+"/ban", url.Values{"confirm": {"yes"}, "duration_seconds": {"permanent"}}); q.status != http.StatusBadRequest {
			t.Errorf("self-ban: %d", q.status)
		}
	})
}

func TestAdminUserDeletion(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "grace_hopper"})
		path := "/admin/users/" + u.ID
		op := operator(t, e, "users:read", "users:write", "users:delete")
		b := signedInBrowser(t, e, op)
		status := func() map[string]any {
			return e.Call(t, "GET", "/v1/admin/users/"+u.ID+"/deletion-status", e.SystemKey, nil, http.StatusOK).JSON()
		}

		if q := adminPost(t, b, path, path+"/deletion", nil); q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="schedule-confirm-err"`) {
			t.Fatalf("deletion without confirmation: %d", q.status)
		}
		if status()["is_deleted"] != false {
			t.Fatal("an unconfirmed deletion deleted the user")
		}
		wantDone(t, adminPost(t, b, path, path+"/deletion", url.Values{"confirm": {"yes"}}), path)
		if st := status(); st["is_deleted"] != true || st["is_scheduled_for_deletion"] != true {
			t.Fatalf("after deleting: %v", st)
		}
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusUnauthorized)
		if n := backendEvents(t, e, u.ID, op.ID, "user_deleted"); n != 1 {
			t.Fatalf("deletion audit events from the console = %d", n)
		}
		if p := b.get(path); p.status != http.StatusOK || !strings.Contains(p.body, "will be removed permanently on") {
			t.Fatalf("the page of a deleted user: %d %s", p.status, p.body)
		}

		wantDone(t, adminPost(t, b, path, path+"/deletion/cancel", nil), path)
		if st := status(); st["is_deleted"] != false || st["is_scheduled_for_deletion"] != false {
			t.Fatalf("after cancelling: %v", st)
		}
		if n := backendEvents(t, e, u.ID, op.ID, "user_updated"); n != 1 {
			t.Fatalf("cancellation audit events from the console = %d", n)
		}
		if q := postWithToken(t, b, path+"/deletion/cancel", nil); q.status != http.StatusBadRequest {
			t.Errorf("cancelling no deletion: %d", q.status)
		}

		// Removing at once needs the username typed exactly.
		for _, typed := range []string{"", "Grace_Hopper", "grace"} {
			q := adminPost(t, b, path, path+"/deletion/force", url.Values{"confirm_username": {typed}})
			if q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="force-username-err"`) {
				t.Fatalf("force with %q typed: %d", typed, q.status)
			}
		}
		status()
		wantDone(t, adminPost(t, b, path, path+"/deletion/force", url.Values{"confirm_username": {"grace_hopper"}, "reason": {"asked by mail"}}), "/admin/users")
		e.Call(t, "GET", "/v1/users/"+u.ID, e.SystemKey, nil, http.StatusNotFound)
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'user_deleted' AND actor_id = $1 AND source_service = 'backend' AND user_id IS NULL
			AND description = 'Account permanently deleted'`, op.ID); n != 1 {
			t.Fatalf("purge audit events from the console = %d", n)
		}
		if p := b.get(path); p.status != http.StatusNotFound {
			t.Errorf("the page of a removed user: %d", p.status)
		}

		// users:write without users:delete: deleting is refused, restoring is not offered to others either way.
		writer := signedInBrowser(t, e, operator(t, e, "users:read", "users:write"))
		other := e.NewUser(t, apptest.UserSpec{})
		op2 := "/admin/users/" + other.ID
		if q := postWithToken(t, writer, op2+"/deletion", url.Values{"confirm": {"yes"}}); q.status != http.StatusForbidden {
			t.Errorf("deleting without users:delete: %d", q.status)
		}
	})
}

func TestAdminUserTwoFactorReset(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		tfEnable(t, e, u)
		path := "/admin/users/" + u.ID
		op := operator(t, e, "users:read", "two_factor:manage")
		b := signedInBrowser(t, e, op)

		p := b.get(path)
		if !strings.Contains(p.body, "10 backup codes left") || !strings.Contains(p.body, path+"/2fa/reset") {
			t.Fatalf("two-factor state: %s", p.body)
		}
		// A reason and the box are needed; refused, nothing changes.
		if q := adminPost(t, b, path, path+"/2fa/reset", url.Values{"confirm": {"yes"}, "reason": {"  "}}); q.status != http.StatusBadRequest ||
			!strings.Contains(q.body, `id="reset-reason-err"`) {
			t.Fatalf("reset without a reason: %d %s", q.status, q.body)
		}
		if q := adminPost(t, b, path, path+"/2fa/reset", url.Values{"reason": {"lost phone"}}); q.status != http.StatusBadRequest ||
			!strings.Contains(q.body, `id="reset-confirm-err"`) || !strings.Contains(q.body, ">lost phone</textarea>") {
			t.Fatalf("reset without confirmation: %d", q.status)
		}
		if tfStatus(t, e, u.Token)["enabled"] != true {
			t.Fatal("a refused reset turned two-factor authentication off")
		}

		wantDone(t, adminPost(t, b, path, path+"/2fa/reset", url.Values{"confirm": {"yes"}, "reason": {"lost phone, called support"}}), path)
		if st := tfStatus(t, e, u.Token); st["enabled"] != false || st["backup_codes_remaining"] != float64(0) {
			t.Fatalf("status after the reset: %v", st)
		}
		msgs := outbox(t, e, u.Email)
		if len(msgs) == 0 || msgs[0].Kind != mail.KindTwoFactorReset {
			t.Fatalf("mails: %v", msgs)
		}
		var meta string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT metadata FROM audit_events WHERE user_id = $1 AND actor_id = $2 AND event_type = '2fa_disabled' AND source_service = 'backend'`,
			u.ID, op.ID).Scan(&meta); err != nil {
			t.Fatalf("reset audit event: %v", err)
		}
		if !strings.Contains(meta, `"admin_reset"`) || !strings.Contains(meta, "lost phone, called support") {
			t.Fatalf("reset audit metadata: %s", meta)
		}
		if after := b.get(path); !strings.Contains(after.body, "Two-factor authentication was reset.") || strings.Contains(after.body, path+"/2fa/reset") {
			t.Error("the page after the reset")
		}
		// Resetting again: not enabled, 400.
		if q := postWithToken(t, b, path+"/2fa/reset", url.Values{"confirm": {"yes"}, "reason": {"again"}}); q.status != http.StatusBadRequest {
			t.Errorf("second reset: %d", q.status)
		}
	})
}

func TestTwoFactorResetAPI(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		execSQL(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, u.ID)
		tfEnable(t, e, u)
		path := "/v1/users/" + u.ID + "/2fa/reset"
		mgr := roleUser(t, e, "two_factor:manage")
		body := map[string]any{"reason": "lost phone"}

		e.Call(t, "POST", path, "", body, http.StatusUnauthorized)
		e.Call(t, "POST", path, u.Token, body, http.StatusForbidden)
		e.Call(t, "POST", path, roleUser(t, e, "users:write").Token, body, http.StatusForbidden)
		e.Call(t, "POST", path, mgr.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "POST", path, mgr.Token, map[string]any{"reason": " "}, http.StatusBadRequest)
		e.Call(t, "POST", path, mgr.Token, map[string]any{"reason": strings.Repeat("x", 1001)}, http.StatusBadRequest)
		e.Call(t, "POST", path, mgr.Token, map[string]any{"reason": 5}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/users/no-such-user/2fa/reset", mgr.Token, body, http.StatusNotFound)
		e.Call(t, "POST", "/v1/users/"+mgr.ID+"/2fa/reset", mgr.Token, body, http.StatusBadRequest)
		super := e.Admin(t)
		tfEnable(t, e, super)
		e.Call(t, "POST", "/v1/users/"+super.ID+"/2fa/reset", mgr.Token, body, http.StatusForbidden)
		if tfStatus(t, e, u.Token)["enabled"] != true || tfStatus(t, e, super.Token)["enabled"] != true {
			t.Fatal("a refused reset changed something")
		}

		r := e.Do(t, apptest.Req{Method: "POST", Path: path, Token: mgr.Token, Body: body, Header: map[string]string{"X-Source-Service": "backend"}})
		if r.Status != http.StatusOK {
			t.Fatalf("reset: %d %s", r.Status, r.Body)
		}
		if out := r.JSON(); out["success"] != true || out["message"] == "" {
			t.Fatalf("reset answer: %s", r.Body)
		}
		if st := tfStatus(t, e, u.Token); st["enabled"] != false {
			t.Fatalf("status after the reset: %v", st)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM two_factor_backup_codes WHERE user_id = $1`, u.ID); n != 0 {
			t.Fatalf("backup codes left: %d", n)
		}
		// The user is mailed, in their language.
		msgs, err := mailtest.Outbox(context.Background(), e.Server.DB, u.Email)
		if err != nil || len(msgs) == 0 {
			t.Fatalf("outbox: %v %v", msgs, err)
		}
		if m := msgs[0]; m.Kind != mail.KindTwoFactorReset || m.Locale != "de" || !strings.Contains(m.Text, "ein Administrator hat") {
			t.Fatalf("mail: %s %s %s", m.Kind, m.Locale, m.Text)
		}
		// Audited as 2fa_disabled, with the actor, the reason and the source.
		var meta, actor, src string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT metadata, actor_id, source_service FROM audit_events
			WHERE user_id = $1 AND event_type = '2fa_disabled' ORDER BY created_at DESC LIMIT 1`, u.ID).Scan(&meta, &actor, &src); err != nil {
			t.Fatal(err)
		}
		var md map[string]any
		if err := json.Unmarshal([]byte(meta), &md); err != nil {
			t.Fatal(err)
		}
		if actor != mgr.ID || src != "backend" || md["method"] != "admin_reset" || md["reason"] != "lost phone" || md["platform"] != "email" {
			t.Fatalf("audit: actor %s source %s metadata %v", actor, src, md)
		}
		// The user signs in with the password alone and can set it up again.
		e.Call(t, "POST", path, mgr.Token, body, http.StatusBadRequest)
		tfEnable(t, e, u)
		// A system key resets too; without the header the source is api.
		e.Call(t, "POST", path, e.SystemKey, body, http.StatusOK)
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = '2fa_disabled' AND source_service = 'api'`, u.ID); n != 1 {
			t.Fatalf("reset by a system key: %d events", n)
		}
	})
}

func TestAdminUserAuditLog(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "alan_turing"})
		mod := roleUser(t, e, "users:ban")
		e.Call(t, "POST", "/v1/users/"+u.ID+"/ban", mod.Token, map[string]any{"reason": "x"}, http.StatusCreated)
		e.Call(t, "DELETE", "/v1/users/"+u.ID+"/ban", mod.Token, nil, http.StatusOK)
		other := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "POST", "/v1/users/"+other.ID+"/ban", mod.Token, nil, http.StatusCreated)
		path := "/admin/users/" + u.ID

		op := operator(t, e, "users:read", "audit:read")
		b := signedInBrowser(t, e, op)
		if p := b.get(path); !strings.Contains(p.body, `href="`+path+`/audit"`) {
			t.Fatal("the page does not link the audit log")
		}
		p := b.get(path + "/audit")
		if p.status != http.StatusOK || !strings.Contains(p.body, "Events of alan_turing") || !strings.Contains(p.body, "Events 1–2 of 2") ||
			!strings.Contains(p.body, "by "+mod.Username) {
			t.Fatalf("audit log: %d %s", p.status, p.body)
		}
		// The filter of GET /v1/admin/audit, and its refusal at the field.
		if p := b.get(path + "/audit?event_type=user_unbanned"); !strings.Contains(p.body, "Events 1–1 of 1") {
			t.Fatalf("filtered: %s", p.body)
		}
		if p := b.get(path + "/audit?event_type=nonsense"); p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="f-event-err"`) {
			t.Fatalf("bad filter: %d", p.status)
		}
		if p := b.get(path + "/audit?limit=1"); !strings.Contains(p.body, `rel="next"`) {
			t.Fatalf("paging: %s", p.body)
		}
	})
}
