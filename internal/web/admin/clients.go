package admin

import (
	"net/http"
	"strconv"

	"hmid/internal/access"
	"hmid/internal/authn"
	"hmid/internal/httpx"
	"hmid/internal/oauth"
	"hmid/internal/web"
)

// adminSite keeps the admin console's client and key pages at
// /admin/clients and /admin/api-keys.
var adminSite = &web.CredentialSite{
	Admin:   true,
	Clients: "/admin/clients", Keys: "/admin/api-keys",
	ClientsHome: "/admin/clients", KeysHome: "/admin/api-keys", ClientsBack: "admin.clients.back", KeysBack: "admin.apikeys.back",
	Source: adminSource, ClientSection: "clients", KeySection: "api-keys",
	ClientPage: "admin_client", KeyPage: "admin_api_key",
	ClientTitle: "admin.clients.title.client", NewClientTitle: "admin.clients.title.new",
	KeyTitle: "admin.apikeys.title.key", NewKeyTitle: "admin.apikeys.title.new",
}

// adminListLimit is the default page size of the admin lists; ?limit=
// asks for 1 to 100, as the REST lists accept.
const adminListLimit = 20

// CredentialPages is /admin/clients and /admin/api-keys: every OAuth
// client, and the API keys GET /v1/api-keys lists for the reader (every key
// for super admins). The pages of one client and one key are those of
// credentials.go, with the owner shown, switches to deactivate and activate,
// and the system-key box for super admins. Each route in
// internal/app/routes.go has the rule of the REST route whose service
// function its action calls: the client list that of GET
// /v1/oauth/clients/all (oauth_clients:read), the client pages those of
// /v1/oauth/clients (signed in; the service checks ownership or the
// oauth_clients permissions, and lets only super admins set the
// first-party flag), the key pages those of /v1/api-keys.
type CredentialPages struct {
	web.CredentialPages
}

// NewCredentialPages returns the pages of /admin/clients and
// /admin/api-keys, on the services of /v1/oauth/clients and /v1/api-keys.
func NewCredentialPages(h *web.Handler, o *oauth.Service, a *access.Service) *CredentialPages {
	return &CredentialPages{web.CredentialPages{H: h, OAuth: o, Access: a, Site: adminSite}}
}

// adminPager is the paging of an admin list: page Page of TotalPages, with
// links to the neighbours that keep the list's other query parameters.
type adminPager struct {
	Page, TotalPages, Total int
	From, To                int // the rows shown, counted from 1
	Prev, Next              string
	// First leads back to page 1 when the page asked for is past the end.
	First string
}

// newPager is the pager of the list of r at path, showing shown rows of
// total on page pg.
func newPager(r *http.Request, path string, pg httpx.Page, total, shown int) adminPager {
	link := func(n int) string { return web.WithParam(path, r.URL.Query(), "page", strconv.Itoa(n)) }
	v := adminPager{Page: pg.Page, TotalPages: pg.TotalPages(total), Total: total}
	if shown > 0 {
		v.From, v.To = pg.Offset()+1, pg.Offset()+shown
	} else if total > 0 {
		v.First = link(1)
	}
	if v.Page > 1 && v.Page <= v.TotalPages {
		v.Prev = link(v.Page - 1)
	}
	if v.Page < v.TotalPages {
		v.Next = link(v.Page + 1)
	}
	return v
}

// pageNav is the navigation of a paged list that shows no counts (the
// roles and the tracking pages): links to the neighbouring
// pages ("" at the ends), where the reader is, and the message key of what
// is paged (for the navigation's label).
type pageNav struct {
	Prev, Next  string
	Page, Pages int
	Of          string
}

// newPageNav builds the navigation of pg among total items of the list
// named by the message key of; link returns the URL of page n.
func newPageNav(pg httpx.Page, total int, of string, link func(n int) string) pageNav {
	nav := pageNav{Page: pg.Page, Pages: pg.TotalPages(total), Of: of}
	if pg.Page > 1 {
		nav.Prev = link(min(pg.Page-1, nav.Pages))
	}
	if pg.Page < nav.Pages {
		nav.Next = link(pg.Page + 1)
	}
	return nav
}

// owners looks up the owners of a list's rows, each once.
type owners struct {
	cp   *web.CredentialPages
	r    *http.Request
	seen map[string]web.Owner
}

// of is the owner with user id id (nil: none).
func (o *owners) of(id *string) web.Owner {
	if id == nil {
		return web.Owner{}
	}
	got, ok := o.seen[*id]
	if !ok {
		got = o.cp.OwnerOf(o.r, id)
		o.seen[*id] = got
	}
	return got
}

// adminClientRow is one client of the list.
type adminClientRow struct {
	oauth.Client
	Owner web.Owner
}

// adminClientList is the data of /admin/clients.
type adminClientList struct {
	Clients []adminClientRow
	Pager   adminPager
	// Tokens is the panel of initial access tokens (initialtokens.go).
	Tokens initialTokens
}

