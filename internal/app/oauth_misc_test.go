package app_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
)

func TestOAuthAuthorizeByPOST(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		getCode(t, e, user.Token, authzParams(c.ID))
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/authorize", Token: user.Token, Body: authzParams(c.ID)})
		u := location(t, r)
		if u.Query().Get("code") == "" || u.Query().Get("state") != "st4te" {
			t.Fatalf("POST authorize %s", u)
		}
		if r := exchange(t, e, c, u.Query().Get("code")); r.Status != http.StatusOK {
			t.Fatalf("exchange %d %s", r.Status, r.Body)
		}
		// Without a session the form parameters travel in return_to.
		u = location(t, e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/authorize", Body: authzParams(c.ID)}))
		back, _ := url.Parse(u.Query().Get("return_to"))
		if back.Query().Get("client_id") != c.ID || back.Query().Get("redirect_uri") != cb {
			t.Fatalf("return_to %s", back)
		}
	})
}

func TestOAuthRevokeUserTokensEndsCodesAndPending(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		code := getCode(t, e, user.Token, authzParams(c.ID))
		pending := authorize(t, e, user.Token, authzParams(c.ID, "scope", "openid profile email", "prompt", "consent"), nil).JSON()["pending_authorization_id"].(string)
		if err := e.Server.OAuth.RevokeUserTokens(context.Background(), user.ID); err != nil {
			t.Fatal(err)
		}
		oauthErr(t, exchange(t, e, c, code), http.StatusBadRequest, "invalid_grant")
		e.Call(t, "POST", "/v1/oauth/authorize/consent", user.Token, map[string]any{"pending_authorization_id": pending, "approved": true}, http.StatusNotFound)
	})
}

func TestOAuthPurge(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		tok := tokens(t, e, user.Token, c, authzParams(c.ID))
		count := func(table string) int {
			var n int
			if err := e.Server.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		if err := e.Server.OAuth.Purge(ctx); err != nil || count("oauth_tokens") != 2 || count("oauth_codes") != 1 {
			t.Fatalf("purge removed live rows: %v", err)
		}
		// A day after expiry the code and the access token go; the refresh token stays for reuse detection.
		e.Clock.Advance(26 * time.Hour)
		if err := e.Server.OAuth.Purge(ctx); err != nil || count("oauth_tokens") != 1 || count("oauth_codes") != 0 {
			t.Fatalf("after a day: tokens %d codes %d, %v", count("oauth_tokens"), count("oauth_codes"), err)
		}
		e.Clock.Advance(60 * 24 * time.Hour)
		if err := e.Server.OAuth.Purge(ctx); err != nil || count("oauth_tokens") != 0 {
			t.Fatalf("after 60 days: tokens %d, %v", count("oauth_tokens"), err)
		}
		oauthErr(t, refreshReq(t, e, c, tok["refresh_token"].(string)), http.StatusBadRequest, "invalid_grant")
	})
}

// TestOAuthBasicCredentialsAreFormDecoded checks RFC 6749 §2.3.1: the client
// id and secret inside the Basic header are application/x-www-form-urlencoded.
func TestOAuthBasicCredentialsAreFormDecoded(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		encodedID := strings.ReplaceAll(c.ID, "-", "%2D")
		hdr := map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(encodedID+":"+c.Secret))}
		code := getCode(t, e, user.Token, authzParams(c.ID))
		r := tokenReq(t, e, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cb}}, hdr)
		if r.Status != http.StatusOK {
			t.Fatalf("percent-encoded Basic credentials: %d %s", r.Status, r.Body)
		}
		bad := map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(c.ID+":%zz"))}
		oauthErr(t, tokenReq(t, e, url.Values{"grant_type": {"authorization_code"}, "code": {"x"}, "redirect_uri": {cb}}, bad), http.StatusUnauthorized, "invalid_client")
	})
}
