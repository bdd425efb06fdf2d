package web

import (
	"net/http"
	"slices"

	"hmid/internal/authn"
	"hmid/internal/httpx"
	"hmid/internal/oauth"
)

// grantsShownField is a hidden field of the client form: it says the form
// showed the grant type checkboxes, so a form sent with none ticked is
// refused by the service instead of keeping the client's grants.
const grantsShownField = "grant_types_shown"

// clientGrants are the grant type checkboxes, with those of checked ticked.
func (cp *CredentialPages) clientGrants(r *http.Request, checked []string) []scopeChoice {
	lang := cp.H.UserLanguage(r, authn.From(r.Context()))
	var out []scopeChoice
	for _, g := range oauth.GrantTypeNames() {
		out = append(out, scopeChoice{Name: g, Text: Translator(lang)("dev.grant." + g), Checked: slices.Contains(checked, g)})
	}
	return out
}

// grantTypesInput reads the grant type checkboxes of the client form: set
// when the form showed them, unset (the default on creation, unchanged on
// update) for a post without them.
func grantTypesInput(r *http.Request) httpx.Opt[[]string] {
	if r.PostFormValue(grantsShownField) == "" {
		return httpx.Opt[[]string]{}
	}
	grants := r.PostForm["grant_types"]
	if grants == nil {
		grants = []string{}
	}
	return httpx.Opt[[]string]{Set: true, Value: grants}
}

func init() {
	AddMessages(map[string]map[string]string{
		"en": {
			"dev.client.permscopes":                                  "Permissions for the client credentials grant",
			"dev.client.permscopes.help":                             "Permission strings such as devices:read or gps:write, one per line, that a token of the client credentials grant may hold; you can only give permissions you hold yourself.",
			"dev.client.grants":                                      "How the client gets tokens",
			"dev.client.grants.help":                                 "The grants this client may use at the token endpoint; any other is refused as unauthorized_client.",
			"dev.grant.authorization_code":                           "Authorization code: people sign in through the browser",
			"dev.grant.refresh_token":                                "Refresh tokens: stay signed in",
			"dev.grant.client_credentials":                           "Client credentials: a service acts for itself (confidential clients)",
			"dev.grant.urn:ietf:params:oauth:grant-type:device_code": "Device code: sign in on a TV, console or command line with a code",
		},
		"de": {
			"dev.client.permscopes":                                  "Berechtigungen für den Client-Credentials-Grant",
			"dev.client.permscopes.help":                             "Berechtigungen wie devices:read oder gps:write, eine pro Zeile, die ein Token des Client-Credentials-Grants haben darf; Sie können nur Berechtigungen vergeben, die Sie selbst haben.",
			"dev.client.grants":                                      "Wie der Client Tokens erhält",
			"dev.client.grants.help":                                 "Die Grants, die dieser Client am Token-Endpunkt nutzen darf; jeder andere wird mit unauthorized_client abgelehnt.",
			"dev.grant.authorization_code":                           "Autorisierungscode: Anmeldung im Browser",
			"dev.grant.refresh_token":                                "Refresh-Tokens: angemeldet bleiben",
			"dev.grant.client_credentials":                           "Client-Credentials: ein Dienst handelt für sich selbst (vertrauliche Clients)",
			"dev.grant.urn:ietf:params:oauth:grant-type:device_code": "Gerätecode: Anmeldung auf Fernseher, Konsole oder Kommandozeile mit einem Code",
		},
	})
}
