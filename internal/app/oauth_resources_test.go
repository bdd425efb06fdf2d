package app_test

import (
	"net/http"
	"net/url"
	"reflect"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"hmid/internal/apptest"
)

const (
	resAPI   = "https://api.example/"
	resFiles = "https://files.example/v1"
)

// introspectAud introspects tok with the client's secret and returns aud.
func introspectAud(t *testing.T, e *apptest.Env, c testClient, tok string) any {
	t.Helper()
	r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect", Body: url.Values{"token": {tok}, "client_id": {c.ID}, "client_secret": {c.Secret}}})
	m := r.JSON()
	if r.Status != http.StatusOK || m["active"] != true {
		t.Fatalf("introspect: %d %s", r.Status, r.Body)
	}
	return m["aud"]
}

// TestResourceIndicators: resource on the authorization and token requests
// (RFC 8707) sets the access token's audience, within what the client may
// ask and the authorization granted; a refresh may narrow it; anything else
// is invalid_target and changes nothing.
func TestResourceIndicators(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "res_user"})
		c := mkClient(t, e, u.Token, map[string]any{"resources": []string{resAPI, resFiles}, "allowed_scopes": []string{"openid", "offline_access"}})

		// Authorization requests: not allowed, not absolute, or with a fragment.
		for _, bad := range []string{"https://evil.example/", "/relative", "https://api.example/#x", "urn:no-host"} {
			q := authzParams(c.ID, "scope", "openid")
			q.Set("resource", bad)
			redirectError(t, e, authorize(t, e, u.Token, q, nil), "invalid_target")
		}

		q := authzParams(c.ID, "scope", "openid offline_access")
		q["resource"] = []string{resAPI, resFiles}
		code := getCode(t, e, u.Token, q)
		// A resource the client may not ask for is refused before the code is touched.
		oauthErr(t, exchange(t, e, c, code, "resource", "https://other.example/"), http.StatusBadRequest, "invalid_target")
		r := exchange(t, e, c, code)
		if r.Status != http.StatusOK {
			t.Fatalf("exchange: %d %s", r.Status, r.Body)
		}
		tok := r.JSON()
		if aud := introspectAud(t, e, c, tok["access_token"].(string)); !reflect.DeepEqual(aud, []any{resAPI, resFiles}) {
			t.Fatalf("aud %v, want both resources", aud)
		}

		// A refresh narrows to one resource; an ungranted one is refused and spends nothing.
		rt := tok["refresh_token"].(string)
		oauthErr(t, refreshReq(t, e, c, rt, "resource", "https://evil.example/"), http.StatusBadRequest, "invalid_target")
		oauthErr(t, refreshReq(t, e, c, rt, "resource", "not a uri"), http.StatusBadRequest, "invalid_target")
		r = refreshReq(t, e, c, rt, "resource", resAPI)
		if r.Status != http.StatusOK {
			t.Fatalf("narrowing refresh: %d %s", r.Status, r.Body)
		}
		if aud := introspectAud(t, e, c, r.JSON()["access_token"].(string)); aud != resAPI {
			t.Fatalf("aud %v, want %s", aud, resAPI)
		}
		// The next refresh without resource is for all granted resources again.
		r = refreshReq(t, e, c, r.JSON()["refresh_token"].(string))
		if aud := introspectAud(t, e, c, r.JSON()["access_token"].(string)); !reflect.DeepEqual(aud, []any{resAPI, resFiles}) {
			t.Fatalf("aud after a plain refresh %v", aud)
		}

		// Without resources: the client is the audience; the token request may name an allowed one.
		code = getCode(t, e, u.Token, authzParams(c.ID, "scope", "openid"))
		r = exchange(t, e, c, code, "resource", resFiles)
		if aud := introspectAud(t, e, c, r.JSON()["access_token"].(string)); aud != resFiles {
			t.Fatalf("aud %v, want %s", aud, resFiles)
		}
		code = getCode(t, e, u.Token, authzParams(c.ID, "scope", "openid"))
		if aud := introspectAud(t, e, c, exchange(t, e, c, code).JSON()["access_token"].(string)); aud != c.ID {
			t.Fatalf("aud %v, want the client", aud)
		}

		// Registration: resources must be absolute URIs with a host, no fragment; the format opaque or jwt.
		for _, body := range []map[string]any{{"resources": []string{"https://x.example/#f"}}, {"resources": []string{"relative"}}, {"access_token_format": "paseto"}} {
			e.Call(t, "PATCH", "/v1/oauth/clients/"+c.ID, u.Token, body, http.StatusBadRequest)
		}
	})
}

