package account

import (
	"net/http"

	"hmid/internal/access"
	"hmid/internal/authn"
	"hmid/internal/httpx"
	"hmid/internal/oauth"
	"hmid/internal/web"
)

// DeveloperPages is /account/developer: the caller's OAuth clients and API
// keys. The pages of one client and one key, and their actions, are those
// of credentials.go, kept under /account/developer; every route in
// internal/app/routes.go has the rule of the REST route whose service
// function its action calls.
type DeveloperPages struct {
	web.CredentialPages
}

// NewDeveloperPages returns the pages of /account/developer, on the
// services of /v1/oauth/clients and /v1/api-keys.
func NewDeveloperPages(h *web.Handler, o *oauth.Service, a *access.Service) *DeveloperPages {
	return &DeveloperPages{web.CredentialPages{H: h, OAuth: o, Access: a, Site: developerSite}}
}

// developerListLimit is how many clients and keys the overview lists; the
// REST API pages through more.
const developerListLimit = 100

// developerList is the overview page.
type developerList struct {
	Clients      []oauth.Client
	ClientsTotal int
	ShowKeys     bool // the reader may list API keys
	CreateKeys   bool // the reader may create API keys
	Keys         []web.KeyRow
	KeysTotal    int
}

// List is GET /account/developer.
func (dp *DeveloperPages) List(w http.ResponseWriter, r *http.Request) {
	dp.H.Show(w, r, http.StatusOK, "account_developer", web.ConsoleView{Title: "title.developer", Section: "developer"},
		func() (any, error) { return dp.list(r) })
}

// list is the signed-in user's newest clients and, for who may read them,
// API keys.
func (dp *DeveloperPages) list(r *http.Request) (developerList, error) {
	ctx := r.Context()
	p := authn.From(ctx)
	pg := httpx.Page{Page: 1, Limit: developerListLimit}
	clients, total, err := dp.OAuth.ListClients(ctx, p, false, pg)
	if err != nil {
		return developerList{}, err
	}
	v := developerList{Clients: clients, ClientsTotal: total, ShowKeys: p.Can(web.KeysRead), CreateKeys: p.Can(web.KeysWrite)}
	if v.ShowKeys {
		keys, total, err := dp.Access.ListKeys(ctx, p, p.UserID, pg)
		if err != nil {
			return v, err
		}
		for _, k := range keys {
			v.Keys = append(v.Keys, web.KeyRow{APIKey: k, Expired: dp.Expired(k)})
		}
		v.KeysTotal = total
	}
	return v, nil
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"title.developer":           "Developer",
			"dev.intro":                 "Register apps that sign people in with their hmid account, and create API keys for your scripts and services.",
			"dev.more":                  "Showing the newest %d of %d. The API lists all of them.",
			"dev.clients":               "Your OAuth clients",
			"dev.clients.intro":         "Apps and websites that let people sign in with their hmid account (OAuth 2.0 and OpenID Connect).",
			"dev.clients.none":          "You have not registered a client yet.",
			"dev.client.new":            "Register a client",
			"dev.client.delete.help":    "The client stops working at once: every token it was given is refused, and the consents people gave it are deleted.",
			"dev.client.delete.check":   "Yes, delete this client",
			"dev.client.delete.confirm": "Delete this client? Apps using it stop working at once.",
			"dev.secret.regen.help":     "The current secret stops working at once. Use this if the secret was lost or may be known to others.",
			"dev.secret.regen.check":    "Yes, the current secret may stop working",
			"dev.secret.regen.confirm":  "Generate a new secret? The current one stops working at once.",
			"dev.keys":                  "Your API keys",
			"dev.keys.intro":            "Keys let your scripts and services call the hmid API as you, with only the permissions you give them.",
			"dev.key.regen.help":        "The key keeps its name, permissions and roles, but the current value stops working at once.",
			"dev.key.regen.check":       "Yes, the current key may stop working",
			"dev.key.regen.confirm":     "Generate a new key? The current one stops working at once.",
			"dev.key.delete.help":       "Anything using the key is refused from now on.",
			"dev.key.delete.check":      "Yes, delete this key",
			"dev.key.delete.confirm":    "Delete this API key? Anything using it is refused from now on.",
		},
		"de": {
			"title.developer":           "Entwickler",
			"dev.intro":                 "Registrieren Sie Anwendungen, bei denen man sich mit dem hmid-Konto anmeldet, und erstellen Sie API-Schlüssel für Ihre Skripte und Dienste.",
			"dev.more":                  "Die neuesten %d von %d werden gezeigt. Die API listet alle.",
			"dev.clients":               "Ihre OAuth-Clients",
			"dev.clients.intro":         "Anwendungen und Websites, bei denen man sich mit dem hmid-Konto anmelden kann (OAuth 2.0 und OpenID Connect).",
			"dev.clients.none":          "Sie haben noch keinen Client registriert.",
			"dev.client.new":            "Client registrieren",
			"dev.client.delete.help":    "Der Client funktioniert sofort nicht mehr: Alle Tokens, die er erhalten hat, werden abgewiesen, und die Zustimmungen zu ihm werden gelöscht.",
			"dev.client.delete.check":   "Ja, diesen Client löschen",
			"dev.client.delete.confirm": "Diesen Client löschen? Anwendungen, die ihn verwenden, funktionieren sofort nicht mehr.",
			"dev.secret.regen.help":     "Das bisherige Geheimnis funktioniert sofort nicht mehr. Nutzen Sie dies, wenn es verloren ging oder anderen bekannt sein könnte.",
			"dev.secret.regen.check":    "Ja, das bisherige Geheimnis darf ungültig werden",
			"dev.secret.regen.confirm":  "Neues Geheimnis erzeugen? Das bisherige funktioniert sofort nicht mehr.",
			"dev.keys":                  "Ihre API-Schlüssel",
			"dev.keys.intro":            "Mit Schlüsseln rufen Ihre Skripte und Dienste die hmid-API in Ihrem Namen auf, nur mit den Berechtigungen, die Sie ihnen geben.",
			"dev.key.regen.help":        "Name, Berechtigungen und Rollen bleiben, aber der bisherige Wert funktioniert sofort nicht mehr.",
			"dev.key.regen.check":       "Ja, der bisherige Schlüssel darf ungültig werden",
			"dev.key.regen.confirm":     "Neuen Schlüssel erzeugen? Der bisherige funktioniert sofort nicht mehr.",
			"dev.key.delete.help":       "Alles, was den Schlüssel verwendet, wird ab sofort abgewiesen.",
			"dev.key.delete.check":      "Ja, diesen Schlüssel löschen",
			"dev.key.delete.confirm":    "Diesen API-Schlüssel löschen? Alles, was ihn verwendet, wird ab sofort abgewiesen.",
		},
	})
}

// developerSite is /account/developer.
var developerSite = &web.CredentialSite{
	Clients: "/account/developer/clients", Keys: "/account/developer/keys",
	ClientsHome: "/account/developer", KeysHome: "/account/developer", ClientsBack: "dev.back", KeysBack: "dev.back",
	Source: web.Source, ClientSection: "developer", KeySection: "developer",
	ClientPage: "account_developer_client", KeyPage: "account_developer_key",
	ClientTitle: "title.devclient", NewClientTitle: "title.devclient.new", KeyTitle: "title.devkey", NewKeyTitle: "title.devkey.new",
}
