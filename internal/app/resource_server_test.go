package app_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/oauth"
)

// TestProtectedResourceMetadata: hmid's API publishes its RFC 9728
// metadata, and every 401 of the API names it in WWW-Authenticate (§5.1),
// with error="invalid_token" for a token that is bad (RFC 6750 §3.1) and no
// error code for a request without one.
func TestProtectedResourceMetadata(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		prm := e.URL + "/.well-known/oauth-protected-resource/v1"
		md := e.Call(t, "GET", "/.well-known/oauth-protected-resource/v1", "", nil, http.StatusOK).JSON()
		if md["resource"] != e.URL+"/v1" || !sameStrings(md["authorization_servers"], e.URL) || !sameStrings(md["bearer_methods_supported"], "header") {
			t.Fatalf("metadata %v", md)
		}
		if sc, _ := md["scopes_supported"].([]any); len(sc) == 0 {
			t.Fatalf("scopes_supported %v", md["scopes_supported"])
		}
		// Any origin may read it: its preflight, and HEAD without a body.
		pre := e.Do(t, apptest.Req{Method: "OPTIONS", Path: "/.well-known/oauth-protected-resource/v1", Header: map[string]string{
			"Origin": "https://mcp-host.example", "Access-Control-Request-Method": "GET"}})
		if pre.Status != http.StatusNoContent || pre.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("preflight: %d %v", pre.Status, pre.Header)
		}
		if h := e.Do(t, apptest.Req{Method: "HEAD", Path: "/.well-known/oauth-protected-resource/v1"}); h.Status != http.StatusOK || len(h.Body) != 0 {
			t.Fatalf("HEAD: %d %q", h.Status, h.Body)
		}
		// The issuer's metadata names the same issuer the document points to.
		if as := e.Call(t, "GET", "/.well-known/oauth-authorization-server", "", nil, http.StatusOK).JSON(); as["issuer"] != e.URL {
			t.Fatalf("authorization server metadata issuer %v", as["issuer"])
		}
		for _, c := range []struct {
			name, token, header, wantErr string
		}{
			{"no credentials", "", "", ""},
			{"unknown token", "hm_at_" + strings.Repeat("x", 43), "", `error="invalid_token"`},
			{"malformed header", "", "Basic Zm9vOmJhcg==", `error="invalid_request"`},
		} {
			q := apptest.Req{Method: "GET", Path: "/v1/users/me", Token: c.token}
			if c.header != "" {
				q.Header = map[string]string{"Authorization": c.header}
			}
			r := e.Do(t, q)
			www := r.Header.Get("WWW-Authenticate")
			if r.Status != http.StatusUnauthorized || !strings.HasPrefix(www, "Bearer ") || !strings.Contains(www, `resource_metadata="`+prm+`"`) {
				t.Fatalf("%s: %d WWW-Authenticate %q", c.name, r.Status, www)
			}
			if (c.wantErr == "") == strings.Contains(www, "error=") || (c.wantErr != "" && !strings.Contains(www, c.wantErr)) {
				t.Fatalf("%s: WWW-Authenticate %q, want %q", c.name, www, c.wantErr)
			}
		}
	})
}

// sameStrings reports whether v, a decoded JSON array, holds exactly want.
func sameStrings(v any, want ...string) bool {
	l, _ := v.([]any)
	if len(l) != len(want) {
		return false
	}
	for i, w := range want {
		if l[i] != w {
			return false
		}
	}
	return true
}

