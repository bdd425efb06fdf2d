package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"hmid/internal/access"
	"hmid/internal/apptest"
	"hmid/internal/audit"
	"hmid/internal/config"
	"hmid/internal/db"
	"hmid/internal/dbtest"
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

// backendEvents counts the audit events of eventType about userID done by
// actorID from the admin console.
func backendEvents(t *testing.T, e *apptest.Env, userID, actorID, eventType string) int {
	t.Helper()
	return count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND actor_id = $2 AND event_type = $3 AND source_service = 'backend'`,
		userID, actorID, eventType)
}

func TestAdminUserPageAccess(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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
		wantRedirect(t, postFrom(t, b, path, path+"/roles", url.Values{"role_id": {small}}), path)
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
		if q := postFrom(t, b, path, path+"/roles", url.Values{"role_id": {""}}); q.status != http.StatusBadRequest || !strings.Contains(q.body, `aria-invalid="true"`) {
			t.Fatalf("no role: %d", q.status)
		}

		wantRedirect(t, postFrom(t, b, path, path+"/roles/"+small+"/remove", nil), path)
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		second, _ := e.NewSession(t, u.ID)
		path := "/admin/users/" + u.ID
		op := operator(t, e, "users:read", "users:write")
		b := signedInBrowser(t, e, op)

		p := b.get(path)
		if !strings.Contains(p.body, path+"/sessions/"+u.SessionID+"/revoke") {
			t.Fatalf("sessions: %s", p.body)
		}
		wantRedirect(t, postFrom(t, b, path, path+"/sessions/"+u.SessionID+"/revoke", nil), path)
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/users/me", second, nil, http.StatusOK)
		if q := postWithToken(t, b, path+"/sessions/"+u.SessionID+"/revoke", nil); q.status != http.StatusNotFound {
			t.Errorf("revoking an ended session: %d", q.status)
		}
		wantRedirect(t, postFrom(t, b, path, path+"/sessions/revoke-all", nil), path)
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
		if q := postFrom(t, b, sp, sp+"/sessions/revoke-all", nil); q.status != http.StatusForbidden {
			t.Errorf("signing out a super admin: %d", q.status)
		}
		e.Call(t, "GET", "/v1/users/me", super.Token, nil, http.StatusOK)
	})
}

func TestAdminUserBan(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "user horse battery"})
		path := "/admin/users/" + u.ID
		op := operator(t, e, "users:read", "users:ban")
		b := signedInBrowser(t, e, op)
		status := func() map[string]any {
			return e.Call(t, "GET", "/v1/users/"+u.ID+"/ban", e.SystemKey, nil, http.StatusOK).JSON()
		}

		// Without the box ticked, and with a duration off the list: 400, no ban.
		if q := postFrom(t, b, path, path+"/ban", url.Values{"reason": {"spam"}, "duration_seconds": {"86400"}}); q.status != http.StatusBadRequest ||
			!strings.Contains(q.body, `id="ban-confirm-err"`) || !strings.Contains(q.body, ">spam</textarea>") {
			t.Fatalf("ban without confirmation: %d %s", q.status, q.body)
		}
		for _, d := range []string{"soon", ""} {
			if q := postFrom(t, b, path, path+"/ban", url.Values{"confirm": {"yes"}, "duration_seconds": {d}}); q.status != http.StatusBadRequest ||
				!strings.Contains(q.body, `id="ban-duration-err"`) {
				t.Fatalf("ban with the duration %q: %d", d, q.status)
			}
		}
		if q := postFrom(t, b, path, path+"/ban", url.Values{"confirm": {"yes"}, "duration_seconds": {"-5"}}); q.status != http.StatusBadRequest {
			t.Fatalf("ban with a negative duration: %d", q.status)
		}
		if status()["is_banned"] != false {
			t.Fatal("a refused ban banned the user")
		}

		wantRedirect(t, postFrom(t, b, path, path+"/ban", url.Values{"confirm": {"yes"}, "reason": {"spam"}, "duration_seconds": {"86400"}}), path)
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

		wantRedirect(t, postFrom(t, b, path, path+"/ban/lift", nil), path)
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
		wantRedirect(t, postFrom(t, b, path, path+"/ban", url.Values{"confirm": {"yes"}, "duration_seconds": {"permanent"}}), path)
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
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "grace_hopper"})
		path := "/admin/users/" + u.ID
		op := operator(t, e, "users:read", "users:write", "users:delete")
		b := signedInBrowser(t, e, op)
		status := func() map[string]any {
			return e.Call(t, "GET", "/v1/admin/users/"+u.ID+"/deletion-status", e.SystemKey, nil, http.StatusOK).JSON()
		}

		if q := postFrom(t, b, path, path+"/deletion", nil); q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="schedule-confirm-err"`) {
			t.Fatalf("deletion without confirmation: %d", q.status)
		}
		if status()["is_deleted"] != false {
			t.Fatal("an unconfirmed deletion deleted the user")
		}
		wantRedirect(t, postFrom(t, b, path, path+"/deletion", url.Values{"confirm": {"yes"}}), path)
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

		wantRedirect(t, postFrom(t, b, path, path+"/deletion/cancel", nil), path)
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
			q := postFrom(t, b, path, path+"/deletion/force", url.Values{"confirm_username": {typed}})
			if q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="force-username-err"`) {
				t.Fatalf("force with %q typed: %d", typed, q.status)
			}
		}
		status()
		wantRedirect(t, postFrom(t, b, path, path+"/deletion/force", url.Values{"confirm_username": {"grace_hopper"}, "reason": {"asked by mail"}}), "/admin/users")
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
	t.Parallel()
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
		if q := postFrom(t, b, path, path+"/2fa/reset", url.Values{"confirm": {"yes"}, "reason": {"  "}}); q.status != http.StatusBadRequest ||
			!strings.Contains(q.body, `id="reset-reason-err"`) {
			t.Fatalf("reset without a reason: %d %s", q.status, q.body)
		}
		if q := postFrom(t, b, path, path+"/2fa/reset", url.Values{"reason": {"lost phone"}}); q.status != http.StatusBadRequest ||
			!strings.Contains(q.body, `id="reset-confirm-err"`) || !strings.Contains(q.body, ">lost phone</textarea>") {
			t.Fatalf("reset without confirmation: %d", q.status)
		}
		if tfStatus(t, e, u.Token)["enabled"] != true {
			t.Fatal("a refused reset turned two-factor authentication off")
		}

		wantRedirect(t, postFrom(t, b, path, path+"/2fa/reset", url.Values{"confirm": {"yes"}, "reason": {"lost phone, called support"}}), path)
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
	t.Parallel()
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
	t.Parallel()
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

// overviewTile returns the number the overview shows under label, "" when
// the page has no such count.
func overviewTile(body, label string) string {
	m := regexp.MustCompile(`(?s)<dt>(?:<a href="[^"]*">)?` + regexp.QuoteMeta(label) + `(?:</a>)?</dt>\s*<dd>([^<]*)</dd>`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// overviewNav lists the hrefs of the console's navigation in body.
