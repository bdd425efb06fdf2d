package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apptest"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/dbtest"
	"hmid/internal/sessions"
)

func TestMySessions(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		ctx := context.Background()
		phone, err := sessions.Create(ctx, e.Server.DB, e.Clock.Now(), sessions.New{UserID: u.ID, Provider: "discord", IPAddress: "198.51.100.7",
			UserAgent: "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"})
		if err != nil {
			t.Fatal(err)
		}
		third, thirdID := e.NewSession(t, u.ID)
		// An expired and a revoked session are not listed.
		_, err = sessions.Create(ctx, e.Server.DB, e.Clock.Now(), sessions.New{UserID: u.ID, ExpiresAt: e.Clock.Now().Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		_, revokedID := e.NewSession(t, u.ID)
		execSQL(t, e, `UPDATE sessions SET revoked_at = $1 WHERE id = $2`, db.TS(e.Clock.Now()), revokedID)
		e.Clock.Advance(2 * time.Minute)

		e.Call(t, "GET", "/v1/users/me/sessions", "", nil, http.StatusUnauthorized)
		key, _ := e.NewAPIKey(t, u.ID)
		e.Call(t, "GET", "/v1/users/me/sessions", key, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/users/me/sessions", e.SystemKey, nil, http.StatusForbidden)

		var list struct {
			Sessions []sessions.Session    `json:"sessions"`
			Current  string                `json:"current_session_id"`
			Links    struct{ Self string } `json:"_links"`
		}
		e.Call(t, "GET", "/v1/users/me/sessions", u.Token, nil, http.StatusOK).Decode(t, &list)
		if list.Current != u.SessionID || len(list.Sessions) != 3 || list.Links.Self != e.URL+"/v1/users/me/sessions" {
			t.Fatalf("list = %+v", list)
		}
		var sawPhone, sawCurrent bool
		for _, s := range list.Sessions {
			if s.ID == phone.ID {
				sawPhone = s.DeviceType == "mobile" && s.Provider == "discord" && s.ProviderName == "Discord" && s.IPAddress == "198.51.100.7" &&
					s.BrowserName != "" && s.OSName != "" && !s.IsCurrent && s.ExpiresAt.Equal(apptest.Start.Add(sessions.DefaultTTL))
			}
			if s.ID == u.SessionID {
				sawCurrent = s.IsCurrent && s.ProviderName == "Email"
			}
		}
		if !sawPhone || !sawCurrent {
			t.Fatalf("sessions = %+v", list.Sessions)
		}

		// The current session cannot be revoked here: 400 {success: false, message}.
		r := e.Call(t, "DELETE", "/v1/users/me/sessions/"+u.SessionID, u.Token, nil, http.StatusBadRequest)
		if m := r.JSON(); m["success"] != false || m["message"] == "" {
			t.Fatalf("current = %s", r.Body)
		}
		_, otherSession := e.NewSession(t, other.ID)
		e.Call(t, "DELETE", "/v1/users/me/sessions/"+otherSession, u.Token, nil, http.StatusNotFound)
		e.Call(t, "DELETE", "/v1/users/me/sessions/"+uuid.NewString(), u.Token, nil, http.StatusNotFound)
		e.Call(t, "DELETE", "/v1/users/me/sessions/"+revokedID, u.Token, nil, http.StatusNotFound)

		e.Call(t, "GET", "/v1/users/me", phone.Token, nil, http.StatusOK)
		r = e.Call(t, "DELETE", "/v1/users/me/sessions/"+phone.ID, u.Token, nil, http.StatusOK)
		if m := r.JSON(); m["success"] != true {
			t.Fatalf("revoke = %s", r.Body)
		}
		// The revoked token dies at once, even though it was cached.
		e.Call(t, "GET", "/v1/users/me", phone.Token, nil, http.StatusUnauthorized)
		e.Call(t, "DELETE", "/v1/users/me/sessions/"+phone.ID, u.Token, nil, http.StatusNotFound)
		if n := userAuditCount(t, e, u.ID, "session_revoked"); n != 1 {
			t.Fatalf("session_revoked = %d", n)
		}

		// Revoke all others: the third session goes, the current one stays.
		e.Call(t, "GET", "/v1/users/me", third, nil, http.StatusOK)
		m := e.Call(t, "DELETE", "/v1/users/me/sessions", u.Token, nil, http.StatusOK).JSON()
		if m["success"] != true || m["revoked_count"] != 1.0 || m["message"] == "" {
			t.Fatalf("revoke all = %v", m)
		}
		e.Call(t, "GET", "/v1/users/me", third, nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK)
		m = e.Call(t, "DELETE", "/v1/users/me/sessions", u.Token, nil, http.StatusOK).JSON()
		if m["revoked_count"] != 0.0 {
			t.Fatalf("second revoke all = %v", m)
		}
		e.Call(t, "GET", "/v1/users/me/sessions", u.Token, nil, http.StatusOK).Decode(t, &list)
		if len(list.Sessions) != 1 || list.Sessions[0].ID != u.SessionID {
			t.Fatalf("left = %+v", list.Sessions)
		}
		_ = thirdID
		e.Call(t, "DELETE", "/v1/users/me/sessions", key, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/users/me/sessions/"+u.SessionID, "", nil, http.StatusUnauthorized)
	})
}

func TestInternalSessions(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		exp := apptest.Start.Add(48 * time.Hour).Format(time.RFC3339)
		body := map[string]any{"userId": u.ID, "expires": exp}
		e.Call(t, "POST", "/v1/sessions", "", body, http.StatusUnauthorized)
		e.Call(t, "POST", "/v1/sessions", u.Token, body, http.StatusForbidden)
		e.Call(t, "POST", "/v1/sessions", e.SystemKey, map[string]any{"userId": uuid.NewString(), "expires": exp}, http.StatusNotFound)
		for _, bad := range []any{
			map[string]any{"userId": u.ID, "expires": "tomorrow"},
			map[string]any{"userId": u.ID, "expires": apptest.Start.Add(-time.Hour).Format(time.RFC3339)},
			map[string]any{"userId": u.ID, "expires": apptest.Start.Add(400 * 24 * time.Hour).Format(time.RFC3339)},
			map[string]any{"userId": u.ID, "expires": 12},
			map[string]any{"expires": exp},
			"[]",
		} {
			e.Call(t, "POST", "/v1/sessions", e.SystemKey, bad, http.StatusBadRequest)
		}

		var rec sessions.Record
		e.Call(t, "POST", "/v1/sessions", e.SystemKey, body, http.StatusCreated).Decode(t, &rec)
		if rec.UserID != u.ID || rec.Expires.Format(time.RFC3339) != exp || !rec.CreatedAt.Equal(apptest.Start) || rec.ID == "" {
			t.Fatalf("record = %+v", rec)
		}
		if userAuditCount(t, e, u.ID, "session_created") != 1 {
			t.Fatal("session_created not audited")
		}
		// The token works as a bearer token.
		if data(t, e.Call(t, "GET", "/v1/users/me", rec.SessionToken, nil, http.StatusOK))["id"] != u.ID {
			t.Fatal("session token is not the user")
		}
		var got sessions.Record
		e.Call(t, "GET", "/v1/sessions/"+rec.SessionToken, e.SystemKey, nil, http.StatusOK).Decode(t, &got)
		if got != rec {
			t.Fatalf("get = %+v, want %+v", got, rec)
		}
		e.Call(t, "GET", "/v1/sessions/"+rec.SessionToken, u.Token, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/sessions/hm_st_unknown", e.SystemKey, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/sessions/not-a-token", e.SystemKey, nil, http.StatusNotFound)

		e.Call(t, "DELETE", "/v1/sessions/"+rec.SessionToken+"?reason=bored", e.SystemKey, nil, http.StatusBadRequest)
		e.Call(t, "DELETE", "/v1/sessions/"+rec.SessionToken, u.Token, nil, http.StatusForbidden)
		r := e.Do(t, apptest.Req{Method: "DELETE", Path: "/v1/sessions/" + rec.SessionToken + "?reason=no_access", Token: e.SystemKey,
			Header: map[string]string{"X-Source-Service": "backend"}})
		if r.Status != http.StatusNoContent {
			t.Fatalf("delete: %d %s", r.Status, r.Body)
		}
		e.Call(t, "GET", "/v1/users/me", rec.SessionToken, nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/sessions/"+rec.SessionToken, e.SystemKey, nil, http.StatusNotFound)
		e.Call(t, "DELETE", "/v1/sessions/"+rec.SessionToken, e.SystemKey, nil, http.StatusNotFound)
		var meta string
		var src string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT metadata, source_service FROM audit_events WHERE user_id = $1 AND event_type = 'logout'`, u.ID).
			Scan(&meta, &src); err != nil {
			t.Fatal(err)
		}
		var md map[string]any
		_ = json.Unmarshal([]byte(meta), &md)
		if md["reason"] != "no_access" || md["session_id"] != rec.ID || md["app"] != "backend" || src != "backend" {
			t.Fatalf("logout metadata = %v, source %s", md, src)
		}

		// Default reason, no app header; a session without expires lasts the default lifetime.
		e.Call(t, "POST", "/v1/sessions", e.SystemKey, map[string]any{"userId": u.ID}, http.StatusCreated).Decode(t, &rec)
		if !rec.Expires.Equal(apptest.Start.Add(sessions.DefaultTTL)) {
			t.Fatalf("default expiry = %v", rec.Expires)
		}
		e.Call(t, "DELETE", "/v1/sessions/"+rec.SessionToken, e.SystemKey, nil, http.StatusNoContent)
		n := scalar[int](t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'logout' AND metadata LIKE '%"reason":"user_initiated"%'`, u.ID)
		if n != 1 {
			t.Fatalf("default-reason logouts = %d", n)
		}

		// An expired session is not found; a deleted user gets no new session.
		e.Call(t, "POST", "/v1/sessions", e.SystemKey, body, http.StatusCreated).Decode(t, &rec)
		e.Clock.Advance(49 * time.Hour)
		e.Call(t, "GET", "/v1/sessions/"+rec.SessionToken, e.SystemKey, nil, http.StatusNotFound)
		e.Call(t, "DELETE", "/v1/users/"+u.ID, e.SystemKey, nil, http.StatusNoContent)
		e.Call(t, "POST", "/v1/sessions", e.SystemKey, map[string]any{"userId": u.ID}, http.StatusNotFound)
	})
}