// TestClientCredentialsResource: resource works on the client credentials
// grant (RFC 8707 §2) as on the others: the token's audience in
// introspection, invalid_target for one the client may not ask for (nothing
// stored), and hmid's API takes a token only when its audience names the
// API or nothing; a token lacking a permission gets insufficient_scope with
// the scope it needs (RFC 6750 §3.1).
func TestClientCredentialsResource(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		api := e.URL + "/v1"
		admin := e.Admin(t)
		c := mkClient(t, e, admin.Token, map[string]any{"grant_types": []string{"client_credentials"},
			"allowed_scopes": []string{"devices:read"}, "resources": []string{api, resFiles}})
		token := func(resources ...string) *apptest.Resp {
			t.Helper()
			f := url.Values{"grant_type": {"client_credentials"}, "client_id": {c.ID}, "client_secret": {c.Secret}, "resource": resources}
			return tokenPost(t, e, "/v1/oauth/token", f)
		}
		before := count(t, e, `SELECT COUNT(*) FROM oauth_client_tokens WHERE client_id = $1`, c.ID)
		oauthErr(t, token("https://other.example/"), http.StatusBadRequest, "invalid_target")
		oauthErr(t, token("not a uri"), http.StatusBadRequest, "invalid_target")
		if n := count(t, e, `SELECT COUNT(*) FROM oauth_client_tokens WHERE client_id = $1`, c.ID); n != before {
			t.Fatalf("refused requests stored %d tokens", n-before)
		}

		forAPI := token(api).JSON()["access_token"].(string)
		forFiles := token(resFiles).JSON()["access_token"].(string)
		both := token(api, resFiles).JSON()["access_token"].(string)
		plain, err := ccConfig(e, c).Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for tok, want := range map[string]any{forAPI: api, forFiles: resFiles, plain.AccessToken: c.ID} {
			if aud := introspectAud(t, e, c, tok); aud != want {
				t.Fatalf("aud %v, want %v", aud, want)
			}
		}
		if aud := introspectAud(t, e, c, both); !sameStrings(aud, resFiles, api) && !sameStrings(aud, api, resFiles) {
			t.Fatalf("aud %v, want both", aud)
		}

		for _, tok := range []string{forAPI, both, plain.AccessToken} {
			e.Call(t, "GET", "/v1/devices", tok, nil, http.StatusOK)
		}
		r := e.Do(t, apptest.Req{Method: "GET", Path: "/v1/devices", Token: forFiles})
		if www := r.Header.Get("WWW-Authenticate"); r.Status != http.StatusUnauthorized || !strings.Contains(www, `error="invalid_token"`) {
			t.Fatalf("a token for another resource: %d %q %s", r.Status, www, r.Body)
		}
		r = e.Do(t, apptest.Req{Method: "POST", Path: "/v1/devices", Token: forAPI, Body: map[string]any{"name": "x"}})
		if www := r.Header.Get("WWW-Authenticate"); r.Status != http.StatusForbidden || !strings.Contains(www, `error="insufficient_scope"`) ||
			!strings.Contains(www, `scope="devices:write"`) {
			t.Fatalf("a missing permission: %d %q", r.Status, www)
		}
	})
}

// TestDeviceGrantResource: a device authorization request names resources
// (RFC 8707 §2) as an authorization request does: the tokens the device
// polls for are for them, a poll may narrow them, and one the client may not
// ask for is invalid_target.
func TestDeviceGrantResource(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		c := mkDeviceClient(t, e, e.Admin(t).Token, map[string]any{"is_first_party": true, "resources": []string{resAPI, resFiles}})
		f := url.Values{"client_id": {c.ID}, "scope": {"openid"}, "resource": {"https://other.example/"}}
		oauthErr(t, tokenPost(t, e, "/v1/oauth/device_authorization", f), http.StatusBadRequest, "invalid_target")

		f["resource"] = []string{resAPI, resFiles}
		d := tokenPost(t, e, "/v1/oauth/device_authorization", f).JSON()
		devicePage(t, signedInBrowser(t, e, u), d["user_code"].(string), "approve")
		code := d["device_code"].(string)
		poll := url.Values{"grant_type": {deviceGrant}, "device_code": {code}, "client_id": {c.ID}, "resource": {"https://other.example/"}}
		oauthErr(t, tokenPost(t, e, "/v1/oauth/token", poll), http.StatusBadRequest, "invalid_target")
		poll["resource"] = []string{resAPI}
		r := tokenPost(t, e, "/v1/oauth/token", poll)
		if r.Status != http.StatusOK {
			t.Fatalf("poll: %d %s", r.Status, r.Body)
		}
		in := e.Call(t, "POST", "/v1/oauth/introspect", e.SystemKey, url.Values{"token": {r.JSON()["access_token"].(string)}}, http.StatusOK).JSON()
		if in["active"] != true || in["aud"] != resAPI {
			t.Fatalf("introspection %v", in)
		}
	})
}

