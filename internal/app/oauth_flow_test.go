package app_test

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2"

	"hmid/internal/apptest"
)

// goClientFlow drives the authorization code flow with golang.org/x/oauth2
// as a real client: authorize (with the user's session), consent if asked,
// exchange, and returns the token.
func goClientFlow(t *testing.T, e *apptest.Env, conf *oauth2.Config, userTok string, opts ...oauth2.AuthCodeOption) *oauth2.Token {
	t.Helper()
	authURL := conf.AuthCodeURL("st4te", append([]oauth2.AuthCodeOption{oauth2.SetAuthURLParam("nonce", "n-0S6_WzA2Mj")}, opts...)...)
	path := strings.TrimPrefix(authURL, e.URL)
	r := e.Do(t, apptest.Req{Method: "GET", Path: path, Token: userTok})
	var u *url.URL
	if r.Status == http.StatusOK {
		u = consent(t, e, userTok, r.JSON()["pending_authorization_id"].(string), true)
	} else {
		u = location(t, r)
	}
	q := u.Query()
	if q.Get("state") != "st4te" || q.Get("iss") != e.URL || q.Get("code") == "" {
		t.Fatalf("callback %s lacks code, state or iss", u)
	}
	return exchangeWith(t, conf, q.Get("code"), opts)
}

func exchangeWith(t *testing.T, conf *oauth2.Config, code string, opts []oauth2.AuthCodeOption) *oauth2.Token {
	t.Helper()
	tok, err := conf.Exchange(context.Background(), code, opts...)
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	return tok
}

func verifyIDToken(t *testing.T, e *apptest.Env, raw, clientID string, key func(*jwt.Token) (any, error), alg string) jwt.MapClaims {
	t.Helper()
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, key, jwt.WithValidMethods([]string{alg}), jwt.WithIssuer(e.URL),
		jwt.WithAudience(clientID), jwt.WithTimeFunc(e.Clock.Now), jwt.WithExpirationRequired(), jwt.WithIssuedAt())
	if err != nil {
		t.Fatalf("ID token: %v", err)
	}
	return claims
}

func TestOAuthConfidentialFlowWithGoClient(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		dev := e.NewUser(t, apptest.UserSpec{Roles: []string{"role_developer"}})
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, dev.Token, map[string]any{"allowed_scopes": []string{"openid", "profile", "email", "roles", "permissions", "offline_access"}})
		for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInParams, oauth2.AuthStyleInHeader} {
			conf := &oauth2.Config{
				ClientID: c.ID, ClientSecret: c.Secret, RedirectURL: cb,
				Scopes:   []string{"openid", "profile", "email", "roles"},
				Endpoint: oauth2.Endpoint{AuthURL: e.URL + "/v1/oauth/authorize", TokenURL: e.URL + "/v1/oauth/token", AuthStyle: style},
			}
			tok := goClientFlow(t, e, conf, user.Token)
			if !strings.HasPrefix(tok.AccessToken, "hm_at_") || !strings.HasPrefix(tok.RefreshToken, "hm_rt_") || tok.TokenType != "Bearer" {
				t.Fatalf("token %+v", tok)
			}
			if exp := tok.Extra("expires_in"); exp != float64(3600) {
				t.Fatalf("expires_in = %v", exp)
			}
			if sc := tok.Extra("scope"); sc != "email openid profile roles" {
				t.Fatalf("scope = %v", sc)
			}
			idt, _ := tok.Extra("id_token").(string)
			claims := verifyIDToken(t, e, idt, c.ID, func(*jwt.Token) (any, error) { return []byte(c.Secret), nil }, "HS256")
			if claims["sub"] != user.ID || claims["nonce"] != "n-0S6_WzA2Mj" || claims["email"] != user.Email || claims["email_verified"] != true ||
				claims["name"] != user.Username || claims["auth_time"] != float64(apptest.Start.Unix()) || claims["permissions"] != nil {
				t.Fatalf("claims %v", claims)
			}
			if roles, _ := claims["roles"].([]any); len(roles) != 1 || roles[0] != "User" {
				t.Fatalf("roles claim %v", claims["roles"])
			}
			if exp, iat := claims["exp"].(float64), claims["iat"].(float64); exp-iat != 3600 {
				t.Fatalf("exp-iat = %v", exp-iat)
			}
			// UserInfo with the access token, and the refresh through the client's token source.
			ui := e.Call(t, "GET", "/v1/oauth/userinfo", tok.AccessToken, nil, http.StatusOK).JSON()
			if ui["sub"] != user.ID || ui["email"] != user.Email || ui["is_super_admin"] != false {
				t.Fatalf("userinfo %v", ui)
			}
			old := *tok
			tok.Expiry = e.Clock.Now().Add(-1)
			ts := conf.TokenSource(context.Background(), &oauth2.Token{RefreshToken: tok.RefreshToken})
			fresh, err := ts.Token()
			if err != nil {
				t.Fatalf("refresh: %v", err)
			}
			if fresh.AccessToken == old.AccessToken || fresh.RefreshToken == old.RefreshToken || fresh.Extra("id_token") == nil {
				t.Fatalf("refresh did not rotate: %+v", fresh)
			}
			// The spent refresh token's access token is revoked with it (spec 1, states).
			e.Call(t, "GET", "/v1/oauth/userinfo", old.AccessToken, nil, http.StatusUnauthorized)
			e.Call(t, "GET", "/v1/oauth/userinfo", fresh.AccessToken, nil, http.StatusOK)
		}
		if n := auditCount(t, e, "consent_granted", c.ID); n != 1 {
			t.Fatalf("consent_granted events = %d (the second flow reuses the consent)", n)
		}
	})
}

