package conformance

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"hmid/internal/apptest"
)

// TestConfigOP replicates the Config OP certification plan
// (oidcc-config-certification-test-plan), on every engine.
func TestConfigOP(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c := newRP(t, e)

		// oidcc-discovery-endpoint-verification (OpenID Connect Discovery
		// 1.0 §3, §4). FAILURE conditions: the document is JSON at
		// /.well-known/openid-configuration; issuer equals the URL it was
		// fetched under, without query or fragment, https or (in tests)
		// localhost; authorization_endpoint, token_endpoint, jwks_uri,
		// userinfo_endpoint absolute and under the same rules;
		// response_types_supported has code; subject_types_supported is
		// public or pairwise; id_token_signing_alg_values_supported has
		// RS256 and not none; scopes_supported has openid; claims_supported
		// has sub; grant_types_supported, token_endpoint_auth_methods_supported,
		// response_modes_supported and the *_parameter_supported booleans
		// have valid values. The JWKS: every key has kty, kid (unique), use
		// sig and alg, no private part, RSA keys of at least 2048 bits.
		// WARNING conditions hmid passes: userinfo_endpoint present;
		// claims_supported present and naming what the ID token carries.
		// Inherent WARNING: none that hmid could remove (registration_endpoint,
		// RECOMMENDED by Discovery §3, belongs to dynamic registration, which
		// the Config OP plan does not test and hmid does not offer).
		t.Run("oidcc-discovery-endpoint-verification", func(t *testing.T) {
			r := newResult(t)
			res := e.Do(t, apptest.Req{Method: "GET", Path: "/.well-known/openid-configuration"})
			r.require(res.Status == http.StatusOK && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json"), "CheckDiscEndpointDiscoveryUrl / JSON document")
			d := c.disc
			iss := asString(d["issuer"])
			r.require(iss == e.URL, "CheckDiscEndpointIssuer / issuer matches the discovery URL", iss)
			httpsOrLocal := func(raw string) bool {
				u, err := url.Parse(raw)
				if err != nil || !u.IsAbs() || u.Fragment != "" {
					return false
				}
				h := u.Hostname()
				return u.Scheme == "https" || h == "localhost" || h == "127.0.0.1" || h == "::1"
			}
			r.require(httpsOrLocal(iss) && !strings.Contains(iss, "?"), "CheckDiscEndpointIssuer / https or localhost, no query")
			for _, k := range []string{"authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint"} {
				r.require(httpsOrLocal(asString(d[k])) && strings.HasPrefix(asString(d[k]), iss+"/"), "CheckDiscEndpoint / "+k)
			}
			r.require(slices.Contains(c.discList("response_types_supported"), "code"), "CheckDiscEndpointResponseTypesSupported")
			for _, s := range c.discList("subject_types_supported") {
				r.require(s == "public" || s == "pairwise", "CheckDiscEndpointSubjectTypesSupported", s)
			}
			algs := c.discList("id_token_signing_alg_values_supported")
			r.require(slices.Contains(algs, "RS256") && !slices.Contains(algs, "none"), "CheckDiscEndpointIdTokenSigningAlgValuesSupported", algs)
			r.require(slices.Contains(c.discList("scopes_supported"), "openid"), "CheckDiscEndpointScopesSupportedContainsOpenId")
			claims := c.discList("claims_supported")
			r.warn(len(claims) > 0, "CheckDiscEndpointClaimsSupported")
			for _, k := range []string{"sub", "iss", "aud", "exp", "iat", "auth_time", "acr", "amr", "nonce", "name", "email", "preferred_username", "locale", "updated_at"} {
				r.require(slices.Contains(claims, k), "claims_supported / "+k)
			}
			for _, g := range c.discList("grant_types_supported") {
				r.require(slices.Contains([]string{"authorization_code", "refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:device_code"}, g),
					"CheckDiscEndpointGrantTypesSupported", g)
			}
			for _, m := range c.discList("token_endpoint_auth_methods_supported") {
				r.require(slices.Contains([]string{"client_secret_basic", "client_secret_post", "private_key_jwt", "none"}, m), "CheckDiscEndpointTokenEndpointAuthMethodsSupported", m)
			}
			r.require(slices.Contains(c.discList("response_modes_supported"), "query"), "CheckDiscEndpointResponseModesSupported")
			for _, k := range []string{"claims_parameter_supported", "request_parameter_supported", "request_uri_parameter_supported"} {
				_, isBool := d[k].(bool)
				r.require(isBool, "CheckDiscEndpoint / "+k+" is a boolean")
			}
			r.require(d["request_uri_parameter_supported"] == false || d["require_request_uri_registration"] != nil, "CheckDiscRequestUriParameterSupported")
			for _, p := range c.discList("prompt_values_supported") {
				r.require(slices.Contains([]string{"none", "login", "consent", "select_account", "create"}, p), "prompt_values_supported", p)
			}

			// The JWKS (CheckServerKeysIsValid, EnsureServerJwksDoesNotContainPrivateOrSymmetricKeys,
			// CheckForKeyIdInServerJWKs, CheckDistinctKeyIdValueInServerJWKs, ValidateServerJWKs).
			r.require(len(c.jwks.Keys) > 0, "CheckServerKeysIsValid / at least one key")
			var kids []string
			for _, k := range c.jwks.Keys {
				r.require(k.KeyID != "" && !slices.Contains(kids, k.KeyID), "CheckDistinctKeyIdValueInServerJWKs", k.KeyID)
				kids = append(kids, k.KeyID)
				r.require(k.Use == "sig" && k.Algorithm != "", "ValidateServerJWKs / use sig, alg", k.Use, k.Algorithm)
				r.require(k.IsPublic() && k.Valid(), "EnsureServerJwksDoesNotContainPrivateOrSymmetricKeys")
				if k.Algorithm == "RS256" {
					r.require(rsaBits(k) >= 2048, "ValidateServerJWKs / RSA at least 2048 bits", rsaBits(k))
				}
			}
			r.done()
		})
	})
}
