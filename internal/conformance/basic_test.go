package conformance

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
)

// Inherent warnings: the standard claims of a scope hmid has only in part.
// VerifyScopesReturnedInUserInfoClaims (WARNING, OIDC Core §5.4) expects
// every claim of a requested scope; hmid's profile has name, picture,
// preferred_username, locale and updated_at but no given_name, family_name,
// middle_name, nickname, profile, website, gender, birthdate or zoneinfo,
// because it keeps no such data.
const warnProfileClaims = "VerifyScopesReturnedInUserInfoClaims / profile: hmid has no given_name, family_name, middle_name, nickname, profile, website, gender, birthdate, zoneinfo"

// TestBasicOP replicates the Basic OP certification plan
// (oidcc-basic-certification-test-plan: response_type code,
// client_secret_basic unless a module says otherwise, default response
// mode) with an RS256 client, on every engine.
func TestBasicOP(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c := newRP(t, e)
		module := func(name string, fn func(r *result)) {
			t.Run(name, func(t *testing.T) { fn(newResult(t)) })
		}

		// oidcc-server: the code flow with state and nonce. Conditions
		// (FAILURE): the callback carries code, the state and iss; the token
		// response is 200 with access_token, token_type Bearer and an
		// id_token whose RS256 signature verifies with the JWKS key its kid
		// names, with iss, aud, exp, iat, sub and the nonce. WARNING:
		// expires_in present.
		module("oidcc-server", func(r *result) {
			c.flow(r, c.request(), "client_secret_basic")
			r.done()
		})

		// oidcc-server-client-secret-post: the same with client_secret_post.
		module("oidcc-server-client-secret-post", func(r *result) {
			c.flow(r, c.request(), "client_secret_post")
			r.done()
		})

		// oidcc-response-type-missing: no response_type. FAILURE unless the
		// OP shows an error page or redirects with an error (invalid_request
		// or unsupported_response_type) carrying the state; never a code.
		module("oidcc-response-type-missing", func(r *result) {
			q := c.request("response_type", "")
			c.authError(r, c.front(r.t, c.user.Token, q), q, "invalid_request", "unsupported_response_type")
			r.done()
		})

		// oidcc-userinfo-get / -post-header / -post-body: UserInfo with the
		// access token in the header of a GET or POST, or in a POST body.
		// FAILURE: 200 JSON with sub equal to the ID token's sub, standard
		// claims with their types.
		for _, how := range []string{"get", "post-header", "post-body"} {
			module("oidcc-userinfo-"+how, func(r *result) {
				idt, tr := c.flow(r, c.request(), "client_secret_basic")
				ui := c.userinfo(r, asString(tr.body["access_token"]), how)
				r.require(ui["sub"] == idt["sub"], "VerifyUserInfoAndIdTokenInTokenEndpointSameSub")
				r.done()
			})
		}

		// oidcc-ensure-request-without-nonce-succeeds-for-code-flow: nonce is
		// optional in the code flow. FAILURE: success, and no nonce in the ID token.
		module("oidcc-ensure-request-without-nonce-succeeds-for-code-flow", func(r *result) {
			c.flow(r, c.request("nonce", ""), "client_secret_basic")
			r.done()
		})

		// oidcc-scope-profile / -email: the scope's claims in UserInfo.
		// FAILURE: UserInfo valid with sub. WARNING
		// (VerifyScopesReturnedInUserInfoClaims): every standard claim of the
		// scope present. email: email and email_verified, no warning.
		// profile: the documented inherent warning warnProfileClaims.
		scopeModule := func(scope string, claims []string, inherent ...string) {
			module("oidcc-scope-"+scope, func(r *result) {
				r.require(slices.Contains(c.discList("scopes_supported"), scope), "OIDCCCheckScopesSupportedContainScopeTest")
				idt, tr := c.flow(r, c.request("scope", "openid "+scope), "client_secret_basic")
				ui := c.userinfo(r, asString(tr.body["access_token"]), "get")
				r.require(ui["sub"] == idt["sub"], "VerifyUserInfoAndIdTokenInTokenEndpointSameSub")
				for _, k := range claims {
					r.require(ui[k] != nil, "VerifyScopesReturnedInUserInfoClaims / "+k)
				}
				if scope == "profile" {
					r.warn(ui["given_name"] != nil && ui["family_name"] != nil && ui["birthdate"] != nil, warnProfileClaims)
				}
				r.done(inherent...)
			})
		}
		scopeModule("profile", []string{"name", "preferred_username", "updated_at"}, warnProfileClaims)
		scopeModule("email", []string{"email", "email_verified"})

		// oidcc-scope-address / -phone / -all: OIDCCCheckScopesSupportedContainScopeTest
		// skips the module when scopes_supported lacks the scope. hmid has
		// no address or phone data and does not list them: the suite skips
		// these three modules; asserted here is the condition that skips them.
		for _, m := range []struct{ name, scope string }{{"address", "address"}, {"phone", "phone"}, {"all", "address phone"}} {
			module("oidcc-scope-"+m.name, func(r *result) {
				missing := false
				for _, s := range strings.Fields(m.scope) {
					missing = missing || !slices.Contains(c.discList("scopes_supported"), s)
				}
				r.require(missing, "skipped: scopes_supported lacks "+m.scope)
				// And asking anyway is refused cleanly, to the redirect URI.
				q := c.request("scope", "openid "+m.scope)
				c.authError(r, c.front(r.t, c.user.Token, q), q, "invalid_scope")
				r.done()
			})
		}

		// oidcc-ensure-other-scope-order-succeeds: "email openid" instead of
		// "openid email". FAILURE unless both orders succeed.
		module("oidcc-ensure-other-scope-order-succeeds", func(r *result) {
			c.flow(r, c.request("scope", "openid email"), "client_secret_basic")
			c.flow(r, c.request("scope", "email openid"), "client_secret_basic")
			r.done()
		})

		// oidcc-display-page / -popup: display is accepted. FAILURE unless the flow succeeds.
		for _, d := range []string{"page", "popup"} {
			module("oidcc-display-"+d, func(r *result) {
				c.flow(r, c.request("display", d), "client_secret_basic")
				r.done()
			})
		}

		// oidcc-prompt-login: a first login, then prompt=login. FAILURE
		// unless the OP asks the user to log in again (the login page even
		// with a session), the flow then succeeds, and the second ID token
		// has the same sub and a later iat and auth_time.
		module("oidcc-prompt-login", func(r *result) {
			first, _ := c.flow(r, c.request(), "client_secret_basic")
			c.e.Clock.Advance(time.Second)
			second := c.reauthenticate(r, c.request("prompt", "login"))
			r.require(second["sub"] == first["sub"], "CheckIdTokenSubConsistent")
			r.require(second["iat"].(float64) > first["iat"].(float64), "CheckSecondIdTokenIatIsNewer")
			r.require(second["auth_time"].(float64) > first["auth_time"].(float64), "CheckIdTokenAuthTimeIsRecentIfPresent / newer auth_time")
			r.done()
		})

		// oidcc-prompt-none-not-logged-in: prompt=none without a session.
		// FAILURE unless an error (login_required, interaction_required,
		// consent_required or account_selection_required) comes back to the
		// redirect URI with the state; no login page.
		module("oidcc-prompt-none-not-logged-in", func(r *result) {
			q := c.request("prompt", "none")
			got := c.authError(r, c.front(r.t, "", q), q, "login_required", "interaction_required", "consent_required", "account_selection_required")
			r.require(got == "login_required", "hmid answers login_required")
			r.done()
		})

		// oidcc-prompt-none-logged-in: after a login, prompt=none. FAILURE
		// unless a code comes back without any page, and the ID token names
		// the same user.
		module("oidcc-prompt-none-logged-in", func(r *result) {
			first, _ := c.flow(r, c.request(), "client_secret_basic")
			second, _ := c.flow(r, c.request("prompt", "none"), "client_secret_basic")
			r.require(second["sub"] == first["sub"], "CheckIdTokenSubConsistent")
			r.done()
		})

		// oidcc-max-age-1: a login, a wait of more than a second, then
		// max_age=1. FAILURE unless the user must log in again, the second
		// ID token carries auth_time (required with max_age, Core §3.1.2.1)
		// newer than the first.
		module("oidcc-max-age-1", func(r *result) {
			first, _ := c.flow(r, c.request(), "client_secret_basic")
			c.e.Clock.Advance(2 * time.Second)
			second := c.reauthenticate(r, c.request("max_age", "1"))
			at, ok := second["auth_time"].(float64)
			r.require(ok, "CheckIdTokenAuthTimeIsPresentIfRequested")
			r.require(at > first["auth_time"].(float64), "CheckIdTokenAuthTimeIsRecentIfPresent")
			r.done()
		})

		// oidcc-max-age-10000: max_age=10000 right after a login. FAILURE
		// unless no login is asked, auth_time is present and not older than
		// 10000 seconds.
		module("oidcc-max-age-10000", func(r *result) {
			idt, _ := c.flow(r, c.request("max_age", "10000"), "client_secret_basic")
			at, ok := idt["auth_time"].(float64)
			r.require(ok && c.e.Clock.Now().Unix()-int64(at) <= 10000, "CheckIdTokenAuthTimeIsPresentIfRequested / within max_age")
			r.done()
		})

		// oidcc-ensure-request-with-unknown-parameter-succeeds: an extra
		// parameter is ignored (RFC 6749 §3.1). FAILURE unless the flow succeeds.
		module("oidcc-ensure-request-with-unknown-parameter-succeeds", func(r *result) {
			c.flow(r, c.request("extra", "foobar"), "client_secret_basic")
			r.done()
		})

		// oidcc-id-token-hint: a login, then prompt=none with the first ID
		// token as id_token_hint. FAILURE unless a code comes back for the
		// same sub.
		module("oidcc-id-token-hint", func(r *result) {
			q := c.request()
			code := c.callback(r, c.front(r.t, c.user.Token, q), q)
			tr := c.exchange(r.t, code, "client_secret_basic")
			first := c.checkTokenResponse(r, tr, q.Get("nonce"))
			second, _ := c.flow(r, c.request("prompt", "none", "id_token_hint", asString(tr.body["id_token"])), "client_secret_basic")
			r.require(second["sub"] == first["sub"], "CheckIdTokenSubConsistent")
			r.done()
		})

		// oidcc-login-hint: login_hint with the user's email; the suite asks
		// for a screenshot of the login page. FAILURE unless the flow
		// succeeds; here the login page must show the hint in its email field.
		module("oidcc-login-hint", func(r *result) {
			q := c.request("login_hint", c.user.Email)
			u := c.front(r.t, "", q)
			r.require(c.isLogin(u), "no session: the login page", u)
			page := c.e.Do(r.t, apptest.Req{Method: "GET", Path: u.RequestURI()})
			r.require(page.Status == http.StatusOK && strings.Contains(string(page.Body), `value="`+c.user.Email+`"`), "login page prefilled with login_hint")
			session, back := c.login(r.t, u)
			code := c.callback(r, c.front(r.t, session, back), q)
			c.checkTokenResponse(r, c.exchange(r.t, code, "client_secret_basic"), q.Get("nonce"))
			r.done()
		})

		// oidcc-ui-locales: ui_locales is accepted (screenshot of the page in
		// the language). FAILURE unless the flow succeeds; here the login
		// page must be German for ui_locales=de.
		module("oidcc-ui-locales", func(r *result) {
			q := c.request("ui_locales", "de")
			u := c.front(r.t, "", q)
			page := c.e.Do(r.t, apptest.Req{Method: "GET", Path: u.RequestURI(), Header: map[string]string{"Accept-Language": "en"}})
			r.require(strings.Contains(string(page.Body), `lang="de"`), "login page in the ui_locales language")
			session, back := c.login(r.t, u)
			code := c.callback(r, c.front(r.t, session, back), q)
			c.checkTokenResponse(r, c.exchange(r.t, code, "client_secret_basic"), q.Get("nonce"))
			r.done()
		})

		// oidcc-claims-locales: claims_locales is accepted. FAILURE unless
		// the flow and UserInfo succeed.
		module("oidcc-claims-locales", func(r *result) {
			_, tr := c.flow(r, c.request("scope", "openid profile", "claims_locales", "de"), "client_secret_basic")
			c.userinfo(r, asString(tr.body["access_token"]), "get")
			r.done()
		})

		// oidcc-ensure-request-with-acr-values-succeeds: acr_values "1 2".
		// FAILURE unless the flow succeeds. WARNING: the ID token's acr is
		// one of the values asked for.
		module("oidcc-ensure-request-with-acr-values-succeeds", func(r *result) {
			idt, _ := c.flow(r, c.request("acr_values", "1 2"), "client_secret_basic")
			r.warn(slices.Contains([]string{"1", "2"}, asString(idt["acr"])), "ValidateIdTokenACRClaimAgainstAcrValuesRequest")
			r.done()
		})

		// oidcc-codereuse: the code redeemed twice. FAILURE unless the second
		// redemption is 400 invalid_grant.
		module("oidcc-codereuse", func(r *result) {
			q := c.request()
			code := c.callback(r, c.front(r.t, c.user.Token, q), q)
			c.checkTokenResponse(r, c.exchange(r.t, code, "client_secret_basic"), q.Get("nonce"))
			again := c.exchange(r.t, code, "client_secret_basic")
			r.require(again.status == http.StatusBadRequest && again.body["error"] == "invalid_grant", "CheckTokenEndpointReturnedInvalidGrant", again.status, again.body)
			r.done()
		})

		// oidcc-codereuse-30seconds: the code redeemed again 30 seconds
		// later. FAILURE unless invalid_grant. WARNING (RFC 6749 §4.1.2):
		// the access token issued from the code is revoked.
		module("oidcc-codereuse-30seconds", func(r *result) {
			q := c.request()
			code := c.callback(r, c.front(r.t, c.user.Token, q), q)
			tr := c.exchange(r.t, code, "client_secret_basic")
			c.checkTokenResponse(r, tr, q.Get("nonce"))
			c.e.Clock.Advance(30 * time.Second)
			again := c.exchange(r.t, code, "client_secret_basic")
			r.require(again.status == http.StatusBadRequest && again.body["error"] == "invalid_grant", "CheckTokenEndpointReturnedInvalidGrant")
			res := c.e.Do(r.t, apptest.Req{Method: "GET", Path: "/v1/oauth/userinfo", Token: asString(tr.body["access_token"])})
			r.warn(res.Status == http.StatusUnauthorized, "EnsureAccessTokenRevokedAfterCodeReuse")
			r.done()
		})

		// oidcc-ensure-registered-redirect-uri: an unregistered redirect_uri.
		// FAILURE unless the OP shows an error itself and never redirects.
		module("oidcc-ensure-registered-redirect-uri", func(r *result) {
			q := c.request("redirect_uri", "https://rp.example/test/a/hmid/other")
			res := c.e.Do(r.t, apptest.Req{Method: "GET", Path: "/v1/oauth/authorize?" + q.Encode(), Token: c.user.Token})
			r.require(res.Status == http.StatusBadRequest && res.Header.Get("Location") == "", "no redirect to an unregistered redirect_uri", res.Status)
			r.done()
		})

		// oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported:
		// an unsigned request object. request_parameter_supported is false,
		// so FAILURE unless the OP answers request_not_supported (or another
		// error) to the redirect URI with the state.
		module("oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported", func(r *result) {
			r.require(c.disc["request_parameter_supported"] == false, "request_parameter_supported false")
			q := c.request()
			q.Set("request", base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`))+"."+
				base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"`+c.client.ID+`","aud":"`+c.e.URL+`","response_type":"code","client_id":"`+c.client.ID+`","scope":"openid","redirect_uri":"`+redirectURI+`","state":"`+q.Get("state")+`"}`))+".")
			c.authError(r, c.front(r.t, c.user.Token, q), q, "request_not_supported")
			r.done()
		})

		// oidcc-request-uri-unsigned-supported-correctly-or-rejected-as-unsupported
		// (the plan's OP-request_uri-Unsigned): request_uri_parameter_supported
		// is false, so FAILURE unless request_uri_not_supported comes back.
		module("oidcc-request-uri-unsigned-supported-correctly-or-rejected-as-unsupported", func(r *result) {
			r.require(c.disc["request_uri_parameter_supported"] == false, "request_uri_parameter_supported false")
			q := c.request("request_uri", "https://rp.example/requests/1")
			c.authError(r, c.front(r.t, c.user.Token, q), q, "request_uri_not_supported")
			r.done()
		})

		// oidcc-ensure-request-object-with-redirect-uri: skipped by the suite
		// when request objects are unsupported (the previous module answered
		// request_not_supported); asserted is that condition.
		module("oidcc-ensure-request-object-with-redirect-uri", func(r *result) {
			r.require(c.disc["request_parameter_supported"] == false, "skipped: request objects not supported")
			r.done()
		})

		// oidcc-claims-essential: scope openid with
		// claims={"userinfo":{"name":{"essential":true}}}. FAILURE unless the
		// flow succeeds. WARNING: UserInfo has name; WARNING: the ID token
		// has no name (it was asked for in UserInfo only).
		module("oidcc-claims-essential", func(r *result) {
			r.require(c.disc["claims_parameter_supported"] == true, "claims_parameter_supported")
			idt, tr := c.flow(r, c.request("claims", `{"userinfo":{"name":{"essential":true}}}`), "client_secret_basic")
			ui := c.userinfo(r, asString(tr.body["access_token"]), "get")
			r.warn(asString(ui["name"]) != "", "EnsureUserInfoContainsName")
			r.warn(idt["name"] == nil, "EnsureIdTokenDoesNotContainName")
			r.done()
		})

		// oidcc-refresh-token: scope openid offline_access with
		// prompt=consent, then the refresh grant. FAILURE unless a refresh
		// token is issued, the refresh answer has a new access token and an
		// ID token with the same iss, sub, aud and auth_time as the first,
		// and a refreshed access token works at UserInfo.
		module("oidcc-refresh-token", func(r *result) {
			first, tr := c.flow(r, c.request("scope", "openid offline_access", "prompt", "consent"), "client_secret_basic")
			rt := asString(tr.body["refresh_token"])
			r.require(rt != "", "ExtractRefreshTokenFromTokenResponse")
			c.e.Clock.Advance(time.Minute)
			rr := c.token(r.t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}, "client_secret_basic")
			r.require(rr.status == http.StatusOK && asString(rr.body["access_token"]) != "", "CheckTokenEndpointHttpStatus200 / refresh")
			second := c.idToken(r, asString(rr.body["id_token"]), "")
			for _, k := range []string{"iss", "sub", "aud", "auth_time"} {
				r.require(second[k] == first[k], "EnsureIdTokenFromRefreshMatches / "+k)
			}
			c.userinfo(r, asString(rr.body["access_token"]), "get")
			r.done()
		})

		// oidcc-ensure-request-with-valid-pkce-succeeds: S256 PKCE. FAILURE
		// unless the flow with code_verifier succeeds.
		module("oidcc-ensure-request-with-valid-pkce-succeeds", func(r *result) {
			verifier := random() + random() + random()
			sum := sha256.Sum256([]byte(verifier))
			q := c.request("code_challenge", base64.RawURLEncoding.EncodeToString(sum[:]), "code_challenge_method", "S256")
			code := c.callback(r, c.front(r.t, c.user.Token, q), q)
			c.checkTokenResponse(r, c.exchange(r.t, code, "client_secret_basic", "code_verifier", verifier), q.Get("nonce"))
			r.done()
		})

		// oidcc-ensure-post-request-succeeds: the authorization request
		// form-encoded in a POST (Core §3.1.2.1). FAILURE unless it succeeds.
		module("oidcc-ensure-post-request-succeeds", func(r *result) {
			q := c.request()
			res := c.e.Do(r.t, apptest.Req{Method: "POST", Path: "/v1/oauth/authorize", Token: c.user.Token, Body: q})
			r.require(res.Status == http.StatusFound, "authorization by POST redirects", res.Status)
			u, _ := url.Parse(res.Header.Get("Location"))
			code := c.callback(r, u, q)
			c.checkTokenResponse(r, c.exchange(r.t, code, "client_secret_basic"), q.Get("nonce"))
			r.done()
		})
	})
}