// TestInternalSessionBannedUser: a banned user gets no session from
// POST /v1/sessions (403, nothing stored); once the ban ends, they do.
func TestInternalSessionBannedUser(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		u := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "POST", "/v1/users/"+u.ID+"/ban", admin.Token, map[string]any{"reason": "spam", "duration_seconds": 3600}, http.StatusCreated)
		before := scalar[int](t, e, `SELECT COUNT(*) FROM sessions WHERE user_id = $1`, u.ID)
		e.Call(t, "POST", "/v1/sessions", e.SystemKey, map[string]any{"userId": u.ID}, http.StatusForbidden)
		if after := scalar[int](t, e, `SELECT COUNT(*) FROM sessions WHERE user_id = $1`, u.ID); after != before {
			t.Fatalf("sessions %d → %d for a banned user", before, after)
		}
		if userAuditCount(t, e, u.ID, "session_created") != 0 {
			t.Fatal("session_created audited for a refused session")
		}
		e.Clock.Advance(2 * time.Hour) // the timed ban has expired
		e.Call(t, "POST", "/v1/sessions", e.SystemKey, map[string]any{"userId": u.ID}, http.StatusCreated)
	})
}

// fakeOAuth resolves hm_at_ tokens to fixed principals, standing in for the
// OAuth area.
type fakeOAuth map[string]*authn.Principal