func overviewNav(body string) []string {
	nav := body[strings.Index(body, `<nav class="sidenav"`):]
	nav = nav[:strings.Index(nav, "</nav>")]
	var out []string
	for _, m := range regexp.MustCompile(`<li><a href="([^"]+)"`).FindAllStringSubmatch(nav, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestAdminOverview(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		// A month of sign-ins: two days ago 3 sign-ins and 2 failed
		// attempts (one login_failed, one login recorded as failed), today 1
		// more (the admin's own sign-in below), and one older than the
		// chart's 30 days, which it leaves out.
		record := func(eventType string, failed bool) {
			t.Helper()
			if _, err := e.Server.Audit.Record(ctx, e.Server.DB, audit.Event{EventType: eventType, Failed: failed}); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		e.Clock.Set(start)
		record(audit.Login, false)
		e.Clock.Set(start.AddDate(0, 0, 31))
		for range 3 {
			record(audit.Login, false)
		}
		record(audit.LoginFailed, true)
		record(audit.Login, true)
		record(audit.Logout, false) // not a sign-in
		e.Clock.Set(start.AddDate(0, 0, 33))

		admin := e.NewUser(t, apptest.UserSpec{SuperAdmin: true, Roles: []string{"role_admin", "role_user"}, Password: "correct horse battery"})
		// A pending report, and another already reviewed.
		for i, status := range []string{"pending", "resolved"} {
			id, err := e.Server.Audit.Record(ctx, e.Server.DB, audit.Event{UserID: admin.ID, EventType: audit.PasswordChanged})
			if err != nil {
				t.Fatal(err)
			}
			execSQL(t, e, `INSERT INTO audit_reports (id, audit_event_id, user_id, reason, status, created_at, updated_at) VALUES ($1, $2, $3, 'not_me', $4, 0, 0)`,
				"rep-"+string(rune('a'+i)), id, admin.ID, status)
		}

		// Without a session the page sends the browser to sign in.
		if p := newBrowser(t, e).get("/admin"); p.status != http.StatusSeeOther || p.location != "/login?return_to=%2Fadmin" {
			t.Fatalf("anonymous: %d %q", p.status, p.location)
		}
		b := signedInBrowser(t, e, admin)
		p := b.get("/admin")
		if p.status != http.StatusOK {
			t.Fatalf("overview: %d %s", p.status, p.body)
		}
		// Health: what GET /health reports, service by service.
		h := e.Call(t, "GET", "/health", "", nil, http.StatusOK).JSON()
		if h["status"] != "ok" || !strings.Contains(p.body, "Everything is up.") || strings.Count(p.body, `<span class="badge ok">Up</span>`) != 3 ||
			!strings.Contains(p.body, "("+string(e.Server.DB.Flavor)+")") {
			t.Errorf("health panel:\n%s", p.body)
		}
		// Counts, each the total of the REST listing.
		total := func(path string) string {
			return strconv.Itoa(int(e.Call(t, "GET", path, admin.Token, nil, http.StatusOK).JSON()["pagination"].(map[string]any)["total"].(float64)))
		}
		for label, want := range map[string]string{
			"Users":           total("/v1/users?limit=1"),
			"OAuth clients":   total("/v1/oauth/clients/all?limit=1"),
			"API keys":        total("/v1/api-keys?limit=1"),
			"Pending reports": "1",
			"Active sessions": strconv.Itoa(count(t, e, `SELECT COUNT(*) FROM sessions WHERE revoked_at IS NULL AND expires_at > $1`, db.TS(e.Clock.Now()))),
		} {
			if got := overviewTile(p.body, label); got != want {
				t.Errorf("count %q = %q, want %q", label, got, want)
			}
		}
		// The chart: 30 days, two days ago 3 and 2, today the admin's sign-in.
		if n := strings.Count(p.body, `<rect class="bar"`); n != 30 {
			t.Errorf("%d bars, want 30", n)
		}
		for _, want := range []string{
			`<tr><th scope="row">Apr 1</th><td data-label="Sign-ins">3</td><td data-label="Failed sign-ins">2</td></tr>`,
			`<tr><th scope="row">Apr 3</th><td data-label="Sign-ins">1</td><td data-label="Failed sign-ins">0</td></tr>`,
			`<tr><th scope="row">Mar 5</th><td data-label="Sign-ins">0</td>`,
			"From Mar 5 to Apr 3: 4 sign-ins and 2 failed sign-in attempts. The most sign-ins were on Apr 1 (3).",
			`role="img" aria-labelledby="chart-title chart-desc"`,
		} {
			if !strings.Contains(p.body, want) {
				t.Errorf("chart lacks %s", want)
			}
		}
		if strings.Contains(p.body, `scope="row">Mar 1<`) || strings.Contains(p.body, "style=") {
			t.Error("the chart shows a day before its 30, or an inline style")
		}

		// An operator holding only audit:read sees the sign-ins and the
		// reports, no other count, and only the audit entry of the navigation.
		auditor := signedInBrowser(t, e, operator(t, e, "audit:read"))
		q := auditor.get("/admin")
		if q.status != http.StatusOK || overviewTile(q.body, "Pending reports") != "1" || overviewTile(q.body, "Users") != "" ||
			overviewTile(q.body, "API keys") != "" || !strings.Contains(q.body, `class="chart"`) {
			t.Errorf("audit:read overview: %d\n%s", q.status, q.body)
		}
		if got := strings.Join(overviewNav(q.body), " "); got != "/admin /admin/audit" {
			t.Errorf("audit:read navigation: %s", got)
		}
		// users:read: users and sessions, no chart.
		reader := signedInBrowser(t, e, operator(t, e, "users:read"))
		q = reader.get("/admin")
		if q.status != http.StatusOK || overviewTile(q.body, "Users") == "" || overviewTile(q.body, "Active sessions") == "" ||
			overviewTile(q.body, "Pending reports") != "" || strings.Contains(q.body, `class="chart"`) {
			t.Errorf("users:read overview: %d\n%s", q.status, q.body)
		}
		// A user without any admin permission is refused with the 403 page.
		plain := signedInBrowser(t, e, e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"}))
		if q := plain.get("/admin"); q.status != http.StatusForbidden || !strings.Contains(q.body, "<html") || strings.Contains(q.body, "Health") {
			t.Errorf("plain user: %d\n%s", q.status, q.body)
		}
		// The page is in German for a user who prefers it.
		execSQL(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, admin.ID)
		if q := b.get("/admin"); !strings.Contains(q.body, "Alles läuft.") || !strings.Contains(q.body, `<th scope="row">1.4.</th>`) {
			t.Errorf("German overview:\n%s", q.body)
		}
	})
}

func TestAdminUserList(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.NewUser(t, apptest.UserSpec{SuperAdmin: true, Roles: []string{"role_admin", "role_user"}})
		ada := e.NewUser(t, apptest.UserSpec{Username: "ada_lovelace", Email: "Ada.Lovelace@Example.test"})
		e.Clock.Advance(time.Minute)
		grace := e.NewUser(t, apptest.UserSpec{Username: "grace_hopper", Email: "grace@navy.test"})
		e.Clock.Advance(time.Minute)
		gone := e.NewUser(t, apptest.UserSpec{Username: "gone_user"})
		e.Clock.Advance(time.Minute)
		// Ada is banned, Grace has two-factor authentication on, gone_user
		// is deleted by an administrator (kept until the purge).
		e.Call(t, "POST", "/v1/users/"+ada.ID+"/ban", admin.Token, map[string]any{"reason": "spam"}, http.StatusCreated)
		execSQL(t, e, `INSERT INTO two_factor (user_id, status, secret_sealed, platform_id, setup_expires_at, enabled_at, created_at, updated_at)
			SELECT $1, 'enabled', 'x', id, 0, 0, 0, 0 FROM platforms WHERE slug = 'email'`, grace.ID)
		e.Call(t, "DELETE", "/v1/users/"+gone.ID, admin.Token, nil, http.StatusNoContent)

		reader := operator(t, e, "users:read")
		b := signedInBrowser(t, e, reader)
		p := b.get("/admin/users")
		if p.status != http.StatusOK || !strings.Contains(p.body, `<a href="/admin/users/`+ada.ID+`"><strong>ada_lovelace</strong></a>`) ||
			strings.Contains(p.body, "gone_user") {
			t.Fatalf("users list: %d\n%s", p.status, p.body)
		}
		row := func(body, id string) string {
			i := strings.Index(body, `<tr id="user-`+id+`">`)
			if i < 0 {
				return ""
			}
			return body[i : i+strings.Index(body[i:], "</tr>")]
		}
		if r := row(p.body, ada.ID); !strings.Contains(r, ">Banned<") || strings.Contains(r, ">Active<") || !strings.Contains(r, "Ada.Lovelace@Example.test") {
			t.Errorf("banned row: %s", r)
		}
		// users:read alone does not show other users' two-factor state
		// (GET …/2fa/status for another user needs two_factor:manage).
		if r := row(p.body, grace.ID); !strings.Contains(r, ">Active<") || strings.Contains(r, "2FA") {
			t.Errorf("grace for users:read: %s", r)
		}
		manager := signedInBrowser(t, e, operator(t, e, "users:read", "two_factor:manage"))
		if r := row(manager.get("/admin/users").body, grace.ID); !strings.Contains(r, ">2FA on<") {
			t.Errorf("grace for two_factor:manage: %s", r)
		}

		// The search is GET /v1/users's: the start of a username or an email
		// in any case, or the exact id, the same users in the same order.
		for _, s := range []string{"ada_lo", "ADA.LOVELACE@example", "grace@navy", "navy.test", ada.ID, "u_", "nobody-here"} {
			var want []string
			for _, u := range e.Call(t, "GET", "/v1/users?search="+url.QueryEscape(s), admin.Token, nil, http.StatusOK).JSON()["data"].([]any) {
				want = append(want, u.(map[string]any)["id"].(string))
			}
			var got []string
			for _, m := range regexp.MustCompile(`<tr id="user-([^"]+)">`).FindAllStringSubmatch(b.get("/admin/users?search="+url.QueryEscape(s)).body, -1) {
				got = append(got, m[1])
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("search %q: page %v, REST %v", s, got, want)
			}
		}
		if r := e.Call(t, "GET", "/v1/users?search="+ada.ID, admin.Token, nil, http.StatusOK).JSON()["data"].([]any); len(r) != 1 {
			t.Errorf("REST search by id: %v", r)
		}
		if q := b.get("/admin/users?search=nobody-here"); !strings.Contains(q.body, "No users match this search.") || !strings.Contains(q.body, `value="nobody-here"`) {
			t.Errorf("no match:\n%s", q.body)
		}
		// Deleted accounts on request, with their state.
		q := b.get("/admin/users?search=gone&include_deleted=true")
		if r := row(q.body, gone.ID); !strings.Contains(r, ">Deleted<") || !strings.Contains(r, "Deletion on ") || !strings.Contains(q.body, `value="true" checked`) {
			t.Errorf("deleted row: %s", r)
		}

		// Pages of the REST listing's size, the search kept in the links.
		for range 22 {
			e.NewUser(t, apptest.UserSpec{})
		}
		q = b.get("/admin/users?search=u_")
		if !strings.Contains(q.body, "Users 1–20 of 2") || !strings.Contains(q.body, `href="/admin/users?page=2&amp;search=u_" rel="next"`) {
			t.Fatalf("first page:\n%s", q.body)
		}
		q = b.get("/admin/users?search=u_&page=2")
		if !strings.Contains(q.body, "Page 2 of 2") || !strings.Contains(q.body, `rel="prev"`) || strings.Contains(q.body, `rel="next"`) {
			t.Errorf("second page:\n%s", q.body)
		}
		if q := b.get("/admin/users?page=99"); !strings.Contains(q.body, "past the end") || !strings.Contains(q.body, `href="/admin/users?page=1"`) {
			t.Errorf("past the end:\n%s", q.body)
		}
		// The page has the rule of GET /v1/users: users:read.
		auditor := signedInBrowser(t, e, operator(t, e, "audit:read"))
		if q := auditor.get("/admin/users"); q.status != http.StatusForbidden || !strings.Contains(q.body, "users:read") {
			t.Errorf("audit:read on the users list: %d\n%s", q.status, q.body)
		}
	})
}

