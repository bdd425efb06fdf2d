package app_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/db"
	"hmid/internal/oauth"
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

// TestOAuthPurgeKeepsWhatReuseDetectionNeeds: spent refresh tokens are kept
// while their family can still be used (so presenting one still revokes the
// family), revoked access tokens go at once, and every row of a revoked or
// expired family goes, in batches of oauth.PurgeBatch rows. /metrics shows
// the tables' sizes.
func TestOAuthPurgeKeepsWhatReuseDetectionNeeds(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		count := func() int { return scalar[int](t, e, `SELECT COUNT(*) FROM oauth_tokens`) }
		purge := func() {
			t.Helper()
			if err := e.Server.OAuth.Purge(ctx); err != nil {
				t.Fatal(err)
			}
		}

		// A chain of three rotations: R0..R2 spent, R3 and its access token live.
		tok := tokens(t, e, user.Token, c, authzParams(c.ID))
		spent := []string{tok["refresh_token"].(string)}
		rt := spent[0]
		for range 3 {
			r := refreshReq(t, e, c, rt)
			if r.Status != http.StatusOK {
				t.Fatalf("refresh %d %s", r.Status, r.Body)
			}
			rt = r.JSON()["refresh_token"].(string)
			spent = append(spent, rt)
		}
		if n := count(); n != 8 {
			t.Fatalf("tokens before purge = %d", n)
		}
		purge()
		// The three revoked access tokens go; the spent refresh tokens stay.
		if n := count(); n != 5 {
			t.Fatalf("tokens after purge = %d, want 5 (4 refresh, 1 access)", n)
		}
		// Reuse detection still works: R0 revokes the family, R3 with it.
		oauthErr(t, refreshReq(t, e, c, spent[0]), http.StatusBadRequest, "invalid_grant")
		oauthErr(t, refreshReq(t, e, c, rt), http.StatusBadRequest, "invalid_grant")
		purge()
		if n := count(); n != 0 {
			t.Fatalf("tokens of a revoked family left: %d", n)
		}

		// A family revoked at the revocation endpoint goes too; a live one stays.
		dead := tokens(t, e, user.Token, c, authzParams(c.ID))
		live := tokens(t, e, user.Token, c, authzParams(c.ID))
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/revoke", Body: url.Values{"token": {dead["refresh_token"].(string)},
			"client_id": {c.ID}, "client_secret": {c.Secret}}})
		if r.Status != http.StatusOK {
			t.Fatalf("revoke %d %s", r.Status, r.Body)
		}
		// Many dead rows: more than one batch of expired families.
		past := db.TS(e.Clock.Now().Add(-time.Hour))
		const deadRows = 2*oauth.PurgeBatch + 17
		for i := 0; i < deadRows; i += 500 {
			var vals []string
			for j := i; j < min(i+500, deadRows); j++ {
				vals = append(vals, fmt.Sprintf("('dead-%05d', 'refresh', 'hash-%05d', 'fam-%05d', 'pair-%05d', '%s', '%s', '[]', %d, %d, %d)",
					j, j, j/3, j, c.ID, user.ID, past, past, past))
			}
			execSQL(t, e, `INSERT INTO oauth_tokens (id, kind, token_hash, family_id, pair_id, client_id, user_id, scopes, auth_time, created_at, expires_at) VALUES `+strings.Join(vals, ", "))
		}
		if n := count(); n != 4+deadRows {
			t.Fatalf("tokens before the big purge = %d", n)
		}
		if got := metricValue(t, e, `hmid_oauth_table_rows{table="oauth_tokens"}`); e.Server.DB.Flavor == db.SQLite && got != float64(4+deadRows) {
			t.Fatalf("hmid_oauth_table_rows = %v, want %d", got, 4+deadRows)
		}
		purge()
		if n := count(); n != 2 {
			t.Fatalf("tokens after the big purge = %d, want the live pair", n)
		}
		if got := metricValue(t, e, `hmid_oauth_table_rows{table="oauth_tokens"}`); e.Server.DB.Flavor == db.SQLite && got != 2 {
			t.Fatalf("hmid_oauth_table_rows after purge = %v", got)
		}
		metricValue(t, e, `hmid_oauth_table_rows{table="oauth_codes"}`)
		metricValue(t, e, `hmid_oauth_table_rows{table="oauth_pending_authorizations"}`)
		if r := refreshReq(t, e, c, live["refresh_token"].(string)); r.Status != http.StatusOK {
			t.Fatalf("the live family stopped working: %d %s", r.Status, r.Body)
		}
	})
}

// metricValue reads one sample of /metrics by its name and labels.
func metricValue(t *testing.T, e *apptest.Env, series string) float64 {
	t.Helper()
	body := string(e.Do(t, apptest.Req{Method: "GET", Path: "/metrics", Token: e.SystemKey}).Body)
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no %s in /metrics", series)
	return 0
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
