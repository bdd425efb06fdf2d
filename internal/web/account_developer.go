package web

import (
	"net/http"

	"hmid/internal/access"
	"hmid/internal/authn"
	"hmid/internal/httpx"
	"hmid/internal/oauth"
)

// DeveloperPages is /account/developer: the caller's OAuth clients and API
// keys. The pages of one client and one key, and their actions, are those
// of credentials.go, kept under /account/developer; every route in
// internal/app/routes.go has the rule of the REST route whose service
// function its action calls.
type DeveloperPages struct {
	CredentialPages
}

// NewDeveloperPages returns the pages of /account/developer, on the
// services of /v1/oauth/clients and /v1/api-keys.
func NewDeveloperPages(h *Handler, o *oauth.Service, a *access.Service) *DeveloperPages {
	return &DeveloperPages{CredentialPages{H: h, OAuth: o, Access: a, Site: developerSite}}
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
	Keys         []KeyRow
	KeysTotal    int
}

// List is GET /account/developer.
func (dp *DeveloperPages) List(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	pg := httpx.Page{Page: 1, Limit: developerListLimit}
	clients, total, err := dp.OAuth.ListClients(ctx, p, false, pg)
	if err != nil {
		dp.H.Fail(w, r, err)
		return
	}
	v := developerList{Clients: clients, ClientsTotal: total, ShowKeys: p.Can(keysRead), CreateKeys: p.Can(KeysWrite)}
	if v.ShowKeys {
		keys, total, err := dp.Access.ListKeys(ctx, p, p.UserID, pg)
		if err != nil {
			dp.H.Fail(w, r, err)
			return
		}
		for _, k := range keys {
			v.Keys = append(v.Keys, KeyRow{APIKey: k, Expired: dp.Expired(k)})
		}
		v.KeysTotal = total
	}
	dp.H.Console(w, r, http.StatusOK, "account_developer", ConsoleView{Title: "title.developer", Section: "developer", Data: v})
}

