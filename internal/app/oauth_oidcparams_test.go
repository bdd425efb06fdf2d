package app_test

import (
	"context"
	"crypto/rsa"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"hmid/internal/apptest"
	"hmid/internal/db"
)

// rs256Key returns the key of hmid's JWKS for verifying RS256 ID tokens.
func rs256Key(t *testing.T, e *apptest.Env) func(*jwt.Token) (any, error) {
	t.Helper()
	keys := e.Call(t, "GET", "/v1/oauth/jwks", "", nil, http.StatusOK).JSON()["keys"].([]any)
	k := keys[0].(map[string]any)
	pub := &rsa.PublicKey{N: new(big.Int).SetBytes(b64url(t, k["n"].(string))), E: int(new(big.Int).SetBytes(b64url(t, k["e"].(string))).Int64())}
	return func(*jwt.Token) (any, error) { return pub, nil }
}

// idToken runs the flow for c (consenting if asked) and returns the verified
// RS256 ID token's claims, the raw token and the whole token answer.
func idToken(t *testing.T, e *apptest.Env, userTok string, c testClient, q url.Values) (jwt.MapClaims, string, map[string]any) {
	t.Helper()
	tr := tokens(t, e, userTok, c, q)
	raw, _ := tr["id_token"].(string)
	return verifyIDToken(t, e, raw, c.ID, rs256Key(t, e), "RS256"), raw, tr
}

// setAMR sets how the user authenticated in session sessionID.
func setAMR(t *testing.T, e *apptest.Env, sessionID string, amr ...string) {
	t.Helper()
	if _, err := e.Server.DB.ExecContext(context.Background(), `UPDATE sessions SET amr = $1 WHERE id = $2`, db.JSON(amr), sessionID); err != nil {
		t.Fatal(err)
	}
	// The resolver caches the session with its amr (hmid never changes a
	// session's amr); a change behind its back must invalidate the cache.
	if err := e.Server.Epoch.Bump(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// toLogin asserts a 302 to the login page and returns the return_to query.
func toLogin(t *testing.T, r *apptest.Resp) url.Values {
	t.Helper()
	u := location(t, r)
	if u.Path != "/login" {
		t.Fatalf("redirect %s, want the login page", u)
	}
	back, err := url.Parse(u.Query().Get("return_to"))
	if err != nil {
		t.Fatal(err)
	}
	return back.Query()
}

// codeOf asserts a 302 to the client with a code.
func codeOf(t *testing.T, r *apptest.Resp) string {
	t.Helper()
	u := location(t, r)
	if u.Query().Get("code") == "" || !strings.HasPrefix(u.String(), cb+"?") {
		t.Fatalf("redirect %s, want a code", u)
	}
	return u.Query().Get("code")
}

func rsClient(t *testing.T, e *apptest.Env, tok string, extra map[string]any) testClient {
	t.Helper()
	body := map[string]any{"id_token_signed_response_alg": "RS256", "allowed_scopes": []string{"openid", "profile", "email", "roles", "offline_access"}}
	for k, v := range extra {
		body[k] = v
	}
	return mkClient(t, e, tok, body)
}

func TestOIDCPromptValues(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := rsClient(t, e, user.Token, nil)
		getCode(t, e, user.Token, authzParams(c.ID))
		// Core §3.1.2.1: none with any other value is invalid_request; unknown values too.
		for _, p := range []string{"none login", "none consent", "select_account none", "bogus"} {
			redirectError(t, e, authorize(t, e, user.Token, authzParams(c.ID, "prompt", p), nil), "invalid_request")
		}
		// prompt=none with a session and consent: a code, no page.
		codeOf(t, authorize(t, e, user.Token, authzParams(c.ID, "prompt", "none"), nil))
		// prompt=consent asks again although the consent covers the scopes.
		if r := authorize(t, e, user.Token, authzParams(c.ID, "prompt", "consent"), nil); r.Status != http.StatusOK || r.JSON()["consent_required"] != true {
			t.Fatalf("prompt=consent: %d %s", r.Status, r.Body)
		}
		// prompt=select_account: the login page even with a session (one
		// account per browser: choosing one is signing in), then no loop.
		back := toLogin(t, authorize(t, e, user.Token, authzParams(c.ID, "prompt", "select_account"), nil))
		if back.Get("prompt") != "" || back.Get("hmid_login_after") == "" {
			t.Fatalf("return_to %v", back)
		}
		toLogin(t, authorize(t, e, user.Token, back, nil))
		e.Clock.Advance(time.Second)
		fresh, _ := e.NewSession(t, user.ID)
		codeOf(t, authorize(t, e, fresh, back, nil))
		// select_account with consent keeps consent on the way back.
		back = toLogin(t, authorize(t, e, user.Token, authzParams(c.ID, "prompt", "select_account consent"), nil))
		if back.Get("prompt") != "consent" {
			t.Fatalf("return_to prompt %q, want consent", back.Get("prompt"))
		}
		// prompt=none without a session: login_required to the redirect URI, never a page.
		redirectError(t, e, authorize(t, e, "", authzParams(c.ID, "prompt", "none"), nil), "login_required")
	})
}

