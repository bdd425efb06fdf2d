package web

import (
	"encoding/json"
	"net/http"
	"strings"

	"hmid/internal/httpx"
	"hmid/internal/oauth"
)

// clientAuthShownField is a hidden field of the client form: it says the
// form showed the authentication and token fields, so a post without it
// (an older form) leaves them as they are.
const clientAuthShownField = "client_auth_shown"

// clientAuthInput reads the client form's authentication method, keys,
// resources and access token format into in, when the form showed them.
// An empty key field clears the keys.
func clientAuthInput(r *http.Request, in *oauth.ClientInput) {
	if r.PostFormValue(clientAuthShownField) == "" {
		return
	}
	if m := strings.TrimSpace(r.PostFormValue("token_endpoint_auth_method")); m != "" {
		in.TokenEndpointAuthMethod = httpx.Opt[string]{Set: true, Value: m}
	}
	jwks := strings.TrimSpace(r.PostFormValue("jwks"))
	in.JWKS = httpx.Opt[json.RawMessage]{Set: true, Null: jwks == "", Value: json.RawMessage(jwks)}
	in.JWKSURI = httpx.Opt[string]{Set: true, Value: strings.TrimSpace(r.PostFormValue("jwks_uri"))}
	in.Resources = httpx.Opt[[]string]{Set: true, Value: redirectLines(r.PostFormValue("resources"))}
	in.AccessTokenFormat = httpx.Opt[string]{Set: true, Value: r.PostFormValue("access_token_format")}
}

// enteredAuth shows the authentication fields as they were sent.
func enteredAuth(c *oauth.Client, in oauth.ClientInput) {
	if in.TokenEndpointAuthMethod.Set {
		c.TokenEndpointAuthMethod = in.TokenEndpointAuthMethod.Value
	}
	if in.JWKS.Set {
		c.JWKS = in.JWKS.Value
	}
	if in.JWKSURI.Set {
		c.JWKSURI = nil
		if in.JWKSURI.Value != "" {
			v := in.JWKSURI.Value
			c.JWKSURI = &v
		}
	}
	if in.Resources.Set {
		c.Resources = in.Resources.Value
	}
	if in.AccessTokenFormat.Set {
		c.AccessTokenFormat = in.AccessTokenFormat.Value
	}
}

// authMethods are the choices of the authentication method field for a
// client of type clientType.
func authMethods(clientType string) []string {
	if clientType == oauth.Public {
		return []string{oauth.AuthNone}
	}
	return []string{oauth.AuthSecretBasic, oauth.AuthSecretPost, oauth.AuthPrivateKeyJWT}
}

// jwksText is a registered key set as the form shows it, indented.
func jwksText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return string(raw)
	}
	return string(b)
}

