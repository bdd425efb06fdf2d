package oauth

import (
	"net/http"
	"slices"

	"hmid/internal/httpx"
)

// Discovery serves GET /.well-known/openid-configuration and
// /v1/.well-known/openid-configuration (OpenID Connect Discovery 1.0 §3;
// spec 1, OIDC discovery; RFC 9207 §3 for the iss response parameter).
func (h *Handler) Discovery(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	httpx.JSON(w, http.StatusOK, h.S.Metadata())
}

// AuthServerMetadata serves GET /.well-known/oauth-authorization-server
// (RFC 8414 §3), and its path-inserted form when the issuer has a path
// (§3.1). The document is the discovery document itself: RFC 8414 §2 allows
// the OpenID Connect fields, which are registered OAuth metadata too (IANA
// "OAuth Authorization Server Metadata"), and one document cannot drift from
// the other (docs/decisions.md, "Introspection and CORS").
func (h *Handler) AuthServerMetadata(w http.ResponseWriter, r *http.Request) {
	h.Discovery(w, r)
}

// hmid's own API as an OAuth protected resource (RFC 9728): its resource
// identifier is the issuer's /v1, where every API route lives, and its
// metadata stands at the well-known URI with that path inserted (§3.1), the
// URL every 401 of the API names (authn.Guard.ResourceMetadata). A client
// that knows only the API (an MCP host, say) follows it to the issuer.
const (
	APIResourcePath       = "/v1"
	ProtectedResourcePath = "/.well-known/oauth-protected-resource" + APIResourcePath
)

// APIResource is the resource identifier of hmid's API (RFC 8707 §2): the
// audience a token asked for with it carries.
func (s *Service) APIResource() string { return s.Issuer + APIResourcePath }

// ProtectedResourceMetadata serves GET ProtectedResourcePath (RFC 9728 §3.2):
// the API's resource identifier, the issuer as its one authorization server,
// the scopes a token for it is asked with, and the bearer methods it takes
// (the Authorization header only: RFC 6750 §2.1).
func (h *Handler) ProtectedResourceMetadata(w http.ResponseWriter, r *http.Request) {
	s := h.S
	w.Header().Set("Cache-Control", "public, max-age=3600")
	httpx.JSON(w, http.StatusOK, map[string]any{
		"resource":                 s.APIResource(),
		"authorization_servers":    []string{s.Issuer},
		"scopes_supported":         ScopeNames(),
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "hmid API",
		"resource_documentation":   s.Issuer + "/v1/openapi.yaml",
	})
}

// Metadata is the provider's metadata, the one document behind OpenID
// Connect discovery and RFC 8414 authorization server metadata.
func (s *Service) Metadata() map[string]any {
	base := s.Issuer
	authMethods := []string{AuthSecretPost, AuthSecretBasic, AuthPrivateKeyJWT, AuthNone}
	md := map[string]any{
		"issuer":                                     base,
		"authorization_endpoint":                     base + "/v1/oauth/authorize",
		"token_endpoint":                             base + "/v1/oauth/token",
		"userinfo_endpoint":                          base + "/v1/oauth/userinfo",
		"revocation_endpoint":                        base + "/v1/oauth/revoke",
		"jwks_uri":                                   base + "/v1/oauth/jwks",
		"scopes_supported":                           ScopeNames(),
		"response_types_supported":                   []string{"code"},
		"response_modes_supported":                   []string{"query"},
		"grant_types_supported":                      GrantTypeNames(),
		"token_endpoint_auth_methods_supported":      authMethods,
		"revocation_endpoint_auth_methods_supported": authMethods,
		"code_challenge_methods_supported":           []string{"S256"},
		"id_token_signing_alg_values_supported":      []string{AlgHS256, AlgRS256, AlgES256},
		"subject_types_supported":                    []string{"public"},
		"prompt_values_supported":                    []string{"none", "login", "consent", "select_account"},
		"claims_supported": []string{"iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "name", "picture",
			"email", "email_verified", "roles", "permissions", "provider", "preferred_locale", "is_super_admin", "role_ids",
			"preferred_username", "locale", "updated_at", "acr", "amr", "sid"},
		"authorization_response_iss_parameter_supported": true,
		"request_parameter_supported":                    false,
		"request_uri_parameter_supported":                false,
		"claims_parameter_supported":                     true,
		"acr_values_supported":                           ACRValues(),
		"display_values_supported":                       DisplayValues(),
		"ui_locales_supported":                           UILocales(),
		// Logout: RP-Initiated Logout 1.0 §2.1 and Back-Channel Logout 1.0 §2.1.
		"end_session_endpoint":                          base + "/v1/oauth/logout",
		"frontchannel_logout_supported":                 false,
		"backchannel_logout_supported":                  true,
		"backchannel_logout_session_supported":          true,
		"introspection_endpoint":                        base + "/v1/oauth/introspect",
		"introspection_endpoint_auth_methods_supported": slices.Clone(IntrospectionAuthMethods),
		// private_key_jwt (RFC 7523, OpenID Connect Core §9; RFC 8414 §2).
		"token_endpoint_auth_signing_alg_values_supported":         slices.Clone(AssertionAlgs),
		"revocation_endpoint_auth_signing_alg_values_supported":    slices.Clone(AssertionAlgs),
		"introspection_endpoint_auth_signing_alg_values_supported": slices.Clone(AssertionAlgs),
		// RFC 8628 §4: the device authorization grant.
		"device_authorization_endpoint": base + "/v1/oauth/device_authorization",
	}
	if s.RegistrationMode() != RegistrationOff {
		md["registration_endpoint"] = base + "/v1/oauth/register" // RFC 8414 §2, RFC 7591 §3
	}
	return md
}