func (f fakeOAuth) ResolveAccessToken(_ context.Context, tok string) (*authn.Principal, error) {
	if p, ok := f[tok]; ok {
		return p, nil
	}
	return nil, authn.ErrInvalidToken
}

func TestOAuthTokensOnUserRoutes(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		token := func(scopes ...string) string {
			return "hm_at_" + uuid.NewString()[:8] + scopes[0]
		}
		all, openid := token("all"), token("openid")
		e.Server.Guard.Resolver.OAuth = fakeOAuth{
			all:    authn.NewPrincipal(authn.Principal{Kind: authn.KindOAuth, UserID: u.ID, OAuthScopes: []string{"openid", "profile", "roles", "permissions"}}, nil),
			openid: authn.NewPrincipal(authn.Principal{Kind: authn.KindOAuth, UserID: u.ID, OAuthScopes: []string{"openid"}}, nil),
		}
		execSQL(t, e, `UPDATE users SET avatar_url = 'https://cdn.example.test/me.png' WHERE id = $1`, u.ID)
		if d := data(t, e.Call(t, "GET", "/v1/users/me", openid, nil, http.StatusOK)); d["id"] != u.ID || d["email"] != nil || d["avatar_url"] != nil {
			t.Fatalf("openid-only /me = %v", d)
		}
		if d := data(t, e.Call(t, "GET", "/v1/users/me", all, nil, http.StatusOK)); d["email"] != nil || d["avatar_url"] == nil {
			t.Fatalf("profile-scoped /me = %v", d)
		}
		for _, p := range []string{"/profile", "/roles", "/permissions"} {
			e.Call(t, "GET", "/v1/users/"+u.ID+p, all, nil, http.StatusOK)
			e.Call(t, "GET", "/v1/users/"+u.ID+p, openid, nil, http.StatusForbidden)
			e.Call(t, "GET", "/v1/users/"+other.ID+p, all, nil, http.StatusForbidden)
		}
		// Nothing else accepts OAuth access tokens.
		e.Call(t, "GET", "/v1/users/"+u.ID, all, nil, http.StatusForbidden)
		e.Call(t, "PATCH", "/v1/users/"+u.ID, all, map[string]any{"privacy_mode": true}, http.StatusForbidden)
		e.Call(t, "GET", "/v1/users/me/sessions", all, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/users/me", "hm_at_unknown", nil, http.StatusUnauthorized)
	})
}

