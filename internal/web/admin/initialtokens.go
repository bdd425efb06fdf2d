package admin

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"hmid/internal/authn"
	"hmid/internal/httpx"
	"hmid/internal/oauth"
	"hmid/internal/web"
)

// initialTokens is the panel of /admin/clients for dynamic registration:
// the initial access tokens (RFC 7591 §3) and the form that makes one.
// Only readers who may make them (the rule of POST
// /v1/oauth/initial-access-tokens) see it, and only while registration is on.
type initialTokens struct {
	Show   bool
	Mode   string // token or open
	Tokens []oauth.InitialAccessToken
	Scopes []string
	// New is a token just made, shown this once; Err a refused form.
	New    *oauth.InitialAccessToken
	Err    web.FormError
	Fields initialTokenFields
}

// initialTokenFields are the values of the form as sent.
type initialTokenFields struct {
	Name, MaxClients, ExpiresInHours string
	Scopes                           []string
}

// mayManageInitialTokens is the rule of the initial-access-token routes
// (Perm("*:*") in routes.go), to show the panel only to those it admits.
func mayManageInitialTokens(p *authn.Principal) bool { return p.Can("*:*") }

// initialTokensPanel loads the panel for the reader of r.
func (ap *CredentialPages) initialTokensPanel(r *http.Request) (initialTokens, error) {
	v := initialTokens{Mode: ap.OAuth.RegistrationMode(), Scopes: oauth.ScopeNames(), Fields: initialTokenFields{MaxClients: "1"}}
	if v.Mode == oauth.RegistrationOff || !mayManageInitialTokens(authn.From(r.Context())) {
		return v, nil
	}
	v.Show = true
	tokens, _, err := ap.OAuth.ListInitialTokens(r.Context(), httpx.Page{Page: 1, Limit: 50})
	v.Tokens = tokens
	return v, err
}

// CreateInitialToken is POST /admin/clients/initial-tokens: it makes an
// initial access token and answers the client list with the token, shown
// this once.
func (ap *CredentialPages) CreateInitialToken(w http.ResponseWriter, r *http.Request) {
	p := ap.H.ConsolePost(w, r)
	if p == nil {
		return
	}
	f := initialTokenFields{Name: r.PostFormValue("name"), MaxClients: r.PostFormValue("max_clients"),
		ExpiresInHours: r.PostFormValue("expires_in_hours"), Scopes: r.PostForm["allowed_scopes"]}
	in := oauth.InitialTokenInput{Name: f.Name, AllowedScopes: f.Scopes}
	var err error
	if in.MaxClients, err = formInt(f.MaxClients, "max_clients"); err == nil {
		in.ExpiresInHours, err = formInt(f.ExpiresInHours, "expires_in_hours")
	}
	var made oauth.InitialAccessToken
	if err == nil {
		made, err = ap.OAuth.CreateInitialToken(r.Context(), p, in)
	}
	status, text := http.StatusOK, ""
	var fe web.FormError
	if err != nil {
		status, text, fe = ap.H.FormRefusal(w, r, err, "dev.fixfield")
	}
	ap.renderList(w, r, status, text, func(v *initialTokens) {
		if err != nil {
			v.Err, v.Fields = fe, f
			return
		}
		v.New = &made
	})
}

// formInt reads a whole number field ("" is 0).
func formInt(s, field string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, &web.Invalid{Field: field, Key: "admin.iat.number"}
	}
	return n, nil
}

// RevokeInitialToken is POST /admin/clients/initial-tokens/{id}/revoke.
func (ap *CredentialPages) RevokeInitialToken(w http.ResponseWriter, r *http.Request) {
	ap.H.Act(w, r, web.Action{To: "/admin/clients",
		Call: func(*authn.Principal) (string, error) {
			return "admin.iat.revoked", ap.OAuth.RevokeInitialToken(r.Context(), chi.URLParam(r, "id"))
		},
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) { ap.H.Fail(w, r, err) }})
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"admin.iat.title":       "Initial access tokens",
			"admin.iat.intro.token": "Dynamic registration needs one of these tokens (Authorization: Bearer). Each registers at most its number of clients, with scopes within its own.",
			"admin.iat.intro.open":  "Dynamic registration is open to anyone; these tokens are not needed, but clients registered with one do not expire.",
			"admin.iat.name":        "Name",
			"admin.iat.max":         "Clients it may register",
			"admin.iat.used":        "Registered",
			"admin.iat.scopes":      "Scopes its clients may hold (none ticked: any)",
			"admin.iat.expires":     "Valid for hours (0: no expiry)",
			"admin.iat.expiry":      "Expires",
			"admin.iat.never":       "never",
			"admin.iat.status":      "Status",
			"admin.iat.live":        "usable",
			"admin.iat.revoked.b":   "revoked",
			"admin.iat.create":      "Make a token",
			"admin.iat.revoke":      "Revoke",
			"admin.iat.once":        "Copy the token now: it is shown only this once.",
			"admin.iat.number":      "Enter a whole number.",
			"admin.iat.revoked":     "The initial access token was revoked.",
			"admin.iat.none":        "No initial access tokens yet.",
		},
		"de": {
			"admin.iat.title":       "Initial-Access-Tokens",
			"admin.iat.intro.token": "Die dynamische Registrierung braucht eines dieser Tokens (Authorization: Bearer). Jedes registriert höchstens seine Anzahl Clients, mit Scopes innerhalb seiner eigenen.",
			"admin.iat.intro.open":  "Die dynamische Registrierung steht allen offen; diese Tokens sind nicht nötig, aber mit einem registrierte Clients laufen nicht ab.",
			"admin.iat.name":        "Name",
			"admin.iat.max":         "Clients, die es registrieren darf",
			"admin.iat.used":        "Registriert",
			"admin.iat.scopes":      "Scopes, die seine Clients haben dürfen (keiner angehakt: alle)",
			"admin.iat.expires":     "Gültig für Stunden (0: unbegrenzt)",
			"admin.iat.expiry":      "Läuft ab",
			"admin.iat.never":       "nie",
			"admin.iat.status":      "Status",
			"admin.iat.live":        "nutzbar",
			"admin.iat.revoked.b":   "widerrufen",
			"admin.iat.create":      "Token erstellen",
			"admin.iat.revoke":      "Widerrufen",
			"admin.iat.once":        "Kopieren Sie das Token jetzt: Es wird nur dieses eine Mal angezeigt.",
			"admin.iat.number":      "Geben Sie eine ganze Zahl ein.",
			"admin.iat.revoked":     "Das Initial-Access-Token wurde widerrufen.",
			"admin.iat.none":        "Noch keine Initial-Access-Tokens.",
		},
	})
}