// TestAdminRoles drives /admin/roles as a super admin: create a role (bad
// input refused, a taken name refused), edit it, give it a permission and
// take it away, delete it with the confirmation box, and be refused, in
// words and without a button, the deletion of a system role.
func TestAdminRoles(t *testing.T) {
	t.Parallel()
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
		if p := postFrom(t, b, "/admin/roles", "/admin/roles", url.Values{"name": {"  "}, "description": {"kept"}}); p.status != http.StatusBadRequest ||
			!strings.Contains(p.body, `id="name-error"`) || !strings.Contains(p.body, "Nothing was saved") || !strings.Contains(p.body, ">kept</textarea>") {
			t.Errorf("blank name: %d %s", p.status, p.body)
		}
		if p := postFrom(t, b, "/admin/roles", "/admin/roles", url.Values{"name": {"moderator"}}); p.status != http.StatusConflict ||
			!strings.Contains(p.body, "A role with this name already exists.") || !strings.Contains(p.body, `aria-invalid="true"`) {
			t.Errorf("taken name: %d %s", p.status, p.body)
		}
		if n := roles(); n != before {
			t.Fatalf("bad input created %d roles", n-before)
		}

		// Create: the answer is the new role's page.
		p := postFrom(t, b, "/admin/roles", "/admin/roles", url.Values{"name": {" Auditors "}, "description": {"Read the log"}, "requires_two_factor": {"yes"}})
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
		if q := postFrom(t, b, "/admin/roles/"+id, "/admin/roles/"+id, url.Values{"name": {"Log readers"}, "description": {"changed"}}); q.status != http.StatusSeeOther ||
			q.location != "/admin/roles/"+id {
			t.Fatalf("edit: %d %q %s", q.status, q.location, q.body)
		}
		got = e.Call(t, "GET", "/v1/roles/"+id, e.SystemKey, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if got["name"] != "Log readers" || got["description"] != "changed" || got["requires_two_factor"] != false {
			t.Fatalf("edited role: %v", got)
		}
		if q := postFrom(t, b, "/admin/roles/"+id, "/admin/roles/"+id, url.Values{"name": {"Developer"}, "description": {"x"}}); q.status != http.StatusConflict ||
			!strings.Contains(q.body, `id="name-error"`) || !strings.Contains(q.body, `value="Developer"`) {
			t.Errorf("rename to a taken name: %d %s", q.status, q.body)
		}
		if got := e.Call(t, "GET", "/v1/roles/"+id, e.SystemKey, nil, http.StatusOK).JSON()["data"].(map[string]any); got["name"] != "Log readers" {
			t.Fatalf("a refused rename changed the role: %v", got)
		}

		// Permissions: add one, see it counted, remove it.
		auditRead := access.PermissionID("audit", "read")
		if q := postFrom(t, b, "/admin/roles/"+id, "/admin/roles/"+id+"/permissions", url.Values{"permission_id": {auditRead}}); q.status != http.StatusSeeOther {
			t.Fatalf("add permission: %d %s", q.status, q.body)
		}
		if got := e.RolePermissions(t, id); len(got) != 1 || got[0] != "audit:read" {
			t.Fatalf("permissions after adding: %v", got)
		}
		page = b.get("/admin/roles/" + id)
		if !strings.Contains(page.body, "The permission was added to the role.") || !strings.Contains(page.body, `action="/admin/roles/`+id+`/permissions/`+auditRead+`/remove"`) ||
			strings.Contains(page.body, `<option value="`+auditRead+`"`) {
			t.Errorf("role page after adding: %s", page.body)
		}
		if q := postFrom(t, b, "/admin/roles/"+id, "/admin/roles/"+id+"/permissions", url.Values{"permission_id": {"nope"}}); q.status != http.StatusNotFound {
			t.Errorf("unknown permission: %d %s", q.status, q.body)
		}
		if q := postFrom(t, b, "/admin/roles/"+id, "/admin/roles/"+id+"/permissions/"+auditRead+"/remove", url.Values{}); q.status != http.StatusSeeOther {
			t.Fatalf("remove permission: %d %s", q.status, q.body)
		}
		if got := e.RolePermissions(t, id); len(got) != 0 {
			t.Fatalf("permissions after removing: %v", got)
		}

		// Without the CSRF token nothing happens.
		if q := b.do("POST", "/admin/roles/"+id+"/permissions", url.Values{"permission_id": {auditRead}}); q.status != http.StatusForbidden || len(e.RolePermissions(t, id)) != 0 {
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
		if q := postFrom(t, b, "/admin/roles/"+id, "/admin/roles/"+id+"/delete", url.Values{}); q.status != http.StatusBadRequest ||
			!strings.Contains(q.body, `id="confirm_delete-error"`) {
			t.Errorf("delete without confirmation: %d %s", q.status, q.body)
		}
		e.Call(t, "GET", "/v1/roles/"+id, e.SystemKey, nil, http.StatusOK)
		if q := postFrom(t, b, "/admin/roles/"+id, "/admin/roles/"+id+"/delete", url.Values{"confirm": {"yes"}}); q.status != http.StatusSeeOther || q.location != "/admin/roles" {
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
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
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
		if got := e.RolePermissions(t, custom); len(got) != 1 || got[0] != "users:read" {
			t.Fatalf("refused changes changed the role: %v", got)
		}
		// What the operator holds they may give.
		if q := b.do("POST", "/admin/roles/"+custom+"/permissions", url.Values{"permission_id": {auditRead}, "csrf_token": {tok}}); q.status != http.StatusSeeOther {
			t.Fatalf("grant held permission: %d %s", q.status, q.body)
		}
		if got := e.RolePermissions(t, custom); len(got) != 2 {
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
		if got := e.RolePermissions(t, "role_moderator"); len(got) != 2 {
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
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		reader := operator(t, e, "roles:read", "permissions:read")
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
			q := postFrom(t, b, "/admin/roles/permissions", "/admin/roles/permissions", url.Values{"resource": {c.resource}, "action": {c.action}, "description": {"kept"}})
			if q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="`+c.field+`-error"`) || !strings.Contains(q.body, ">kept</textarea>") {
				t.Errorf("%s:%s: %d %s", c.resource, c.action, q.status, q.body)
			}
		}
		if n := count(t, e, `SELECT COUNT(*) FROM permissions`); n != total {
			t.Fatalf("bad input created %d permissions", n-total)
		}
		q := postFrom(t, b, "/admin/roles/permissions", "/admin/roles/permissions", url.Values{"resource": {"reports"}, "action": {"read"}, "description": {"Read reports"}})
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
		if q := postFrom(t, b, "/admin/roles/permissions", "/admin/roles/permissions", url.Values{"resource": {"reports"}, "action": {"read"}}); q.status != http.StatusConflict ||
			!strings.Contains(q.body, "This permission already exists.") {
			t.Errorf("duplicate: %d %s", q.status, q.body)
		}
	})
}

// TestAdminRolesNeedRolesRead: without roles:read the pages answer the
// 403 page, and the actions are refused without changing anything.
func TestAdminRolesNeedRolesRead(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := operator(t, e, "audit:read")
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

var resetTokenRE = regexp.MustCompile(`hm_pr_[0-9A-Za-z]+`)

// login signs in with the email platform and returns the status.
func loginStatus(t *testing.T, e *apptest.Env, email, pw string) int {
	t.Helper()
	return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/login", Body: map[string]string{"email": email, "password": pw}}).Status
}

// lastMailKind is the kind of the newest mail to addr, "" for none.
func lastMailKind(t *testing.T, e *apptest.Env, addr string) string {
	t.Helper()
	msgs := outbox(t, e, addr)
	if len(msgs) == 0 {
		return ""
	}
	return msgs[0].Kind
}

// TestAdminCreateUser covers POST /v1/admin/users: with a password, with
// an invitation, and refusals that create nothing.
func TestAdminCreateUser(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		op := roleUser(t, e, "users:write", "users:read")
		reader := roleUser(t, e, "users:read")
		e.NewUser(t, apptest.UserSpec{Username: "holder", Email: "held@example.test"})
		users := func() int { return count(t, e, `SELECT COUNT(*) FROM users`) }
		before := users()
		for _, c := range []struct {
			name string
			body map[string]any
			want int
		}{
			{"address in use", map[string]any{"email": "HELD@example.test", "password": "long-enough-1"}, http.StatusConflict},
			{"username taken", map[string]any{"email": "x1@example.test", "password": "long-enough-1", "username": "HOLDER"}, http.StatusConflict},
			{"bad address", map[string]any{"email": "not an address", "password": "long-enough-1"}, http.StatusBadRequest},
			{"short password", map[string]any{"email": "x2@example.test", "password": "short"}, http.StatusBadRequest},
			{"neither", map[string]any{"email": "x3@example.test"}, http.StatusBadRequest},
			{"both", map[string]any{"email": "x4@example.test", "password": "long-enough-1", "invite": true}, http.StatusBadRequest},
			{"bad username", map[string]any{"email": "x5@example.test", "password": "long-enough-1", "username": "a b"}, http.StatusBadRequest},
			{"bad locale", map[string]any{"email": "x6@example.test", "password": "long-enough-1", "locale": "xx"}, http.StatusBadRequest},
			{"wrong type", map[string]any{"email": 5}, http.StatusBadRequest},
		} {
			r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/admin/users", Token: op.Token, Body: c.body})
			if r.Status != c.want || r.JSON()["error"] == nil || r.JSON()["message"] == "" {
				t.Fatalf("%s: %d %s", c.name, r.Status, r.Body)
			}
		}
		e.Call(t, "POST", "/v1/admin/users", reader.Token, map[string]any{"email": "y@example.test", "password": "long-enough-1"}, http.StatusForbidden)
		if users() != before {
			t.Fatal("a refused creation created a user")
		}

		// With a password: signs in at once, mailed a verification link, audited as the backend's.
		u := data(t, e.Call(t, "POST", "/v1/admin/users", op.Token, map[string]any{"email": "New.Person@Example.test", "password": "long-enough-1",
			"username": "new_person", "locale": "de"}, http.StatusCreated))
		if u["username"] != "new_person" || u["email"] != "new.person@example.test" || u["preferred_locale"] != "de" {
			t.Fatalf("created %v", u)
		}
		if got := loginStatus(t, e, "new.person@example.test", "long-enough-1"); got != http.StatusOK {
			t.Fatalf("login of the new user: %d", got)
		}
		if k := lastMailKind(t, e, "new.person@example.test"); k != "email_verify" {
			t.Fatalf("mail to the new user: %q", k)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'user_created' AND user_id = $1 AND actor_id = $2 AND source_service = 'backend'`, u["id"], op.ID); n != 1 {
			t.Fatalf("audit events: %d", n)
		}

		// Invited: the mailed link sets the password and verifies the address.
		inv := data(t, e.Call(t, "POST", "/v1/admin/users", op.Token, map[string]any{"email": "invited@example.test", "invite": true}, http.StatusCreated))
		if k := lastMailKind(t, e, "invited@example.test"); k != "invitation" {
			t.Fatalf("mail to the invited user: %q", k)
		}
		msgs, _ := mailtest.Outbox(context.Background(), e.Server.DB, "invited@example.test")
		tok := resetTokenRE.FindString(msgs[0].Text)
		if got := loginStatus(t, e, "invited@example.test", "chosen-by-me-1"); got != http.StatusUnauthorized {
			t.Fatalf("login before choosing: %d", got)
		}
		e.Call(t, "POST", "/v1/auth/password-reset/confirm", "", map[string]string{"token": tok, "password": "chosen-by-me-1"}, http.StatusOK)
		if got := loginStatus(t, e, "invited@example.test", "chosen-by-me-1"); got != http.StatusOK {
			t.Fatalf("login after choosing: %d", got)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM platform_accounts WHERE user_id = $1 AND email_verified`, inv["id"]); n != 1 {
			t.Fatal("the invitation did not verify the address")
		}
	})
}

// TestAdminCreateUserPageKeepsPassword: on /admin/users/new without script,
// a password typed while "invite by mail" stays chosen is refused with the
// reason at the password field, and nothing is created; with "set a
// password" the same form creates a user who signs in with it.
func TestAdminCreateUserPageKeepsPassword(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		op := roleUserWith(t, e, apptest.UserSpec{Password: "operator-password-1"}, "users:write", "users:read")
		b := signedInBrowser(t, e, op)
		form := func(how string) url.Values {
			return url.Values{"email": {"typed@example.test"}, "username": {"typed_pw"}, "how": {how}, "password": {"typed-password-1"}}
		}
		before := count(t, e, `SELECT COUNT(*) FROM users`)
		p := postFrom(t, b, "/admin/users/new", "/admin/users", form("invite"))
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="n-password-err"`) || !strings.Contains(p.body, "an invitation was chosen") {
			t.Fatalf("password with invite: %d %s", p.status, p.body)
		}
		if count(t, e, `SELECT COUNT(*) FROM users`) != before || len(outbox(t, e, "typed@example.test")) != 0 {
			t.Fatal("a refused form created a user or mailed an invitation")
		}
		p = postFrom(t, b, "/admin/users/new", "/admin/users", form("password"))
		if p.status != http.StatusSeeOther {
			t.Fatalf("password chosen: %d %s", p.status, p.body)
		}
		if got := loginStatus(t, e, "typed@example.test", "typed-password-1"); got != http.StatusOK {
			t.Fatalf("login with the typed password: %d", got)
		}
	})
}

// TestAdminManageUser covers the changes to an existing user: profile,
// password, reset mail, verification, signing out; and their refusals.
func TestAdminManageUser(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		op := roleUser(t, e, "users:write", "users:read")
		u := e.NewUser(t, apptest.UserSpec{Username: "managed", Password: "old-password-1"})
		other := e.NewUser(t, apptest.UserSpec{Username: "other_one"})
		boss := e.Admin(t)
		path := "/v1/admin/users/" + u.ID

		// Profile: refusals change nothing.
		for _, c := range []struct {
			body map[string]any
			want int
		}{
			{map[string]any{"email": other.Email}, http.StatusConflict},
			{map[string]any{"username": "Other_One", "locale": "de"}, http.StatusConflict},
			{map[string]any{"username": "x"}, http.StatusBadRequest},
			{map[string]any{"locale": "fr"}, http.StatusBadRequest},
			{map[string]any{}, http.StatusBadRequest},
		} {
			e.Call(t, "PATCH", path, op.Token, c.body, c.want)
		}
		if got := data(t, e.Call(t, "GET", "/v1/users/"+u.ID, op.Token, nil, http.StatusOK)); got["username"] != "managed" || got["preferred_locale"] != nil {
			t.Fatalf("a refused change changed %v", got)
		}
		e.Call(t, "PATCH", "/v1/admin/users/"+boss.ID, op.Token, map[string]any{"locale": "de"}, http.StatusForbidden)
		e.Call(t, "PATCH", "/v1/admin/users/nobody", op.Token, map[string]any{"locale": "de"}, http.StatusNotFound)
		got := data(t, e.Call(t, "PATCH", path, op.Token, map[string]any{"username": "renamed", "email": "Moved@Example.test", "locale": "de"}, http.StatusOK))
		if got["username"] != "renamed" || got["email"] != "moved@example.test" || got["preferred_locale"] != "de" {
			t.Fatalf("profile %v", got)
		}
		if loginStatus(t, e, "moved@example.test", "old-password-1") != http.StatusOK || loginStatus(t, e, u.Email, "old-password-1") != http.StatusUnauthorized {
			t.Fatal("the sign-in address did not move")
		}

		// The new address is unverified: a verification mail, then marked verified.
		e.Call(t, "POST", path+"/email/verification", op.Token, nil, http.StatusOK)
		if k := lastMailKind(t, e, "moved@example.test"); k != "email_verify" {
			t.Fatalf("verification mail: %q", k)
		}
		e.Call(t, "POST", path+"/email/verified", op.Token, nil, http.StatusOK)
		e.Call(t, "POST", path+"/email/verified", op.Token, nil, http.StatusBadRequest)
		e.Call(t, "POST", path+"/email/verification", op.Token, nil, http.StatusBadRequest)

		// A reset mail; then a password set, which signs the user out.
		e.Call(t, "POST", path+"/password-reset", op.Token, nil, http.StatusOK)
		if k := lastMailKind(t, e, "moved@example.test"); k != "password_reset" {
			t.Fatalf("reset mail: %q", k)
		}
		e.Call(t, "POST", path+"/password", op.Token, map[string]any{"password": "short"}, http.StatusBadRequest)
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK)
		e.Call(t, "POST", path+"/password", op.Token, map[string]any{"password": "new-password-2"}, http.StatusOK)
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusUnauthorized)
		if loginStatus(t, e, "moved@example.test", "new-password-2") != http.StatusOK {
			t.Fatal("the new password does not sign in")
		}

		// Signing out everywhere.
		e.NewSession(t, u.ID)
		e.NewSession(t, u.ID)
		r := e.Call(t, "DELETE", path+"/sessions", op.Token, nil, http.StatusOK).JSON()
		if r["revoked_count"].(float64) < 2 {
			t.Fatalf("signed out %v", r)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM sessions WHERE user_id = $1 AND revoked_at IS NULL`, u.ID); n != 0 {
			t.Fatalf("%d sessions left", n)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND actor_id = $2 AND source_service = 'backend'`, u.ID, op.ID); n != 5 {
			t.Fatalf("audit events of the operator: %d", n)
		}
	})
}

