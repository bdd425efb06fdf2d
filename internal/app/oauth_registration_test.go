package app_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"hmid/internal/apptest"
	"hmid/internal/config"
)

func registrationMode(mode string) apptest.Option {
	return func(c *config.Config) { c.DynamicRegistration = mode }
}

// mcpRegistration is the registration request an MCP client sends (the
// shape of MCP clients' and the MCP SDKs' requests): a public client with PKCE.
func mcpRegistration() map[string]any {
	return map[string]any{
		"client_name":                "Desk Assistant",
		"redirect_uris":              []string{"https://mcp-client.example/api/mcp/auth_callback"},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
		"scope":                      "openid profile offline_access",
		"software_id":                "ignored-by-hmid", // unknown members are ignored (RFC 7591 §2)
	}
}

func register(t *testing.T, e *apptest.Env, tok string, body map[string]any) *apptest.Resp {
	t.Helper()
	return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/register", Token: tok, Body: body})
}

func dynamicCount(t *testing.T, e *apptest.Env) int {
	t.Helper()
	var n int
	if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM oauth_clients WHERE registration_kind IS NOT NULL`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// dcrPKCEFlow runs the authorization code flow with PKCE for a public client
// whose redirect URI is redirect, and returns the token answer.
func dcrPKCEFlow(t *testing.T, e *apptest.Env, userTok, clientID, redirect, scope string) *apptest.Resp {
	t.Helper()
	verifier := strings.Repeat("v", 43)
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect}, "scope": {scope}, "state": {"st4te"},
		"code_challenge": {challengeOf(verifier)}, "code_challenge_method": {"S256"}}
	code := getCode(t, e, userTok, q)
	return tokenReq(t, e, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
		"client_id": {clientID}, "code_verifier": {verifier}}, nil)
}

// TestDynamicRegistrationOpen registers an MCP client in open mode, signs a
// person in with it, manages the registration with its registration access
// token (RFC 7592), refuses bad metadata with RFC 7591's codes, and expires
// open registrations unused for 30 days.
func TestDynamicRegistrationOpen(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "mcp_user"})
		disc := e.Call(t, "GET", "/.well-known/oauth-authorization-server", "", nil, http.StatusOK).JSON()
		if disc["registration_endpoint"] != e.URL+"/v1/oauth/register" {
			t.Fatalf("registration_endpoint %v", disc["registration_endpoint"])
		}

		r := register(t, e, "", mcpRegistration())
		if r.Status != http.StatusCreated || r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("register: %d %s", r.Status, r.Body)
		}
		reg := r.JSON()
		id, rat := reg["client_id"].(string), reg["registration_access_token"].(string)
		if _, has := reg["client_secret"]; has || !strings.HasPrefix(rat, "hm_rat_") || reg["registration_client_uri"] != e.URL+"/v1/oauth/register/"+id ||
			reg["token_endpoint_auth_method"] != "none" || reg["scope"] != "offline_access openid profile" || reg["client_name"] != "Desk Assistant" {
			t.Fatalf("registration answer %v", reg)
		}
		tok := dcrPKCEFlow(t, e, u.Token, id, "https://mcp-client.example/api/mcp/auth_callback", "openid offline_access")
		if tok.Status != http.StatusOK || tok.JSON()["refresh_token"] == nil {
			t.Fatalf("token: %d %s", tok.Status, tok.Body)
		}

		// The admin list marks it.
		list := e.Call(t, "GET", "/v1/oauth/clients/all?limit=100", e.SystemKey, nil, http.StatusOK).JSON()["data"].([]any)
		found := false
		for _, c := range list {
			if m := c.(map[string]any); m["id"] == id {
				found = m["dynamic_registration"] == "open" && m["is_first_party"] == false
			}
		}
		if !found {
			t.Fatalf("client %s not listed as registered dynamically: %v", id, list)
		}

		// RFC 7592: read, update, delete with the registration access token only.
		path := "/v1/oauth/register/" + id
		if got := e.Do(t, apptest.Req{Method: "GET", Path: path, Token: rat}); got.Status != http.StatusOK || got.JSON()["client_id"] != id {
			t.Fatalf("read: %d %s", got.Status, got.Body)
		}
		for _, bad := range []string{"", "hm_rat_wrong", e.SystemKey, u.Token} {
			if got := e.Do(t, apptest.Req{Method: "GET", Path: path, Token: bad}); got.Status != http.StatusUnauthorized || got.JSON()["error"] != "invalid_token" {
				t.Fatalf("read with %q: %d %s", bad, got.Status, got.Body)
			}
		}
		upd := mcpRegistration()
		upd["client_id"], upd["client_name"] = id, "Desk Assistant for desktops"
		if got := e.Do(t, apptest.Req{Method: "PUT", Path: path, Token: rat, Body: upd}); got.Status != http.StatusOK || got.JSON()["client_name"] != "Desk Assistant for desktops" {
			t.Fatalf("update: %d %s", got.Status, got.Body)
		}
		upd["token_endpoint_auth_method"] = "client_secret_basic" // public to confidential
		oauthErr(t, e.Do(t, apptest.Req{Method: "PUT", Path: path, Token: rat, Body: upd}), http.StatusBadRequest, "invalid_client_metadata")
		upd["token_endpoint_auth_method"], upd["redirect_uris"] = "none", []string{"javascript:alert(1)"}
		oauthErr(t, e.Do(t, apptest.Req{Method: "PUT", Path: path, Token: rat, Body: upd}), http.StatusBadRequest, "invalid_redirect_uri")
		if got := e.Do(t, apptest.Req{Method: "GET", Path: path, Token: rat}); got.JSON()["client_name"] != "Desk Assistant for desktops" {
			t.Fatalf("a refused update changed the registration: %s", got.Body)
		}

		// A confidential registration gets a secret that works.
		conf := register(t, e, "", map[string]any{"redirect_uris": []string{cb}, "client_name": "Web app"})
		if conf.Status != http.StatusCreated || !strings.HasPrefix(conf.JSON()["client_secret"].(string), "hm_sec_") || conf.JSON()["client_secret_expires_at"] != float64(0) {
			t.Fatalf("confidential: %d %s", conf.Status, conf.Body)
		}
		cc := testClient{ID: conf.JSON()["client_id"].(string), Secret: conf.JSON()["client_secret"].(string)}
		if r := exchange(t, e, cc, getCode(t, e, u.Token, authzParams(cc.ID))); r.Status != http.StatusOK {
			t.Fatalf("confidential flow: %d %s", r.Status, r.Body)
		}

		// Bad registrations change nothing.
		before := dynamicCount(t, e)
		for name, c := range map[string]struct {
			body map[string]any
			code string
		}{
			"no redirect":        {map[string]any{"client_name": "x"}, "invalid_redirect_uri"},
			"javascript":         {map[string]any{"redirect_uris": []string{"javascript:alert(1)"}}, "invalid_redirect_uri"},
			"fragment":           {map[string]any{"redirect_uris": []string{"https://a.example/cb#x"}}, "invalid_redirect_uri"},
			"implicit":           {map[string]any{"redirect_uris": []string{cb}, "response_types": []string{"token"}}, "invalid_client_metadata"},
			"client credentials": {map[string]any{"redirect_uris": []string{cb}, "grant_types": []string{"client_credentials"}}, "invalid_client_metadata"},
			"permission scope":   {map[string]any{"redirect_uris": []string{cb}, "scope": "openid devices:read"}, "invalid_client_metadata"},
			"auth method":        {map[string]any{"redirect_uris": []string{cb}, "token_endpoint_auth_method": "tls_client_auth"}, "invalid_client_metadata"},
			"jwt without keys":   {map[string]any{"redirect_uris": []string{cb}, "token_endpoint_auth_method": "private_key_jwt"}, "invalid_client_metadata"},
			"bad logo":           {map[string]any{"redirect_uris": []string{cb}, "logo_uri": "ftp://x"}, "invalid_client_metadata"},
			"not an object":      {nil, "invalid_client_metadata"},
		} {
			var body any = c.body
			if c.body == nil {
				body = "[1, 2]"
			}
			r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/register", Body: body, Header: map[string]string{"Content-Type": "application/json"}})
			if r.Status != http.StatusBadRequest || r.JSON()["error"] != c.code {
				t.Fatalf("%s: %d %s, want %s", name, r.Status, r.Body, c.code)
			}
		}
		if n := dynamicCount(t, e); n != before {
			t.Fatalf("refused registrations stored: %d, want %d", n, before)
		}

		// Delete through RFC 7592; the token then opens nothing.
		if got := e.Do(t, apptest.Req{Method: "DELETE", Path: path, Token: rat}); got.Status != http.StatusNoContent {
			t.Fatalf("delete: %d %s", got.Status, got.Body)
		}
		if got := e.Do(t, apptest.Req{Method: "GET", Path: path, Token: rat}); got.Status != http.StatusUnauthorized {
			t.Fatalf("read after delete: %d", got.Status)
		}

		// Expiry: an open registration with no token for 30 days goes; one used meanwhile stays.
		unused := register(t, e, "", mcpRegistration()).JSON()["client_id"].(string)
		e.Clock.Advance(29 * 24 * time.Hour)
		if r := exchange(t, e, cc, getCode(t, e, u.Token, authzParams(cc.ID))); r.Status != http.StatusOK {
			t.Fatalf("late use: %d %s", r.Status, r.Body)
		}
		e.Clock.Advance(2 * 24 * time.Hour)
		if err := e.Server.OAuth.Purge(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.Call(t, "GET", "/v1/oauth/clients/"+unused, e.SystemKey, nil, http.StatusNotFound)
		kept := data(t, e.Call(t, "GET", "/v1/oauth/clients/"+cc.ID, e.SystemKey, nil, http.StatusOK))
		if kept["last_used_at"] == nil {
			t.Fatalf("last use not recorded: %v", kept)
		}
	}, registrationMode("open"))
}

// TestDynamicRegistrationToken: in token mode a registration needs an
// initial access token, made by a super admin or a system key, which bounds
// the number of clients and their scopes; off, there is no endpoint.
func TestDynamicRegistrationToken(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "iat_user"})
		e.Call(t, "POST", "/v1/oauth/initial-access-tokens", u.Token, map[string]any{"name": "nope"}, http.StatusForbidden)
		iat := data(t, e.Call(t, "POST", "/v1/oauth/initial-access-tokens", e.SystemKey,
			map[string]any{"name": "MCP gateway", "max_clients": 1, "allowed_scopes": []string{"openid", "profile"}}, http.StatusCreated))
		value := iat["token"].(string)

		oauthErr(t, register(t, e, "", mcpRegistration()), http.StatusUnauthorized, "invalid_token")
		oauthErr(t, register(t, e, "hm_iat_unknown", mcpRegistration()), http.StatusUnauthorized, "invalid_token")
		// Scopes beyond the token's are refused and do not use up the token.
		oauthErr(t, register(t, e, value, mcpRegistration()), http.StatusBadRequest, "invalid_client_metadata")
		body := mcpRegistration()
		body["scope"], body["grant_types"] = "openid profile", []string{"authorization_code"}
		if r := register(t, e, value, body); r.Status != http.StatusCreated {
			t.Fatalf("register with the token: %d %s", r.Status, r.Body)
		}
		oauthErr(t, register(t, e, value, body), http.StatusUnauthorized, "invalid_token") // used up
		list := e.Call(t, "GET", "/v1/oauth/initial-access-tokens", e.SystemKey, nil, http.StatusOK).JSON()["data"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["clients_registered"] != float64(1) || list[0].(map[string]any)["token"] != nil {
			t.Fatalf("list %v", list)
		}
		e.Call(t, "DELETE", "/v1/oauth/initial-access-tokens/"+iat["id"].(string), e.SystemKey, nil, http.StatusNoContent)
		e.Call(t, "DELETE", "/v1/oauth/initial-access-tokens/9a1c6a8e-0000-4000-8000-000000000000", e.SystemKey, nil, http.StatusNotFound)
	}, registrationMode("token"))
}

// TestDynamicRegistrationOff: the default has no registration endpoint.
func TestDynamicRegistrationOff(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		if _, has := e.Call(t, "GET", "/.well-known/openid-configuration", "", nil, http.StatusOK).JSON()["registration_endpoint"]; has {
			t.Fatal("registration_endpoint listed while off")
		}
		if r := register(t, e, "", mcpRegistration()); r.Status != http.StatusNotFound {
			t.Fatalf("register while off: %d %s", r.Status, r.Body)
		}
	})
}

// TestDynamicRegistrationPrivateKeyJWT: an agent registers itself with its
// public keys (no secret is issued), authenticates with a signed assertion,
// and replaces its registration (RFC 7592) without naming the ID-token
// algorithm, which stays one it can use without a secret.
func TestDynamicRegistrationPrivateKeyJWT(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "agent_owner"})
		k := newJWTKey(t, "agent-1", jose.ES256)
		body := map[string]any{"client_name": "Build agent", "redirect_uris": []string{cb}, "token_endpoint_auth_method": "private_key_jwt",
			"jwks": jwks(k), "grant_types": []string{"authorization_code", "refresh_token"}, "scope": "openid offline_access"}
		r := register(t, e, "", body)
		if r.Status != http.StatusCreated {
			t.Fatalf("register: %d %s", r.Status, r.Body)
		}
		reg := r.JSON()
		id, rat := reg["client_id"].(string), reg["registration_access_token"].(string)
		if _, has := reg["client_secret"]; has || reg["id_token_signed_response_alg"] != "RS256" {
			t.Fatalf("registration %v", reg)
		}
		code := getCode(t, e, u.Token, authzParams(id, "scope", "openid offline_access"))
		if r := tokenReq(t, e, withAssertion(codeForm(code), assertion(t, e, k, id, nil)), nil); r.Status != http.StatusOK {
			t.Fatalf("exchange: %d %s", r.Status, r.Body)
		}
		body["client_id"], body["client_name"] = id, "Build agent 2"
		got := e.Do(t, apptest.Req{Method: "PUT", Path: "/v1/oauth/register/" + id, Token: rat, Body: body})
		if got.Status != http.StatusOK || got.JSON()["id_token_signed_response_alg"] != "RS256" || got.JSON()["client_name"] != "Build agent 2" {
			t.Fatalf("update: %d %s", got.Status, got.Body)
		}
	}, registrationMode("open"))
}