func init() {
	AddMessages(map[string]map[string]string{
		"en": {
			"dev.client.tokens":                 "Authentication and access tokens",
			"dev.client.method":                 "Token endpoint authentication",
			"dev.client.method.help":            "private_key_jwt: the client signs a short-lived JWT with its own key (RFC 7523) and has no secret; give its public keys below.",
			"dev.method.none":                   "none (public client, PKCE)",
			"dev.method.client_secret_basic":    "client_secret_basic (secret, HTTP Basic or form)",
			"dev.method.client_secret_post":     "client_secret_post (secret in the form, or Basic)",
			"dev.method.private_key_jwt":        "private_key_jwt (signed JWT, no secret)",
			"dev.client.jwks":                   "Public keys (JWK Set)",
			"dev.client.jwks.help":              "For private_key_jwt: a JSON JWK Set of public RSA, EC P-256 or Ed25519 keys. Leave empty when you give a key set URL.",
			"dev.client.jwksuri":                "Key set URL (jwks_uri)",
			"dev.client.jwksuri.help":           "For private_key_jwt: where hmid fetches the key set, instead of pasting it.",
			"dev.client.resources":              "Resources (one per line)",
			"dev.client.resources.help":         "The APIs (absolute URIs) this client may ask tokens for with the resource parameter (RFC 8707). Empty: any.",
			"dev.client.format":                 "Access token format",
			"dev.client.format.help":            "JWT access tokens (RFC 9068) are signed with hmid's ID-token keys so an API can check them without asking hmid.",
			"dev.format.opaque":                 "Opaque (hm_at_…)",
			"dev.format.jwt":                    "JWT (RFC 9068)",
			"dev.client.dynamic":                "Registered dynamically",
			"dev.client.dynamic.token":          "with an initial access token",
			"dev.client.dynamic.open":           "by open registration",
			"dev.client.lastused":               "Last token issued",
			"dev.client.lastused.never":         "never",
			"dev.client.auth.private_key_jwt":   "Signed JWT (private_key_jwt), no secret",
			"admin.clients.dynamic":             "dynamic",
			"admin.clients.lastused":            "last token",
			"admin.clients.dynamic.expiry.note": "Open registrations without a token for the configured time are deleted automatically.",
		},
		"de": {
			"dev.client.tokens":                 "Authentifizierung und Zugriffstokens",
			"dev.client.method":                 "Authentifizierung am Token-Endpunkt",
			"dev.client.method.help":            "private_key_jwt: Der Client signiert ein kurzlebiges JWT mit seinem eigenen Schlüssel (RFC 7523) und hat kein Secret; tragen Sie unten seine öffentlichen Schlüssel ein.",
			"dev.method.none":                   "none (öffentlicher Client, PKCE)",
			"dev.method.client_secret_basic":    "client_secret_basic (Secret, HTTP Basic oder Formular)",
			"dev.method.client_secret_post":     "client_secret_post (Secret im Formular oder Basic)",
			"dev.method.private_key_jwt":        "private_key_jwt (signiertes JWT, kein Secret)",
			"dev.client.jwks":                   "Öffentliche Schlüssel (JWK Set)",
			"dev.client.jwks.help":              "Für private_key_jwt: ein JWK Set in JSON mit öffentlichen RSA-, EC-P-256- oder Ed25519-Schlüsseln. Leer lassen, wenn Sie eine URL angeben.",
			"dev.client.jwksuri":                "URL des Schlüsselsatzes (jwks_uri)",
			"dev.client.jwksuri.help":           "Für private_key_jwt: wo hmid den Schlüsselsatz abruft, statt ihn einzufügen.",
			"dev.client.resources":              "Ressourcen (eine pro Zeile)",
			"dev.client.resources.help":         "Die APIs (absolute URIs), für die dieser Client mit dem Parameter resource Tokens anfordern darf (RFC 8707). Leer: alle.",
			"dev.client.format":                 "Format der Zugriffstokens",
			"dev.client.format.help":            "JWT-Zugriffstokens (RFC 9068) werden mit den ID-Token-Schlüsseln von hmid signiert, sodass eine API sie ohne Rückfrage bei hmid prüfen kann.",
			"dev.format.opaque":                 "Opak (hm_at_…)",
			"dev.format.jwt":                    "JWT (RFC 9068)",
			"dev.client.dynamic":                "Dynamisch registriert",
			"dev.client.dynamic.token":          "mit einem Initial-Access-Token",
			"dev.client.dynamic.open":           "durch offene Registrierung",
			"dev.client.lastused":               "Letztes ausgestelltes Token",
			"dev.client.lastused.never":         "nie",
			"dev.client.auth.private_key_jwt":   "Signiertes JWT (private_key_jwt), kein Secret",
			"admin.clients.dynamic":             "dynamisch",
			"admin.clients.lastused":            "letztes Token",
			"admin.clients.dynamic.expiry.note": "Offene Registrierungen ohne Token während der eingestellten Zeit werden automatisch gelöscht.",
		},
	})
}