func TestOIDCMaxAgeAndAuthTime(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := rsClient(t, e, user.Token, nil)
		authAt := e.Clock.Now()
		e.Clock.Advance(10 * time.Minute)
		// auth_time is when the user logged in, whatever max_age asked.
		claims, _, tr := idToken(t, e, user.Token, c, authzParams(c.ID, "max_age", "3600"))
		if int64(claims["auth_time"].(float64)) != authAt.Unix() {
			t.Fatalf("auth_time %v, want %d", claims["auth_time"], authAt.Unix())
		}
		// max_age=0 is prompt=login: the login page, then the fresh session passes.
		back := toLogin(t, authorize(t, e, user.Token, authzParams(c.ID, "max_age", "0"), nil))
		if back.Get("max_age") != "" {
			t.Fatalf("return_to still demands max_age=0: %v", back)
		}
		toLogin(t, authorize(t, e, user.Token, back, nil))
		e.Clock.Advance(time.Second)
		freshAt := e.Clock.Now()
		fresh, _ := e.NewSession(t, user.ID)
		codeOf(t, authorize(t, e, fresh, back, nil))
		// max_age=N: older sessions log in again (login_required with prompt=none).
		e.Clock.Advance(2 * time.Second)
		toLogin(t, authorize(t, e, fresh, authzParams(c.ID, "max_age", "1"), nil))
		redirectError(t, e, authorize(t, e, fresh, authzParams(c.ID, "max_age", "1", "prompt", "none"), nil), "login_required")
		claims, _, _ = idToken(t, e, fresh, c, authzParams(c.ID, "max_age", "10000"))
		if int64(claims["auth_time"].(float64)) != freshAt.Unix() {
			t.Fatalf("auth_time %v, want %d", claims["auth_time"], freshAt.Unix())
		}
		redirectError(t, e, authorize(t, e, fresh, authzParams(c.ID, "max_age", "-1"), nil), "invalid_request")
		// A refreshed ID token keeps the original auth_time.
		e.Clock.Advance(time.Hour)
		r := refreshReq(t, e, c, tr["refresh_token"].(string))
		if r.Status != http.StatusOK {
			t.Fatalf("refresh: %d %s", r.Status, r.Body)
		}
		rc := verifyIDToken(t, e, r.JSON()["id_token"].(string), c.ID, rs256Key(t, e), "RS256")
		if int64(rc["auth_time"].(float64)) != authAt.Unix() {
			t.Fatalf("refreshed auth_time %v, want %d", rc["auth_time"], authAt.Unix())
		}
	})
}