// ListClients is GET /admin/clients: every client, newest first, paged by
// ?page= and ?limit= as GET /v1/oauth/clients/all.
func (ap *CredentialPages) ListClients(w http.ResponseWriter, r *http.Request) {
	ap.renderList(w, r, http.StatusOK, "", nil)
}

// renderList renders /admin/clients with status and errText above it;
// edit, when set, changes the initial-access-token panel (a form's answer).
func (ap *CredentialPages) renderList(w http.ResponseWriter, r *http.Request, status int, errText string, edit func(*initialTokens)) {
	ap.H.Show(w, r, status, "admin_clients", web.ConsoleView{Title: "admin.clients.title", Section: "clients", Error: errText},
		func() (any, error) { return ap.clientList(r, edit) })
}

// clientList is the page of clients the query asks for, with their owners,
// and the initial-access-token panel, changed by edit when set.
func (ap *CredentialPages) clientList(r *http.Request, edit func(*initialTokens)) (v adminClientList, err error) {
	pg := httpx.ParsePage(r, adminListLimit)
	clients, total, err := ap.OAuth.ListClients(r.Context(), authn.From(r.Context()), true, pg)
	if err != nil {
		return v, err
	}
	o := owners{cp: &ap.CredentialPages, r: r, seen: map[string]web.Owner{}}
	v = adminClientList{Pager: newPager(r, "/admin/clients", pg, total, len(clients))}
	for _, c := range clients {
		v.Clients = append(v.Clients, adminClientRow{Client: c, Owner: o.of(c.OwnerID)})
	}
	if v.Tokens, err = ap.initialTokensPanel(r); err != nil {
		return v, err
	}
	if edit != nil {
		edit(&v.Tokens)
	}
	return v, nil
}

// adminKeyRow is one key of the list.
type adminKeyRow struct {
	web.KeyRow
	Owner web.Owner
}

// adminKeyList is the data of /admin/api-keys.
type adminKeyList struct {
	Keys  []adminKeyRow
	Pager adminPager
	// All says the reader sees every key (super admins and system keys);
	// anyone else sees their own, as GET /v1/api-keys shows them.
	All bool
	// Of is the owner the list is filtered by (?user_id=), when it is.
	Of     *web.Owner
	Create bool // the reader may create keys
}