// TestMachineClientsWithoutRedirect: a client whose grants need no redirect
// (client credentials, device) may be made without redirect URIs, through
// the REST API and through dynamic registration; one registered for the
// authorization code grant still needs one, and cannot lose its last. The
// registration endpoint answers a CORS preflight from any origin.
func TestMachineClientsWithoutRedirect(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		for _, grants := range [][]string{{"client_credentials"}, {deviceGrant}, {deviceGrant, "refresh_token"}} {
			body := map[string]any{"name": "Machine", "grant_types": grants, "allowed_scopes": []string{"openid", "devices:read"}}
			if grants[0] == deviceGrant {
				body["client_type"] = "public"
			}
			d := e.Call(t, "POST", "/v1/oauth/clients", admin.Token, body, http.StatusCreated).JSON()["data"].(map[string]any)
			if uris, _ := d["redirect_uris"].([]any); len(uris) != 0 {
				t.Fatalf("%v: redirect_uris %v", grants, d["redirect_uris"])
			}
			// Adding the code grant without a redirect URI is refused and changes nothing.
			e.Call(t, "PATCH", "/v1/oauth/clients/"+d["id"].(string), admin.Token, map[string]any{"grant_types": append(grants, "authorization_code")}, http.StatusBadRequest)
		}
		e.Call(t, "POST", "/v1/oauth/clients", admin.Token, map[string]any{"name": "Web", "redirect_uris": []string{}}, http.StatusBadRequest)
		c := mkClient(t, e, admin.Token, nil)
		e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, admin.Token, map[string]any{"redirect_uris": []string{}}, http.StatusBadRequest)

		pre := e.Do(t, apptest.Req{Method: "OPTIONS", Path: "/v1/oauth/register", Header: map[string]string{
			"Origin": "https://mcp-host.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}})
		if pre.Status != http.StatusNoContent || pre.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("preflight: %d %v", pre.Status, pre.Header)
		}
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/register", Header: map[string]string{"Origin": "https://mcp-host.example"},
			Body: map[string]any{"client_name": "TV agent", "grant_types": []string{deviceGrant}, "token_endpoint_auth_method": "none", "scope": "openid"}})
		if r.Status != http.StatusCreated || r.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("register a device client: %d %s", r.Status, r.Body)
		}
		r = register(t, e, "", map[string]any{"client_name": "Web agent", "grant_types": []string{"authorization_code"}, "token_endpoint_auth_method": "none"})
		if r.Status != http.StatusBadRequest || r.JSON()["error"] != "invalid_redirect_uri" {
			t.Fatalf("a code client without redirect URIs: %d %s", r.Status, r.Body)
		}
	}, registrationMode("open"))
}

// TestOpenRegistrationThrottled: in open mode one address gets
// OpenRegistrationLimit's burst of registrations, then 429 with
// Retry-After, which stores nothing; the allowance comes back with time.
func TestOpenRegistrationThrottled(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		body := mcpRegistration()
		for i := 0; i < oauth.OpenRegistrationLimit.Burst; i++ {
			if r := register(t, e, "", body); r.Status != http.StatusCreated {
				t.Fatalf("registration %d: %d %s", i+1, r.Status, r.Body)
			}
		}
		before := dynamicCount(t, e)
		r := register(t, e, "", body)
		if r.Status != http.StatusTooManyRequests || r.JSON()["error"] != "temporarily_unavailable" || r.Header.Get("Retry-After") == "" {
			t.Fatalf("over the limit: %d %v %s", r.Status, r.Header, r.Body)
		}
		if n := dynamicCount(t, e); n != before {
			t.Fatalf("a refused registration stored %d clients", n-before)
		}
		e.Advance(t, time.Hour)
		if r := register(t, e, "", body); r.Status != http.StatusCreated {
			t.Fatalf("after an hour: %d %s", r.Status, r.Body)
		}
	}, registrationMode("open"))
}