// TestUserAndSessionRoutesNeedAuthentication checks every route of the area
// answers 401 without a token and with an unknown one, and that session-only
// and system-key routes refuse other credentials with 403.
func TestUserAndSessionRoutesNeedAuthentication(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		id := u.ID
		routes := [][2]string{
			{"GET", "/v1/users"}, {"GET", "/v1/users/me"}, {"POST", "/v1/users/oauth"}, {"GET", "/v1/users/email/a@b.test"},
			{"GET", "/v1/users/" + id}, {"PATCH", "/v1/users/" + id}, {"DELETE", "/v1/users/" + id},
			{"GET", "/v1/users/" + id + "/profile"}, {"PATCH", "/v1/users/" + id + "/locale"}, {"PATCH", "/v1/users/" + id + "/username"},
			{"GET", "/v1/users/" + id + "/permissions"}, {"GET", "/v1/users/" + id + "/roles"}, {"POST", "/v1/users/" + id + "/roles"},
			{"DELETE", "/v1/users/" + id + "/roles/role_user"},
			{"GET", "/v1/users/me/sessions"}, {"DELETE", "/v1/users/me/sessions"}, {"DELETE", "/v1/users/me/sessions/" + u.SessionID},
			{"POST", "/v1/sessions"}, {"GET", "/v1/sessions/" + u.Token}, {"DELETE", "/v1/sessions/" + u.Token},
		}
		for _, rt := range routes {
			e.Call(t, rt[0], rt[1], "", map[string]any{}, http.StatusUnauthorized)
			e.Call(t, rt[0], rt[1], "hm_st_00000000000000000000000000000000000000000000", map[string]any{}, http.StatusUnauthorized)
		}
		key, _ := e.NewAPIKey(t, u.ID, "users:read")
		for _, rt := range routes[14:17] {
			e.Call(t, rt[0], rt[1], key, nil, http.StatusForbidden)
			e.Call(t, rt[0], rt[1], e.SystemKey, nil, http.StatusForbidden)
		}
		for _, rt := range routes[17:] {
			e.Call(t, rt[0], rt[1], key, map[string]any{}, http.StatusForbidden)
		}
		// Nothing above touched the user's own session.
		e.Call(t, "GET", "/v1/users/me", u.Token, nil, http.StatusOK)
	})
}