// TestJWTAccessTokens: a client with access_token_format jwt gets RFC 9068
// access tokens that a resource server verifies with hmid's JWKS, and that
// hmid's own UserInfo, introspection and revocation accept.
func TestJWTAccessTokens(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Username: "jwt_at_user"})
		for _, alg := range []string{"ES256", "HS256"} {
			c := mkClient(t, e, u.Token, map[string]any{"access_token_format": "jwt", "id_token_signed_response_alg": alg,
				"allowed_scopes": []string{"openid", "profile", "offline_access"}})
			q := authzParams(c.ID, "scope", "openid profile offline_access", "resource", resAPI)
			tok := tokens(t, e, u.Token, c, q)
			at := tok["access_token"].(string)

			var set jose.JSONWebKeySet
			e.Call(t, "GET", "/v1/oauth/jwks", "", nil, http.StatusOK).Decode(t, &set)
			want := jose.ES256
			if alg == "HS256" {
				want = jose.RS256 // an HS256 client's secret is no key for a resource server
			}
			parsed, err := jwt.ParseSigned(at, []jose.SignatureAlgorithm{want})
			if err != nil {
				t.Fatalf("%s: access token %q: %v", alg, at, err)
			}
			h := parsed.Headers[0]
			if h.ExtraHeaders["typ"] != "at+jwt" || len(set.Key(h.KeyID)) != 1 {
				t.Fatalf("%s: header %+v", alg, h)
			}
			var cl jwt.Claims
			var extra struct {
				ClientID string `json:"client_id"`
				Scope    string `json:"scope"`
				AuthTime int64  `json:"auth_time"`
			}
			if err := parsed.Claims(set.Key(h.KeyID)[0].Key, &cl, &extra); err != nil {
				t.Fatal(err)
			}
			if err := cl.ValidateWithLeeway(jwt.Expected{Issuer: e.URL, AnyAudience: jwt.Audience{resAPI}, Subject: u.ID, Time: e.Clock.Now()}, 0); err != nil {
				t.Fatalf("%s: claims %+v: %v", alg, cl, err)
			}
			if extra.ClientID != c.ID || extra.Scope != "offline_access openid profile" || extra.AuthTime == 0 || cl.ID == "" {
				t.Fatalf("%s: claims %+v %+v", alg, cl, extra)
			}
			in := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/introspect", Body: url.Values{"token": {at}, "client_id": {c.ID}, "client_secret": {c.Secret}}}).JSON()
			if in["active"] != true || in["jti"] != cl.ID || in["aud"] != resAPI {
				t.Fatalf("%s: introspection %v", alg, in)
			}
			if ui := e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusOK).JSON(); ui["sub"] != u.ID {
				t.Fatalf("%s: userinfo %v", alg, ui)
			}
			// A refresh mints another JWT; revoking it ends it at hmid.
			r := refreshReq(t, e, c, tok["refresh_token"].(string))
			at2 := r.JSON()["access_token"].(string)
			if r.Status != http.StatusOK || at2 == at || len(at2) < 100 {
				t.Fatalf("%s: refresh %d %s", alg, r.Status, r.Body)
			}
			e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusUnauthorized) // rotated away with its refresh token
			if rv := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/revoke", Body: url.Values{"token": {at2}, "client_id": {c.ID}, "client_secret": {c.Secret}}}); rv.Status != http.StatusOK {
				t.Fatalf("revoke: %d", rv.Status)
			}
			e.Call(t, "GET", "/v1/oauth/userinfo", at2, nil, http.StatusUnauthorized)
		}
	})
}