func TestOIDCIDTokenHint(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ann := e.NewUser(t, apptest.UserSpec{})
		bob := e.NewUser(t, apptest.UserSpec{})
		c := rsClient(t, e, ann.Token, nil)
		_, hint, _ := idToken(t, e, ann.Token, c, authzParams(c.ID))
		getCode(t, e, bob.Token, authzParams(c.ID))
		// The hint names the session's user: a code, also once expired.
		e.Clock.Advance(3 * time.Hour)
		codeOf(t, authorize(t, e, ann.Token, authzParams(c.ID, "id_token_hint", hint, "prompt", "none"), nil))
		// Another user's session: never a code for bob. prompt=none: login_required.
		redirectError(t, e, authorize(t, e, bob.Token, authzParams(c.ID, "id_token_hint", hint, "prompt", "none"), nil), "login_required")
		back := toLogin(t, authorize(t, e, bob.Token, authzParams(c.ID, "id_token_hint", hint), nil))
		// After logging in (as anyone: the user chose) the flow proceeds, no loop.
		e.Clock.Advance(time.Second)
		annNew, _ := e.NewSession(t, ann.ID)
		codeOf(t, authorize(t, e, annNew, back, nil))
		// Garbage, a tampered signature, another client's or issuer's hint: invalid_request.
		parts := strings.Split(hint, ".")
		other := rsClient(t, e, ann.Token, nil)
		_, otherHint, _ := idToken(t, e, ann.Token, other, authzParams(other.ID))
		none := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"iss": e.URL, "aud": c.ID, "sub": ann.ID})
		unsigned, _ := none.SignedString(jwt.UnsafeAllowNoneSignatureType)
		foreign, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": "https://evil.example", "aud": c.ID, "sub": ann.ID}).SignedString([]byte("k"))
		for name, bad := range map[string]string{
			"garbage":      "not-a-jwt",
			"tampered":     parts[0] + "." + parts[1] + "." + strings.Repeat("A", len(parts[2])),
			"other client": otherHint,
			"alg none":     unsigned,
			"other issuer": foreign,
		} {
			r := authorize(t, e, ann.Token, authzParams(c.ID, "id_token_hint", bad), nil)
			if q := location(t, r).Query(); q.Get("error") != "invalid_request" || q.Get("state") != "st4te" || q.Get("iss") != e.URL {
				t.Fatalf("%s hint: %s", name, location(t, r))
			}
		}

		// HS256 confidential client: the secret is stored hashed, so the hint
		// is read by its claims (iss, aud, sub) and still steers the login.
		hs := mkClient(t, e, ann.Token, nil)
		tr := tokens(t, e, ann.Token, hs, authzParams(hs.ID))
		hsHint := tr["id_token"].(string)
		codeOf(t, authorize(t, e, ann.Token, authzParams(hs.ID, "id_token_hint", hsHint, "prompt", "none"), nil))
		getCode(t, e, bob.Token, authzParams(hs.ID))
		redirectError(t, e, authorize(t, e, bob.Token, authzParams(hs.ID, "id_token_hint", hsHint, "prompt", "none"), nil), "login_required")
	})
}

func TestOIDCClaimsParameter(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := rsClient(t, e, user.Token, map[string]any{"allowed_scopes": []string{"openid", "profile", "email"}})
		for _, bad := range []string{`{`, `[]`, `"x"`, `{"userinfo":[]}`, `{"id_token":{"name":true}}`, `{"userinfo":{"name":{"essential":"yes"}}}`} {
			redirectError(t, e, authorize(t, e, user.Token, authzParams(c.ID, "claims", bad), nil), "invalid_request")
		}
		// name essential in UserInfo with scope openid only: consent asks for
		// profile (the claim's scope), then UserInfo has name, the ID token not.
		q := authzParams(c.ID, "scope", "openid", "claims", `{"userinfo":{"name":{"essential":true},"phone_number":null,"roles":null},"id_token":{"email":null,"acr":null}}`)
		r := authorize(t, e, user.Token, q, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("want consent, got %d %s", r.Status, r.Body)
		}
		var names []string
		for _, s := range r.JSON()["requested_scopes"].([]any) {
			names = append(names, s.(map[string]any)["name"].(string))
		}
		if strings.Join(names, " ") != "email openid profile" {
			t.Fatalf("consent asks for %v", names)
		}
		code := consent(t, e, user.Token, r.JSON()["pending_authorization_id"].(string), true).Query().Get("code")
		tr := exchange(t, e, c, code).JSON()
		if tr["scope"] != "openid" {
			t.Fatalf("granted scope %v", tr["scope"])
		}
		idc := verifyIDToken(t, e, tr["id_token"].(string), c.ID, rs256Key(t, e), "RS256")
		if idc["email"] != user.Email || idc["name"] != nil || idc["acr"] != "1" {
			t.Fatalf("ID token claims %v", idc)
		}
		ui := e.Call(t, "GET", "/v1/oauth/userinfo", tr["access_token"].(string), nil, http.StatusOK).JSON()
		if ui["name"] == nil || ui["email"] != nil || ui["roles"] != nil || ui["phone_number"] != nil {
			t.Fatalf("userinfo %v", ui)
		}
		// The refreshed ID token answers the same claims request.
		rr := refreshReq(t, e, c, tr["refresh_token"].(string)).JSON()
		if rc := verifyIDToken(t, e, rr["id_token"].(string), c.ID, rs256Key(t, e), "RS256"); rc["email"] != user.Email {
			t.Fatalf("refreshed ID token %v", rc)
		}
		// The consent now covers profile and email: no second question.
		codeOf(t, authorize(t, e, user.Token, q, nil))
		// sub asked for by value must be the session's user.
		other := e.NewUser(t, apptest.UserSpec{})
		redirectError(t, e, authorize(t, e, user.Token, authzParams(c.ID, "prompt", "none", "claims", `{"id_token":{"sub":{"value":"`+other.ID+`"}}}`), nil), "login_required")
		codeOf(t, authorize(t, e, user.Token, authzParams(c.ID, "claims", `{"id_token":{"sub":{"value":"`+user.ID+`"}}}`), nil))
	})
}