func TestOAuthPublicClientPKCEWithGoClient(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, map[string]any{"client_type": "public", "redirect_uris": []string{cb, "com.example.app://callback"}})
		if c.Secret != "" {
			t.Fatalf("public client got a secret")
		}
		conf := &oauth2.Config{
			ClientID: c.ID, RedirectURL: cb, Scopes: []string{"openid", "profile"},
			Endpoint: oauth2.Endpoint{AuthURL: e.URL + "/v1/oauth/authorize", TokenURL: e.URL + "/v1/oauth/token", AuthStyle: oauth2.AuthStyleInParams},
		}
		verifier := oauth2.GenerateVerifier()
		code := func() string {
			u, _ := url.Parse(conf.AuthCodeURL("st4te", oauth2.S256ChallengeOption(verifier)))
			return getCode(t, e, user.Token, u.Query())
		}
		tok, err := conf.Exchange(context.Background(), code(), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("exchange: %v", err)
		}
		idt, _ := tok.Extra("id_token").(string)
		claims := verifyIDToken(t, e, idt, c.ID, func(*jwt.Token) (any, error) { return e.Server.OAuth.PublicClientKey(c.ID), nil }, "HS256")
		if claims["sub"] != user.ID || claims["email"] != nil {
			t.Fatalf("claims %v", claims)
		}
		// The same flow without the verifier fails: PKCE is bound to the code.
		if _, err := conf.Exchange(context.Background(), code()); err == nil || !strings.Contains(err.Error(), "invalid_grant") {
			t.Fatalf("exchange without verifier: %v", err)
		}
		// A public client may not authenticate with a secret.
		r := exchange(t, e, testClient{ID: c.ID, Secret: "hm_sec_x"}, code(), "code_verifier", verifier)
		oauthErr(t, r, http.StatusUnauthorized, "invalid_client")
	})
}

func TestOAuthRS256IDTokenWithJWKS(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, map[string]any{"id_token_signed_response_alg": "RS256"})
		conf := &oauth2.Config{
			ClientID: c.ID, ClientSecret: c.Secret, RedirectURL: cb, Scopes: []string{"openid", "email"},
			Endpoint: oauth2.Endpoint{AuthURL: e.URL + "/v1/oauth/authorize", TokenURL: e.URL + "/v1/oauth/token", AuthStyle: oauth2.AuthStyleInHeader},
		}
		tok := goClientFlow(t, e, conf, user.Token)
		// The set holds one key per algorithm, RS256 first.
		keys := e.Call(t, "GET", "/v1/oauth/jwks", "", nil, http.StatusOK).JSON()["keys"].([]any)
		if len(keys) != 2 || keys[0].(map[string]any)["alg"] != "RS256" || keys[1].(map[string]any)["alg"] != "ES256" {
			t.Fatalf("keys = %v", keys)
		}
		k := keys[0].(map[string]any)
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(b64url(t, k["n"].(string))), E: int(new(big.Int).SetBytes(b64url(t, k["e"].(string))).Int64())}
		claims := verifyIDToken(t, e, tok.Extra("id_token").(string), c.ID, func(tk *jwt.Token) (any, error) {
			if tk.Header["kid"] != k["kid"] {
				t.Fatalf("kid %v, want %v", tk.Header["kid"], k["kid"])
			}
			return pub, nil
		}, "RS256")
		if claims["email"] != user.Email {
			t.Fatalf("claims %v", claims)
		}
		// The key is stored sealed, not in clear.
		var sealed string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT private_key FROM oauth_signing_keys`).Scan(&sealed); err != nil || !strings.HasPrefix(sealed, "v1.") {
			t.Fatalf("stored key %.10q, %v", sealed, err)
		}
	})
}

func b64url(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOAuthDiscovery(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		for _, p := range []string{"/.well-known/openid-configuration", "/v1/.well-known/openid-configuration"} {
			m := e.Call(t, "GET", p, "", nil, http.StatusOK).JSON()
			want := map[string]any{
				"issuer":                 e.URL,
				"authorization_endpoint": e.URL + "/v1/oauth/authorize",
				"token_endpoint":         e.URL + "/v1/oauth/token",
				"userinfo_endpoint":      e.URL + "/v1/oauth/userinfo",
				"revocation_endpoint":    e.URL + "/v1/oauth/revoke",
				"jwks_uri":               e.URL + "/v1/oauth/jwks",
				"authorization_response_iss_parameter_supported": true,
				"request_parameter_supported":                    false,
				"request_uri_parameter_supported":                false,
			}
			for k, v := range want {
				if m[k] != v {
					t.Errorf("%s %s = %v, want %v", p, k, m[k], v)
				}
			}
			lists := map[string]string{
				"scopes_supported":                           "openid profile email roles permissions offline_access",
				"response_types_supported":                   "code",
				"response_modes_supported":                   "query",
				"grant_types_supported":                      "authorization_code refresh_token client_credentials urn:ietf:params:oauth:grant-type:device_code",
				"token_endpoint_auth_methods_supported":      "client_secret_post client_secret_basic private_key_jwt none",
				"revocation_endpoint_auth_methods_supported": "client_secret_post client_secret_basic private_key_jwt none",
				"code_challenge_methods_supported":           "S256",
				"id_token_signing_alg_values_supported":      "HS256 RS256 ES256",
				"subject_types_supported":                    "public",
			}
			for k, v := range lists {
				var got []string
				for _, x := range m[k].([]any) {
					got = append(got, x.(string))
				}
				if strings.Join(got, " ") != v {
					t.Errorf("%s %s = %v, want %s", p, k, got, v)
				}
			}
			if claims, _ := m["claims_supported"].([]any); len(claims) < 10 {
				t.Errorf("claims_supported = %v", m["claims_supported"])
			}
		}
	})
}