func init() {
	AddMessages(map[string]map[string]string{
		"en": {
			"title.developer":              "Developer",
			"title.devclient":              "OAuth client",
			"title.devclient.new":          "Register an OAuth client",
			"title.devkey":                 "API key",
			"title.devkey.new":             "Create an API key",
			"dev.intro":                    "Register apps that sign people in with their hmid account, and create API keys for your scripts and services.",
			"dev.back":                     "All clients and keys",
			"dev.manage":                   "Manage",
			"dev.created":                  "Created",
			"dev.updated":                  "Last changed",
			"dev.inactive":                 "Inactive",
			"dev.expired":                  "Expired",
			"dev.firstparty":               "First party",
			"dev.more":                     "Showing the newest %d of %d. The API lists all of them.",
			"dev.copy":                     "Copy",
			"dev.copied":                   "Copied",
			"dev.save":                     "Save changes",
			"dev.fixfield":                 "Please correct the marked field below. Nothing was saved.",
			"dev.confirm.missing":          "Tick the box to confirm.",
			"dev.clients":                  "Your OAuth clients",
			"dev.clients.intro":            "Apps and websites that let people sign in with their hmid account (OAuth 2.0 and OpenID Connect).",
			"dev.clients.none":             "You have not registered a client yet.",
			"dev.client.new":               "Register a client",
			"dev.client.details":           "About the client",
			"dev.client.edit":              "Settings",
			"dev.client.name":              "Name",
			"dev.client.id":                "Client ID",
			"dev.client.description":       "Description",
			"dev.client.redirects":         "Redirect URIs",
			"dev.client.logout":            "Logout",
			"dev.client.postlogout":        "Post-logout redirect URIs",
			"dev.client.postlogout.help":   "Optional, one per line: where your app may send people after they log out of hmid (OpenID Connect RP-Initiated Logout). Each must match exactly.",
			"dev.client.backchannel":       "Back-channel logout URI",
			"dev.client.backchannel.help":  "Optional: hmid posts a signed logout token here when a session your app got tokens from ends. Needs RS256 or ES256 ID tokens, and a host hmid may reach: internal addresses such as 127.0.0.1 or 10.x are refused.",
			"dev.client.redirects.help":    "One per line, exactly as your app sends them: https://…, http://localhost… while developing, http://127.0.0.1/callback for desktop and command-line apps (any port matches), or an app scheme such as com.example.app:/callback.",
			"dev.client.type":              "Client type",
			"dev.type.confidential":        "Confidential",
			"dev.type.public":              "Public",
			"dev.type.confidential.help":   "Runs on a server that can keep a secret. It gets a client secret.",
			"dev.type.public.help":         "Runs in a browser or on a phone and cannot keep a secret. It gets no secret and must use PKCE.",
			"dev.client.auth":              "Signs in at the token endpoint with",
			"dev.client.auth.confidential": "its client ID and secret (client_secret_basic or client_secret_post)",
			"dev.client.auth.public":       "its client ID and PKCE, no secret",
			"dev.client.scopes":            "What the client may ask people for",
			"dev.client.links":             "Shown on the consent screen (optional)",
			"dev.client.homepage":          "Homepage URL",
			"dev.client.logo":              "Logo URL",
			"dev.client.privacy":           "Privacy policy URL",
			"dev.client.terms":             "Terms of service URL",
			"dev.client.alg":               "ID token signature",
			"dev.client.alg.help":          "HS256 signs ID tokens with the client secret; RS256 and ES256 sign them with hmid's keys, which anyone can check with /v1/oauth/jwks.",
			"dev.client.active":            "Active",
			"dev.client.active.help":       "An inactive client cannot sign anyone in; turning it off revokes every token it holds.",
			"dev.client.firstparty":        "First-party client",
			"dev.client.firstparty.help":   "For hmid's own apps only: people are not asked for consent. A first-party client can no longer be changed or deleted.",
			"dev.client.create":            "Register client",
			"dev.client.updated":           "The client was saved.",
			"dev.client.delete":            "Delete client",
			"dev.client.delete.help":       "The client stops working at once: every token it was given is refused, and the consents people gave it are deleted.",
			"dev.client.delete.check":      "Yes, delete this client",
			"dev.client.delete.confirm":    "Delete this client? Apps using it stop working at once.",
			"dev.client.deleted":           "The client was deleted.",
			"dev.firstparty.locked":        "This is a first-party client: it cannot be changed or deleted here.",
			"dev.secret.title":             "Copy the client secret now",
			"dev.secret.once":              "This is the only time the secret is shown. Store it in your app's configuration; if you lose it, generate a new one.",
			"dev.secret.label":             "Client secret",
			"dev.secret.regen":             "Generate a new secret",
			"dev.secret.regen.help":        "The current secret stops working at once. Use this if the secret was lost or may be known to others.",
			"dev.secret.regen.check":       "Yes, the current secret may stop working",
			"dev.secret.regen.confirm":     "Generate a new secret? The current one stops working at once.",
			"dev.keys":                     "Your API keys",
			"dev.keys.intro":               "Keys let your scripts and services call the hmid API as you, with only the permissions you give them.",
			"dev.keys.none":                "You have no API keys.",
			"dev.key.new":                  "Create an API key",
			"dev.key.details":              "About the key",
			"dev.key.name":                 "Name",
			"dev.key.name.help":            "Something that tells you later where the key is used, such as “Backup script”.",
			"dev.key.description":          "Description (optional)",
			"dev.key.prefix":               "Key",
			"dev.key.scopes":               "Permissions",
			"dev.key.scopes.help":          "The key can do only what you tick here, and never more than you may do yourself.",
			"dev.key.noscopes":             "None",
			"dev.key.expires":              "Expires",
			"dev.key.expires.help":         "The key stops working at the end of this day (UTC). Leave empty for a key that does not expire.",
			"dev.key.never":                "Never",
			"dev.key.used":                 "Last used",
			"dev.key.unused":               "Not used yet",
			"dev.key.system":               "System key",
			"dev.key.create":               "Create key",
			"dev.key.secret.title":         "Copy the API key now",
			"dev.key.secret.once":          "This is the only time the key is shown. Store it somewhere safe; if you lose it, generate a new one.",
			"dev.key.secret.label":         "API key",
			"dev.key.secret.use":           "Send it in each request's header:",
			"dev.key.roles":                "Roles",
			"dev.key.roles.help":           "A key also holds the permissions of its roles, never more than you hold. You can give it roles you have yourself.",
			"dev.key.roles.none":           "The key has no roles.",
			"dev.key.roles.nomore":         "There is no other role you can give this key.",
			"dev.key.role":                 "Role",
			"dev.key.role.add":             "Give the key a role",
			"dev.key.role.addbutton":       "Add role",
			"dev.key.role.remove":          "Remove",
			"dev.key.roleadded":            "The role was added to the key.",
			"dev.key.roleremoved":          "The role was removed from the key.",
			"dev.key.regen":                "Generate a new key",
			"dev.key.regen.help":           "The key keeps its name, permissions and roles, but the current value stops working at once.",
			"dev.key.regen.check":          "Yes, the current key may stop working",
			"dev.key.regen.confirm":        "Generate a new key? The current one stops working at once.",
			"dev.key.delete":               "Delete key",
			"dev.key.delete.help":          "Anything using the key is refused from now on.",
			"dev.key.delete.check":         "Yes, delete this key",
			"dev.key.delete.confirm":       "Delete this API key? Anything using it is refused from now on.",
			"dev.key.deleted":              "The API key was deleted.",
		},
		"de": {
			"title.developer":              "Entwickler",
			"title.devclient":              "OAuth-Client",
			"title.devclient.new":          "OAuth-Client registrieren",
			"title.devkey":                 "API-Schlüssel",
			"title.devkey.new":             "API-Schlüssel erstellen",
			"dev.intro":                    "Registrieren Sie Anwendungen, bei denen man sich mit dem hmid-Konto anmeldet, und erstellen Sie API-Schlüssel für Ihre Skripte und Dienste.",
			"dev.back":                     "Alle Clients und Schlüssel",
			"dev.manage":                   "Verwalten",
			"dev.created":                  "Erstellt",
			"dev.updated":                  "Zuletzt geändert",
			"dev.inactive":                 "Inaktiv",
			"dev.expired":                  "Abgelaufen",
			"dev.firstparty":               "Eigene Anwendung",
			"dev.more":                     "Die neuesten %d von %d werden gezeigt. Die API listet alle.",
			"dev.copy":                     "Kopieren",
			"dev.copied":                   "Kopiert",
			"dev.save":                     "Änderungen speichern",
			"dev.fixfield":                 "Bitte korrigieren Sie das markierte Feld unten. Es wurde nichts gespeichert.",
			"dev.confirm.missing":          "Setzen Sie das Häkchen zur Bestätigung.",
			"dev.clients":                  "Ihre OAuth-Clients",
			"dev.clients.intro":            "Anwendungen und Websites, bei denen man sich mit dem hmid-Konto anmelden kann (OAuth 2.0 und OpenID Connect).",
			"dev.clients.none":             "Sie haben noch keinen Client registriert.",
			"dev.client.new":               "Client registrieren",
			"dev.client.details":           "Angaben zum Client",
			"dev.client.edit":              "Einstellungen",
			"dev.client.name":              "Name",
			"dev.client.id":                "Client-ID",
			"dev.client.description":       "Beschreibung",
			"dev.client.redirects":         "Weiterleitungs-URIs",
			"dev.client.logout":            "Abmelden",
			"dev.client.postlogout":        "Weiterleitungs-URIs nach dem Abmelden",
			"dev.client.postlogout.help":   "Optional, eine pro Zeile: wohin Ihre Anwendung Personen nach dem Abmelden bei hmid schicken darf (OpenID Connect RP-Initiated Logout). Jede muss genau übereinstimmen.",
			"dev.client.backchannel":       "Back-Channel-Logout-URI",
			"dev.client.backchannel.help":  "Optional: hmid sendet hierhin ein signiertes Logout-Token, wenn eine Sitzung endet, aus der Ihre Anwendung Tokens erhalten hat. Erfordert RS256- oder ES256-ID-Tokens und einen Host, den hmid erreichen darf: interne Adressen wie 127.0.0.1 oder 10.x werden abgelehnt.",
			"dev.client.redirects.help":    "Eine pro Zeile, genau so, wie Ihre Anwendung sie sendet: https://…, http://localhost… beim Entwickeln, http://127.0.0.1/callback für Desktop- und Kommandozeilen-Anwendungen (jeder Port passt) oder ein App-Schema wie com.example.app:/callback.",
			"dev.client.type":              "Client-Typ",
			"dev.type.confidential":        "Vertraulich",
			"dev.type.public":              "Öffentlich",
			"dev.type.confidential.help":   "Läuft auf einem Server, der ein Geheimnis bewahren kann. Er erhält ein Client-Geheimnis.",
			"dev.type.public.help":         "Läuft im Browser oder auf dem Telefon und kann kein Geheimnis bewahren. Er erhält keines und muss PKCE verwenden.",
			"dev.client.auth":              "Meldet sich am Token-Endpunkt an mit",
			"dev.client.auth.confidential": "Client-ID und Geheimnis (client_secret_basic oder client_secret_post)",
			"dev.client.auth.public":       "Client-ID und PKCE, ohne Geheimnis",
			"dev.client.scopes":            "Was der Client erfragen darf",
			"dev.client.links":             "Auf der Zustimmungsseite gezeigt (optional)",
			"dev.client.homepage":          "Adresse der Startseite",
			"dev.client.logo":              "Adresse des Logos",
			"dev.client.privacy":           "Adresse der Datenschutzerklärung",
			"dev.client.terms":             "Adresse der Nutzungsbedingungen",
			"dev.client.alg":               "Signatur des ID-Tokens",
			"dev.client.alg.help":          "HS256 signiert ID-Tokens mit dem Client-Geheimnis; RS256 und ES256 mit den Schlüsseln von hmid, die jeder über /v1/oauth/jwks prüfen kann.",
			"dev.client.active":            "Aktiv",
			"dev.client.active.help":       "Ein inaktiver Client kann niemanden anmelden; beim Abschalten werden alle seine Tokens widerrufen.",
			"dev.client.firstparty":        "Eigene Anwendung (First Party)",
			"dev.client.firstparty.help":   "Nur für die Anwendungen von hmid selbst: Niemand wird um Zustimmung gebeten. Eine eigene Anwendung kann danach nicht mehr geändert oder gelöscht werden.",
			"dev.client.create":            "Client registrieren",
			"dev.client.updated":           "Der Client wurde gespeichert.",
			"dev.client.delete":            "Client löschen",
			"dev.client.delete.help":       "Der Client funktioniert sofort nicht mehr: Alle Tokens, die er erhalten hat, werden abgewiesen, und die Zustimmungen zu ihm werden gelöscht.",
			"dev.client.delete.check":      "Ja, diesen Client löschen",
			"dev.client.delete.confirm":    "Diesen Client löschen? Anwendungen, die ihn verwenden, funktionieren sofort nicht mehr.",
			"dev.client.deleted":           "Der Client wurde gelöscht.",
			"dev.firstparty.locked":        "Dies ist eine eigene Anwendung von hmid: Sie kann hier nicht geändert oder gelöscht werden.",
			"dev.secret.title":             "Kopieren Sie jetzt das Client-Geheimnis",
			"dev.secret.once":              "Das Geheimnis wird nur dieses eine Mal gezeigt. Hinterlegen Sie es in der Konfiguration Ihrer Anwendung; geht es verloren, erzeugen Sie ein neues.",
			"dev.secret.label":             "Client-Geheimnis",
			"dev.secret.regen":             "Neues Geheimnis erzeugen",
			"dev.secret.regen.help":        "Das bisherige Geheimnis funktioniert sofort nicht mehr. Nutzen Sie dies, wenn es verloren ging oder anderen bekannt sein könnte.",
			"dev.secret.regen.check":       "Ja, das bisherige Geheimnis darf ungültig werden",
			"dev.secret.regen.confirm":     "Neues Geheimnis erzeugen? Das bisherige funktioniert sofort nicht mehr.",
			"dev.keys":                     "Ihre API-Schlüssel",
			"dev.keys.intro":               "Mit Schlüsseln rufen Ihre Skripte und Dienste die hmid-API in Ihrem Namen auf, nur mit den Berechtigungen, die Sie ihnen geben.",
			"dev.keys.none":                "Sie haben keine API-Schlüssel.",
			"dev.key.new":                  "API-Schlüssel erstellen",
			"dev.key.details":              "Angaben zum Schlüssel",
			"dev.key.name":                 "Name",
			"dev.key.name.help":            "Etwas, woran Sie später erkennen, wo der Schlüssel verwendet wird, etwa „Sicherungsskript“.",
			"dev.key.description":          "Beschreibung (optional)",
			"dev.key.prefix":               "Schlüssel",
			"dev.key.scopes":               "Berechtigungen",
			"dev.key.scopes.help":          "Der Schlüssel darf nur, was Sie hier ankreuzen, und nie mehr, als Sie selbst dürfen.",
			"dev.key.noscopes":             "Keine",
			"dev.key.expires":              "Läuft ab",
			"dev.key.expires.help":         "Der Schlüssel funktioniert bis zum Ende dieses Tages (UTC). Leer lassen für einen Schlüssel, der nicht abläuft.",
			"dev.key.never":                "Nie",
			"dev.key.used":                 "Zuletzt verwendet",
			"dev.key.unused":               "Noch nicht verwendet",
			"dev.key.system":               "Systemschlüssel",
			"dev.key.create":               "Schlüssel erstellen",
			"dev.key.secret.title":         "Kopieren Sie jetzt den API-Schlüssel",
			"dev.key.secret.once":          "Der Schlüssel wird nur dieses eine Mal gezeigt. Bewahren Sie ihn sicher auf; geht er verloren, erzeugen Sie einen neuen.",
			"dev.key.secret.label":         "API-Schlüssel",
			"dev.key.secret.use":           "Senden Sie ihn im Header jeder Anfrage:",
			"dev.key.roles":                "Rollen",
			"dev.key.roles.help":           "Ein Schlüssel hat auch die Berechtigungen seiner Rollen, nie mehr als Sie selbst. Sie können ihm Rollen geben, die Sie selbst haben.",
			"dev.key.roles.none":           "Der Schlüssel hat keine Rollen.",
			"dev.key.roles.nomore":         "Es gibt keine weitere Rolle, die Sie diesem Schlüssel geben können.",
			"dev.key.role":                 "Rolle",
			"dev.key.role.add":             "Dem Schlüssel eine Rolle geben",
			"dev.key.role.addbutton":       "Rolle hinzufügen",
			"dev.key.role.remove":          "Entfernen",
			"dev.key.roleadded":            "Die Rolle wurde dem Schlüssel gegeben.",
			"dev.key.roleremoved":          "Die Rolle wurde vom Schlüssel entfernt.",
			"dev.key.regen":                "Neuen Schlüssel erzeugen",
			"dev.key.regen.help":           "Name, Berechtigungen und Rollen bleiben, aber der bisherige Wert funktioniert sofort nicht mehr.",
			"dev.key.regen.check":          "Ja, der bisherige Schlüssel darf ungültig werden",
			"dev.key.regen.confirm":        "Neuen Schlüssel erzeugen? Der bisherige funktioniert sofort nicht mehr.",
			"dev.key.delete":               "Schlüssel löschen",
			"dev.key.delete.help":          "Alles, was den Schlüssel verwendet, wird ab sofort abgewiesen.",
			"dev.key.delete.check":         "Ja, diesen Schlüssel löschen",
			"dev.key.delete.confirm":       "Diesen API-Schlüssel löschen? Alles, was ihn verwendet, wird ab sofort abgewiesen.",
			"dev.key.deleted":              "Der API-Schlüssel wurde gelöscht.",
		},
	})
}
