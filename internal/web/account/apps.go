package account

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"hmid/internal/authflow"
	"hmid/internal/authn"
	"hmid/internal/oauth"
	"hmid/internal/web"
)

// AppPages is /account/apps: the apps (OAuth clients) the user consented
// to, what each may do in plain words, and revocation. It calls the OAuth
// provider's ListUserConsents and RevokeConsent, as GET and DELETE
// /v1/users/me/consents and GraphQL myOauthConsents and revokeOauthConsent do.
type AppPages struct {
	H     *web.Handler
	OAuth *oauth.Service
}

// appRow is one connected app as the page shows it.
type appRow struct {
	ClientID     string
	Name         string
	LogoURL      string // https only, else "" and the initial is shown
	IsFirstParty bool
	GrantedAt    time.Time
	Scopes       []authflow.Scope // descriptions in the page's language
}

// List is GET /account/apps.
func (ap *AppPages) List(w http.ResponseWriter, r *http.Request) {
	ap.render(w, r, http.StatusOK, "")
}

func (ap *AppPages) render(w http.ResponseWriter, r *http.Request, status int, errText string) {
	p := authn.From(r.Context())
	list, err := ap.OAuth.ListUserConsents(r.Context(), p.UserID)
	if err != nil {
		ap.H.Fail(w, r, err)
		return
	}
	lang := ap.H.UserLanguage(r, p)
	// Scopes are listed in the provider's order (openid first), unknown ones last.
	known, order := map[string]string{}, map[string]int{}
	for i, s := range oauth.Scopes() {
		known[s.Name], order[s.Name] = s.Description, i+1
	}
	rank := func(s string) int {
		if n, ok := order[s]; ok {
			return n
		}
		return len(order) + 1
	}
	rows := make([]appRow, len(list))
	for i, c := range list {
		rows[i] = appRow{ClientID: c.ClientID, Name: c.ClientName, IsFirstParty: c.IsFirstParty, GrantedAt: c.GrantedAt}
		// Only https logos are shown, as on the consent page (the CSP allows no other source).
		if c.LogoURL != nil && strings.HasPrefix(*c.LogoURL, "https://") {
			rows[i].LogoURL = *c.LogoURL
		}
		scopes := slices.Clone(c.Scopes)
		slices.SortStableFunc(scopes, func(a, b string) int { return cmp.Compare(rank(a), rank(b)) })
		for _, s := range scopes {
			rows[i].Scopes = append(rows[i].Scopes, authflow.Scope{Name: s, Description: web.ScopeText(lang, s, cmp.Or(known[s], s))})
		}
	}
	ap.H.Console(w, r, status, "account_apps", web.ConsoleView{Title: "title.apps", Section: "apps", Error: errText, Data: rows})
}

// Revoke is POST /account/apps/{client_id}/revoke: the consent is deleted
// and every token the app holds for the user revoked.
func (ap *AppPages) Revoke(w http.ResponseWriter, r *http.Request) {
	ap.H.Act(w, r, web.Action{To: "/account/apps",
		Call: func(p *authn.Principal) (string, error) {
			return "apps.revoked", ap.OAuth.RevokeConsent(r.Context(), p.UserID, chi.URLParam(r, "client_id"), oauth.MetaFrom(r))
		},
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			status, text := ap.H.PageRefusal(w, r, err)
			ap.render(w, r, status, text)
		}})
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"title.apps":         "Connected apps",
			"apps.intro":         "These apps can use your account because you allowed them to. Disconnect an app you no longer use: it loses access at once, and it must ask you again before it can sign you in.",
			"apps.granted":       "Allowed on %s",
			"apps.firstparty":    "Built-in app",
			"apps.can":           "It can:",
			"apps.noscopes":      "Only sign you in.",
			"apps.revoke":        "Disconnect",
			"apps.revokeconfirm": "Disconnect this app? It loses access to your account at once.",
			"apps.none":          "No apps are connected to your account.",
			"apps.revoked":       "The app was disconnected. It can no longer use your account.",
		},
		"de": {
			"title.apps":         "Verbundene Apps",
			"apps.intro":         "Diese Apps dürfen Ihr Konto verwenden, weil Sie es ihnen erlaubt haben. Trennen Sie Apps, die Sie nicht mehr nutzen: Die App verliert sofort den Zugriff und muss Sie erneut fragen, bevor sie Sie anmelden kann.",
			"apps.granted":       "Erlaubt am %s",
			"apps.firstparty":    "Eingebaute App",
			"apps.can":           "Sie darf:",
			"apps.noscopes":      "Sie nur anmelden.",
			"apps.revoke":        "Trennen",
			"apps.revokeconfirm": "Diese App trennen? Sie verliert sofort den Zugriff auf Ihr Konto.",
			"apps.none":          "Mit Ihrem Konto sind keine Apps verbunden.",
			"apps.revoked":       "Die App wurde getrennt. Sie kann Ihr Konto nicht mehr verwenden.",
		},
	})
}