// resetLink finds the token of a password-reset link in a mail.
var resetLink = regexp.MustCompile(`token=(hm_pr_[0-9A-Za-z_-]+)`)

// grantedTokens are the tokens of one authorization.
type grantedTokens struct{ access, refresh string }

func grantTokens(t *testing.T, e *apptest.Env, sess string, c testClient, scope string) grantedTokens {
	t.Helper()
	tr := tokens(t, e, sess, c, authzParams(c.ID, "scope", scope))
	return grantedTokens{access: tr["access_token"].(string), refresh: tr["refresh_token"].(string)}
}

// userInfoStatus is the status of UserInfo for an access token.
func userInfoStatus(t *testing.T, e *apptest.Env, access string) int {
	t.Helper()
	return e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/userinfo", Token: access}).Status
}

// TestSessionEndEndsItsTokens: when a browser session ends, by any path,
// the OAuth tokens granted in it end too, except refresh tokens granted with
// offline_access and the access tokens they mint later (OpenID Connect
// Back-Channel Logout 1.0 §2.7); a password change or reset, a second-factor
// reset, a ban and a deletion end every token of the user, offline ones
// included (docs/decisions.md "Session end and tokens").
func TestSessionEndEndsItsTokens(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c := mkClient(t, e, e.SystemKey, map[string]any{"name": "Ends", "allowed_scopes": []string{"openid", "profile", "email", "offline_access"}})
		for _, tc := range []struct {
			name string
			// userWide: every token of the user ends, offline ones too.
			userWide bool
			end      func(t *testing.T, u apptest.User, tok, sessionID string)
		}{
			{"logout", false, func(t *testing.T, _ apptest.User, tok, _ string) {
				e.Call(t, "POST", "/v1/auth/logout", tok, nil, http.StatusNoContent)
			}},
			{"rp-initiated logout", false, func(t *testing.T, _ apptest.User, tok, _ string) {
				r := endSession(t, e, "GET", tok, url.Values{"client_id": {c.ID}})
				if r := confirmEndSession(t, e, tok, r); r.Status != http.StatusOK {
					t.Fatalf("confirmation: %d", r.Status)
				}
			}},
			{"sign out other sessions", false, func(t *testing.T, u apptest.User, _, _ string) {
				e.Call(t, "DELETE", "/v1/users/me/sessions", u.Token, nil, http.StatusOK)
			}},
			{"session revoked", false, func(t *testing.T, u apptest.User, _, sessionID string) {
				e.Call(t, "DELETE", "/v1/users/me/sessions/"+sessionID, u.Token, nil, http.StatusOK)
			}},
			{"password changed", true, func(t *testing.T, u apptest.User, _, _ string) {
				e.Call(t, "POST", "/v1/users/me/password", u.Token, map[string]any{"current_password": "old-password-1", "new_password": "new-password-2"}, http.StatusOK)
			}},
			{"password reset", true, func(t *testing.T, u apptest.User, _, _ string) {
				e.Call(t, "POST", "/v1/auth/password-reset/request", "", map[string]any{"email": u.Email}, http.StatusOK)
				_, m := tokenFrom(t, e, strings.ToLower(u.Email), "password_reset")
				link := resetLink.FindStringSubmatch(m.Text)[1]
				e.Call(t, "POST", "/v1/auth/password-reset/confirm", "", map[string]any{"token": link, "password": "a fresh password 3"}, http.StatusOK)
			}},
			{"two-factor reset", true, func(t *testing.T, u apptest.User, _, _ string) {
				e.Call(t, "POST", "/v1/users/"+u.ID+"/2fa/reset", e.SystemKey, map[string]any{"reason": "lost phone"}, http.StatusOK)
			}},
			{"ban", true, func(t *testing.T, u apptest.User, _, _ string) {
				e.Call(t, "POST", "/v1/users/"+u.ID+"/ban", e.SystemKey, map[string]any{"reason": "spam"}, http.StatusCreated)
			}},
			{"deletion", true, func(t *testing.T, u apptest.User, _, _ string) {
				e.Call(t, "DELETE", "/v1/users/"+u.ID, e.SystemKey, nil, http.StatusNoContent)
			}},
		} {
			t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
				u := e.NewUser(t, apptest.UserSpec{Password: "old-password-1"})
				if tc.name == "two-factor reset" {
					tfEnable(t, e, u)
				}
				// The browser session the grants are made in; u.Token is another one.
				tok, sessionID := e.NewSession(t, u.ID)
				online := grantTokens(t, e, tok, c, "openid profile")
				offline := grantTokens(t, e, tok, c, "openid offline_access")
				// A refresh of another offline grant while the session lives:
				// its access token is minted by an offline refresh token.
				r := refreshReq(t, e, c, grantTokens(t, e, tok, c, "openid offline_access").refresh)
				if r.Status != http.StatusOK {
					t.Fatalf("offline refresh: %d %s", r.Status, r.Body)
				}
				minted := grantedTokens{access: r.JSON()["access_token"].(string), refresh: r.JSON()["refresh_token"].(string)}
				for _, a := range []string{online.access, offline.access, minted.access} {
					if st := userInfoStatus(t, e, a); st != http.StatusOK {
						t.Fatalf("before: userinfo %d", st)
					}
				}

				tc.end(t, u, tok, sessionID)

				// Granted in the session: ended at once.
				if st := userInfoStatus(t, e, online.access); st != http.StatusUnauthorized {
					t.Fatalf("online access token after the end: userinfo %d, want 401", st)
				}
				oauthErr(t, refreshReq(t, e, c, online.refresh), http.StatusBadRequest, "invalid_grant")
				if st := userInfoStatus(t, e, offline.access); st != http.StatusUnauthorized {
					t.Fatalf("access token issued with the offline grant, in the session: userinfo %d, want 401", st)
				}
				if tc.userWide {
					if st := userInfoStatus(t, e, minted.access); st != http.StatusUnauthorized {
						t.Fatalf("minted access token after a user-wide end: userinfo %d, want 401", st)
					}
					oauthErr(t, refreshReq(t, e, c, minted.refresh), http.StatusBadRequest, "invalid_grant")
					oauthErr(t, refreshReq(t, e, c, offline.refresh), http.StatusBadRequest, "invalid_grant")
					return
				}
				if r := refreshReq(t, e, c, offline.refresh); r.Status != http.StatusOK {
					t.Fatalf("offline refresh token granted in the ended session: %d %s", r.Status, r.Body)
				}
				// Offline: the refresh token and what it minted outlive the session.
				if st := userInfoStatus(t, e, minted.access); st != http.StatusOK {
					t.Fatalf("access token minted by the offline refresh token: userinfo %d, want 200", st)
				}
				r = refreshReq(t, e, c, minted.refresh)
				if r.Status != http.StatusOK {
					t.Fatalf("offline refresh after the session ended: %d %s", r.Status, r.Body)
				}
				if st := userInfoStatus(t, e, r.JSON()["access_token"].(string)); st != http.StatusOK {
					t.Fatalf("access token minted after the session ended: userinfo %d, want 200", st)
				}
			})
		}
	})
}