// ListKeys is GET /admin/api-keys: the keys GET /v1/api-keys lists for the
// reader, newest first, paged by ?page= and ?limit= and, for super admins,
// filtered by ?user_id=.
func (ap *CredentialPages) ListKeys(w http.ResponseWriter, r *http.Request) {
	p := authn.From(r.Context())
	pg := httpx.ParsePage(r, adminListLimit)
	userID := r.URL.Query().Get("user_id")
	keys, total, err := ap.Access.ListKeys(r.Context(), p, userID, pg)
	if err != nil {
		ap.H.Fail(w, r, err)
		return
	}
	o := owners{cp: &ap.CredentialPages, r: r, seen: map[string]web.Owner{}}
	v := adminKeyList{Pager: newPager(r, "/admin/api-keys", pg, total, len(keys)), All: p.IsAdmin(), Create: p.Can(web.KeysWrite)}
	if v.All && userID != "" {
		of := o.of(&userID)
		v.Of = &of
	}
	for _, k := range keys {
		v.Keys = append(v.Keys, adminKeyRow{KeyRow: web.KeyRow{APIKey: k, Expired: ap.Expired(k)}, Owner: o.of(k.UserID)})
	}
	ap.H.Console(w, r, http.StatusOK, "admin_api_keys", web.ConsoleView{Title: "admin.apikeys.title", Section: "api-keys", Data: v})
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"admin.clients.title":              "OAuth clients",
			"admin.clients.title.client":       "OAuth client",
			"admin.clients.title.new":          "Register an OAuth client",
			"admin.clients.back":               "All OAuth clients",
			"admin.clients.all":                "All clients",
			"admin.clients.intro":              "Every app registered to sign people in with hmid, whoever registered it. Open a client to change it, give it a new secret, deactivate or delete it.",
			"admin.clients.none":               "No OAuth client is registered yet.",
			"admin.clients.new":                "Register a client",
			"admin.clients.status":             "Status",
			"admin.clients.active":             "Active",
			"admin.clients.yes":                "Yes",
			"admin.clients.no":                 "No",
			"admin.clients.deactivate":         "Deactivate client",
			"admin.clients.deactivate.help":    "The client can no longer sign anyone in, and every token it holds is revoked at once. You can activate it again later.",
			"admin.clients.deactivate.check":   "Yes, deactivate this client and revoke its tokens",
			"admin.clients.deactivate.confirm": "Deactivate this client? It stops working and its tokens are revoked.",
			"admin.clients.activate":           "Activate client",
			"admin.clients.activate.help":      "The client is inactive: it cannot sign anyone in. Activate it to let people sign in to it again.",
			"admin.clients.activated":          "The client was activated.",
			"admin.clients.deactivated":        "The client was deactivated and its tokens were revoked.",
			"admin.apikeys.title":              "API keys",
			"admin.apikeys.title.key":          "API key",
			"admin.apikeys.title.new":          "Create an API key",
			"admin.apikeys.back":               "All API keys",
			"admin.apikeys.all":                "All keys",
			"admin.apikeys.own":                "Your keys",
			"admin.apikeys.intro.all":          "The keys of every user and the system keys. Open a key to change its roles, give it a new value, deactivate or delete it.",
			"admin.apikeys.intro.own":          "You see your own keys here: the keys of every user are listed to super admins only.",
			"admin.apikeys.of":                 "Keys of",
			"admin.apikeys.showall":            "Show all keys",
			"admin.apikeys.deactivate":         "Deactivate key",
			"admin.apikeys.deactivate.help":    "Anything using the key is refused until it is activated again.",
			"admin.apikeys.deactivate.check":   "Yes, deactivate this key",
			"admin.apikeys.deactivate.confirm": "Deactivate this API key? Anything using it is refused.",
			"admin.apikeys.activate":           "Activate key",
			"admin.apikeys.activate.help":      "The key is inactive: every request with it is refused. Activate it to let it work again.",
			"admin.apikeys.activated":          "The API key was activated.",
			"admin.apikeys.deactivated":        "The API key was deactivated.",
		},
		"de": {
			"admin.clients.title":              "OAuth-Clients",
			"admin.clients.title.client":       "OAuth-Client",
			"admin.clients.title.new":          "OAuth-Client registrieren",
			"admin.clients.back":               "Alle OAuth-Clients",
			"admin.clients.all":                "Alle Clients",
			"admin.clients.intro":              "Alle Anwendungen, bei denen man sich mit hmid anmeldet, gleich wer sie registriert hat. Öffnen Sie einen Client, um ihn zu ändern, ihm ein neues Secret zu geben, ihn zu deaktivieren oder zu löschen.",
			"admin.clients.none":               "Es ist noch kein OAuth-Client registriert.",
			"admin.clients.new":                "Client registrieren",
			"admin.clients.status":             "Status",
			"admin.clients.active":             "Aktiv",
			"admin.clients.yes":                "Ja",
			"admin.clients.no":                 "Nein",
			"admin.clients.deactivate":         "Client deaktivieren",
			"admin.clients.deactivate.help":    "Der Client kann niemanden mehr anmelden, und alle seine Tokens werden sofort widerrufen. Sie können ihn später wieder aktivieren.",
			"admin.clients.deactivate.check":   "Ja, diesen Client deaktivieren und seine Tokens widerrufen",
			"admin.clients.deactivate.confirm": "Diesen Client deaktivieren? Er funktioniert nicht mehr, und seine Tokens werden widerrufen.",
			"admin.clients.activate":           "Client aktivieren",
			"admin.clients.activate.help":      "Der Client ist inaktiv: Er kann niemanden anmelden. Aktivieren Sie ihn, damit man sich wieder bei ihm anmelden kann.",
			"admin.clients.activated":          "Der Client wurde aktiviert.",
			"admin.clients.deactivated":        "Der Client wurde deaktiviert, seine Tokens wurden widerrufen.",
			"admin.apikeys.title":              "API-Schlüssel",
			"admin.apikeys.title.key":          "API-Schlüssel",
			"admin.apikeys.title.new":          "API-Schlüssel erstellen",
			"admin.apikeys.back":               "Alle API-Schlüssel",
			"admin.apikeys.all":                "Alle Schlüssel",
			"admin.apikeys.own":                "Ihre Schlüssel",
			"admin.apikeys.intro.all":          "Die Schlüssel aller Benutzer und die System-Schlüssel. Öffnen Sie einen Schlüssel, um seine Rollen zu ändern, ihm einen neuen Wert zu geben, ihn zu deaktivieren oder zu löschen.",
			"admin.apikeys.intro.own":          "Hier sehen Sie Ihre eigenen Schlüssel: Die Schlüssel aller Benutzer sehen nur Super-Admins.",
			"admin.apikeys.of":                 "Schlüssel von",
			"admin.apikeys.showall":            "Alle Schlüssel zeigen",
			"admin.apikeys.deactivate":         "Schlüssel deaktivieren",
			"admin.apikeys.deactivate.help":    "Alles, was den Schlüssel verwendet, wird abgewiesen, bis er wieder aktiviert wird.",
			"admin.apikeys.deactivate.check":   "Ja, diesen Schlüssel deaktivieren",
			"admin.apikeys.deactivate.confirm": "Diesen API-Schlüssel deaktivieren? Alles, was ihn verwendet, wird abgewiesen.",
			"admin.apikeys.activate":           "Schlüssel aktivieren",
			"admin.apikeys.activate.help":      "Der Schlüssel ist inaktiv: Jede Anfrage damit wird abgewiesen. Aktivieren Sie ihn, damit er wieder funktioniert.",
			"admin.apikeys.activated":          "Der API-Schlüssel wurde aktiviert.",
			"admin.apikeys.deactivated":        "Der API-Schlüssel wurde deaktiviert.",
		},
	})
}