func TestOIDCACRAndAMR(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := rsClient(t, e, user.Token, nil)
		setAMR(t, e, user.SessionID, "pwd")
		// acr_values are voluntary: accepted, the acr says what happened.
		claims, _, _ := idToken(t, e, user.Token, c, authzParams(c.ID, "acr_values", "2 1"))
		if claims["acr"] != "1" || strings.Join(toStrings(claims["amr"]), " ") != "pwd" {
			t.Fatalf("acr %v amr %v", claims["acr"], claims["amr"])
		}
		essential := authzParams(c.ID, "claims", `{"id_token":{"acr":{"essential":true,"values":["2"]}}}`)
		// An essential acr "2" with a one-factor session: interaction_required
		// with prompt=none, else a login, and the same session never passes.
		q := url.Values{}
		for k, v := range essential {
			q[k] = v
		}
		q.Set("prompt", "none")
		redirectError(t, e, authorize(t, e, user.Token, q, nil), "interaction_required")
		back := toLogin(t, authorize(t, e, user.Token, essential, nil))
		e.Clock.Advance(time.Second)
		// Logged in again with a second factor: acr 2, amr pwd otp.
		mfaTok, mfaID := e.NewSession(t, user.ID)
		setAMR(t, e, mfaID, "pwd", "otp")
		code := codeOf(t, authorize(t, e, mfaTok, back, nil))
		idc := verifyIDToken(t, e, exchange(t, e, c, code).JSON()["id_token"].(string), c.ID, rs256Key(t, e), "RS256")
		if idc["acr"] != "2" || strings.Join(toStrings(idc["amr"]), " ") != "pwd otp" {
			t.Fatalf("acr %v amr %v", idc["acr"], idc["amr"])
		}
		// Logged in again but still with one factor: access_denied, no loop.
		e.Clock.Advance(time.Second)
		oneTok, oneID := e.NewSession(t, user.ID)
		setAMR(t, e, oneID, "pwd")
		redirectError(t, e, authorize(t, e, oneTok, back, nil), "access_denied")
	})
}

func toStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, x := range list {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func TestOIDCDisplayLocalesAndRequestObjects(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := rsClient(t, e, user.Token, nil)
		getCode(t, e, user.Token, authzParams(c.ID))
		for _, d := range []string{"page", "popup", "touch", "wap"} {
			codeOf(t, authorize(t, e, user.Token, authzParams(c.ID, "display", d), nil))
		}
		redirectError(t, e, authorize(t, e, user.Token, authzParams(c.ID, "display", "hologram"), nil), "invalid_request")
		// claims_locales and login_hint are accepted; acr_values too.
		codeOf(t, authorize(t, e, user.Token, authzParams(c.ID, "claims_locales", "de en", "login_hint", user.Email, "acr_values", "1"), nil))
		// OpenID Connect Core §6: request objects are not supported.
		redirectError(t, e, authorize(t, e, user.Token, authzParams(c.ID, "request", "eyJhbGciOiJub25lIn0.e30."), nil), "request_not_supported")
		redirectError(t, e, authorize(t, e, user.Token, authzParams(c.ID, "request_uri", "https://app.example/r"), nil), "request_uri_not_supported")

		// ui_locales reaches the consent page, and the page speaks it.
		r := authorize(t, e, user.Token, authzParams(c.ID, "prompt", "consent", "ui_locales", "fr de-CH"), map[string]string{"Accept": "text/html"})
		u := location(t, r)
		if u.Path != "/consent" || u.Query().Get("ui_locales") != "de" {
			t.Fatalf("consent redirect %s", u)
		}
		page := e.Do(t, apptest.Req{Method: "GET", Path: u.RequestURI(), Header: map[string]string{"Cookie": "hmid_session=" + user.Token, "Accept-Language": "en"}})
		if page.Status != http.StatusOK || !strings.Contains(string(page.Body), `lang="de"`) {
			t.Fatalf("consent page %d, lang de missing", page.Status)
		}
		// Without a session: the login page in German with the email prefilled.
		back := toLogin(t, authorize(t, e, "", authzParams(c.ID, "ui_locales", "de", "login_hint", "ann@example.com"), nil))
		login := e.Do(t, apptest.Req{Method: "GET", Path: "/login?return_to=" + url.QueryEscape(e.URL+"/v1/oauth/authorize?"+back.Encode()), Header: map[string]string{"Accept-Language": "en"}})
		body := string(login.Body)
		if login.Status != http.StatusOK || !strings.Contains(body, `lang="de"`) || !strings.Contains(body, `value="ann@example.com"`) {
			t.Fatalf("login page %d: lang de or login_hint missing", login.Status)
		}
	})
}