// TestSessionEndEndsTokensOnEveryInstance: a token used on instance b
// stops working there the moment instance a ends its session; no instance
// keeps a cached verdict on an OAuth access token.
func TestSessionEndEndsTokensOnEveryInstance(t *testing.T) {
	t.Parallel()
	a, b := apptest.NewPair(t, dbtest.RedisURL())
	c := mkClient(t, a, a.SystemKey, map[string]any{"name": "Two"})
	u := a.NewUser(t, apptest.UserSpec{})
	tok, _ := a.NewSession(t, u.ID)
	g := grantTokens(t, a, tok, c, "openid profile")
	for i := 0; i < 2; i++ { // used, so a cache would hold it
		if st := userInfoStatus(t, b, g.access); st != http.StatusOK {
			t.Fatalf("instance b before: userinfo %d", st)
		}
	}
	a.Call(t, "POST", "/v1/auth/logout", tok, nil, http.StatusNoContent)
	if st := userInfoStatus(t, b, g.access); st != http.StatusUnauthorized {
		t.Fatalf("instance b after the logout on a: userinfo %d, want 401", st)
	}
	oauthErr(t, refreshReq(t, b, c, g.refresh), http.StatusBadRequest, "invalid_grant")
}

// TestSessionEndsAreQueued: a session revoked or deleted while an OAuth
// grant is open in it is queued for the back-channel logout worker by the
// database itself (oauth_session_ends), whichever statement ended it; a
// session without an open grant is not; a pass of the worker ends the
// queued session's grants and empties the queue.
func TestSessionEndsAreQueued(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c := mkClient(t, e, e.SystemKey, map[string]any{"name": "Queued Ends"})
		queued := func(sessionID string) bool {
			return count(t, e, `SELECT COUNT(*) FROM oauth_session_ends WHERE session_id = $1`, sessionID) == 1
		}
		openGrants := func(sessionID string) int {
			return count(t, e, `SELECT COUNT(*) FROM oauth_session_grants WHERE session_id = $1 AND ended_at IS NULL`, sessionID)
		}
		// The server's own worker may have swept the queue already (it
		// passes every 2 s); then the grants are ended.
		queuedOrSwept := func(sessionID string) bool {
			return queued(sessionID) != (openGrants(sessionID) == 0)
		}

		// Revoked with a grant open: queued, then swept.
		u := e.NewUser(t, apptest.UserSpec{})
		tok, sessionID := e.NewSession(t, u.ID)
		grantTokens(t, e, tok, c, "openid")
		e.Call(t, "DELETE", "/v1/users/me/sessions/"+sessionID, u.Token, nil, http.StatusOK)
		if !queuedOrSwept(sessionID) {
			t.Fatalf("revoked session: queued %v, open grants %d", queued(sessionID), openGrants(sessionID))
		}
		if _, err := e.Server.Backchannel.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if queued(sessionID) || openGrants(sessionID) != 0 {
			t.Fatalf("after a pass: queued %v, open grants %d", queued(sessionID), openGrants(sessionID))
		}

		// Revoked without a grant: not queued.
		_, bare := e.NewSession(t, u.ID)
		e.Call(t, "DELETE", "/v1/users/me/sessions/"+bare, u.Token, nil, http.StatusOK)
		if queued(bare) {
			t.Fatal("a session without grants was queued")
		}

		// Deleted with its user (ON DELETE CASCADE): queued.
		gone := e.NewUser(t, apptest.UserSpec{})
		gtok, gsession := e.NewSession(t, gone.ID)
		grantTokens(t, e, gtok, c, "openid")
		if _, err := e.Server.DB.ExecContext(context.Background(), `DELETE FROM users WHERE id = $1`, gone.ID); err != nil {
			t.Fatal(err)
		}
		if !queuedOrSwept(gsession) {
			t.Fatal("a session deleted with its user was neither queued nor swept")
		}
	})
}
