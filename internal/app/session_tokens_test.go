package app_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/dbtest"
)

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