func TestOIDCProfileClaimsAndDiscovery(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		if _, err := e.Server.DB.ExecContext(context.Background(), `UPDATE users SET preferred_locale = 'de-DE' WHERE id = $1`, user.ID); err != nil {
			t.Fatal(err)
		}
		c := rsClient(t, e, user.Token, nil)
		claims, _, tr := idToken(t, e, user.Token, c, authzParams(c.ID))
		ui := e.Call(t, "GET", "/v1/oauth/userinfo", tr["access_token"].(string), nil, http.StatusOK).JSON()
		for where, m := range map[string]map[string]any{"ID token": claims, "UserInfo": ui} {
			if m["preferred_username"] != user.Username || m["locale"] != "de-DE" || m["updated_at"] == nil {
				t.Fatalf("%s profile claims %v", where, m)
			}
		}
		d := e.Call(t, "GET", "/.well-known/openid-configuration", "", nil, http.StatusOK).JSON()
		if d["claims_parameter_supported"] != true || strings.Join(toStrings(d["acr_values_supported"]), " ") != "1 2" {
			t.Fatalf("discovery %v", d)
		}
		supported := strings.Join(toStrings(d["claims_supported"]), " ")
		for _, want := range []string{"preferred_username", "locale", "updated_at", "acr", "amr", "auth_time"} {
			if !strings.Contains(" "+supported+" ", " "+want+" ") {
				t.Fatalf("claims_supported lacks %s: %s", want, supported)
			}
		}
	})
}

// TestOIDCLoginRecordsAMR: a real login stores how the user authenticated,
// and the ID token's acr and amr follow (RFC 8176 values).
func TestOIDCLoginRecordsAMR(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		c := rsClient(t, e, u.Token, nil)
		login := func(body map[string]any) string {
			t.Helper()
			r := e.Call(t, "POST", "/v1/auth/login", "", body, http.StatusOK).JSON()
			tok, _ := r["session_token"].(string)
			return tok
		}
		pwd := login(map[string]any{"email": u.Email, "password": u.Password})
		claims, _, _ := idToken(t, e, pwd, c, authzParams(c.ID))
		if claims["acr"] != "1" || strings.Join(toStrings(claims["amr"]), " ") != "pwd" {
			t.Fatalf("password login: acr %v amr %v", claims["acr"], claims["amr"])
		}
		secret, _ := tfEnable(t, e, u)
		e.Advance(t, time.Minute)
		if tok := login(map[string]any{"email": u.Email, "password": u.Password}); tok != "" {
			t.Fatal("a session without the second factor")
		}
		otp := login(map[string]any{"email": u.Email, "password": u.Password, "code": tfCode(t, secret, e.Clock.Now())})
		claims, _, _ = idToken(t, e, otp, c, authzParams(c.ID))
		if claims["acr"] != "2" || strings.Join(toStrings(claims["amr"]), " ") != "pwd otp" {
			t.Fatalf("two-factor login: acr %v amr %v", claims["acr"], claims["amr"])
		}
	})
}