// TestAdminMailOutbox: /admin/mail shows super admins the kept mails; an
// operator holding every permission but not a super admin gets 403; with
// SMTP the page does not exist.
func TestAdminMailOutbox(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		boss := e.NewUser(t, apptest.UserSpec{SuperAdmin: true, Roles: []string{"role_admin", "role_user"}, Password: "boss-password-1"})
		op := roleUserWith(t, e, apptest.UserSpec{Password: "op-password-1"}, "users:read", "users:write", "audit:read", "settings:read")
		e.Call(t, "POST", "/v1/admin/users", op.Token, map[string]any{"email": "kept@example.test", "invite": true}, http.StatusCreated)
		b := signedInBrowser(t, e, boss)
		if p := b.get("/admin/mail"); p.status != http.StatusOK || !strings.Contains(p.body, "kept@example.test") || !strings.Contains(p.body, "reset-password?token=hm_pr_") {
			t.Fatalf("outbox for a super admin: %d %s", p.status, p.body)
		}
		if p := b.get("/admin"); !strings.Contains(p.body, `href="/admin/mail"`) {
			t.Fatal("the overview does not link the outbox")
		}
		if p := signedInBrowser(t, e, op).get("/admin/mail"); p.status != http.StatusForbidden {
			t.Fatalf("outbox for an operator: %d", p.status)
		}
	})
	withSMTP := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)}, func(c *config.Config) { c.SMTPURL = "smtp://127.0.0.1:1" })
	boss := withSMTP.NewUser(t, apptest.UserSpec{SuperAdmin: true, Roles: []string{"role_admin", "role_user"}, Password: "boss-password-1"})
	b := signedInBrowser(t, withSMTP, boss)
	if p := b.get("/admin/mail"); p.status != http.StatusNotFound {
		t.Fatalf("outbox with SMTP: %d", p.status)
	}
	if p := b.get("/admin"); strings.Contains(p.body, `href="/admin/mail"`) {
		t.Fatal("the overview links the outbox with SMTP")
	}
}
