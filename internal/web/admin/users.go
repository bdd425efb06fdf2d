package admin

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/bans"
	"hmid/internal/twofactor"
	"hmid/internal/users"
	"hmid/internal/web"
)

// UserListPages is /admin/users, the admin console's users list: a
// search by id, username, name or email, and pages of users newest first
// with their state. It calls users.Service.List as GET /v1/users does, with
// the same query parameters, and shows each row's ban as GET
// /v1/users/{id}/ban reports it (bans.Service) and, for holders of
// two_factor:manage, whether two-factor authentication is on (twofactor.Service).
type UserListPages struct {
	H         *web.Handler
	Users     *users.Service
	Bans      *bans.Service
	TwoFactor *twofactor.Service
}

// userListParams are the query parameters of GET /v1/users the page reads
// and keeps in its links.
var userListParams = []string{"search", "include_deleted", "limit"}

// userListRow is one user as the list shows them.
type userListRow struct {
	users.User
	Banned    bool
	TwoFactor bool
	Joined    string // the day of created_at
	Deletion  string // the day of scheduled_deletion_at, "" when none
}

// userListView is the page's data.
type userListView struct {
	Search         string
	IncludeDeleted bool
	// ShowTwoFactor: the reader may see other users' two-factor state.
	ShowTwoFactor bool
	Rows          []userListRow
	Total         string // formatted
	// Capped: a search matched more users than it lists (users.MaxSearchMatches).
	Capped       bool
	From, To     int // positions of the first and last user shown
	Page         int
	TotalPages   int
	Newer, Older string // links to the neighbouring pages
	First        string // the first page, when the page asked for is past the end
}

// List is GET /admin/users.
func (up *UserListPages) List(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	lang := up.H.UserLanguage(r, p)
	lq := users.ParseListQuery(r.URL.Query())
	list, total, err := up.Users.List(ctx, lq)
	if err != nil {
		up.H.Fail(w, r, err)
		return
	}
	ids := make([]string, len(list))
	for i, u := range list {
		ids[i] = u.ID
	}
	banned, err := up.Bans.BannedAmong(ctx, ids)
	if err != nil {
		up.H.Fail(w, r, err)
		return
	}
	v := userListView{Search: lq.Search, IncludeDeleted: lq.IncludeDeleted, Total: overviewNumber(lang, total),
		Page: lq.Page.Page, TotalPages: lq.Page.TotalPages(total), Capped: lq.Search != "" && total >= users.MaxSearchMatches}
	twoFactor, err := up.TwoFactor.EnabledAmong(ctx, p, ids)
	switch {
	case err == nil:
		v.ShowTwoFactor = true
	case apperr.KindOf(err) != apperr.Forbidden:
		up.H.Fail(w, r, err)
		return
	}
	for _, u := range list {
		row := userListRow{User: u, Banned: banned[u.ID], TwoFactor: twoFactor[u.ID], Joined: listDay(lang, u.CreatedAt)}
		if u.ScheduledDeletionAt != nil {
			row.Deletion = listDay(lang, *u.ScheduledDeletionAt)
		}
		v.Rows = append(v.Rows, row)
	}
	if len(list) > 0 {
		v.From, v.To = lq.Page.Offset()+1, lq.Page.Offset()+len(list)
	}
	keep := url.Values{}
	for _, k := range userListParams {
		if s := r.URL.Query().Get(k); s != "" {
			keep.Set(k, s)
		}
	}
	link := func(n int) string {
		q := url.Values{}
		for k, vals := range keep {
			q[k] = vals
		}
		q.Set("page", strconv.Itoa(n))
		return "/admin/users?" + q.Encode()
	}
	if v.Page > 1 && v.Page <= v.TotalPages {
		v.Newer = link(v.Page - 1)
	}
	if v.Page < v.TotalPages {
		v.Older = link(v.Page + 1)
	}
	if len(list) == 0 && total > 0 {
		v.First = link(1)
	}
	up.H.Console(w, r, http.StatusOK, "admin_users", web.ConsoleView{Title: "admin.userlist.title", Section: "users", Data: &v})
}

// listDay writes the UTC day of t for lang, for a list where the time of
// day would only crowd the columns (the full time is its tooltip).
func listDay(lang string, t time.Time) string {
	if lang == "de" {
		return t.UTC().Format("02.01.2006")
	}
	return t.UTC().Format("Jan 2, 2006")
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"admin.userlist.title":      "Users",
			"admin.userlist.search":     "Search users",
			"admin.userlist.searchhelp": "An id, or the start of a username, name or email address (any case).",
			"admin.userlist.deleted":    "Include deleted accounts",
			"admin.userlist.submit":     "Search",
			"admin.userlist.clear":      "Show all users",
			"admin.userlist.count":      "Users %d–%d of %s",
			"admin.userlist.page":       "Page %d of %d",
			"admin.userlist.pages":      "Pages",
			"admin.userlist.newer":      "← Newer",
			"admin.userlist.older":      "Older →",
			"admin.userlist.none":       "No users match this search.",
			"admin.userlist.capped":     "A search lists at most %s users, the newest that match. Type more of the name to narrow it.",
			"admin.userlist.past":       "This page is past the end of the list.",
			"admin.userlist.first":      "Go to the first page",
			"admin.userlist.col.user":   "User",
			"admin.userlist.col.email":  "Email",
			"admin.userlist.col.joined": "Joined",
			"admin.userlist.col.seen":   "Last sign-in",
			"admin.userlist.col.status": "Status",
			"admin.userlist.noemail":    "no email address",
			"admin.userlist.banned":     "Banned",
			"admin.userlist.deletion":   "Deletion on %s",
			"admin.userlist.deletedat":  "Deleted",
			"admin.userlist.twofactor":  "2FA on",
			"admin.userlist.superadmin": "Super admin",
			"admin.userlist.active":     "Active",
		},
		"de": {
			"admin.userlist.title":      "Benutzer",
			"admin.userlist.search":     "Benutzer suchen",
			"admin.userlist.searchhelp": "Eine ID oder der Anfang von Benutzername, Name oder E-Mail-Adresse (Groß- und Kleinschreibung egal).",
			"admin.userlist.deleted":    "Gelöschte Konten einschließen",
			"admin.userlist.submit":     "Suchen",
			"admin.userlist.clear":      "Alle Benutzer zeigen",
			"admin.userlist.count":      "Benutzer %d–%d von %s",
			"admin.userlist.page":       "Seite %d von %d",
			"admin.userlist.pages":      "Seiten",
			"admin.userlist.newer":      "← Neuere",
			"admin.userlist.older":      "Ältere →",
			"admin.userlist.none":       "Keine Benutzer passen zu dieser Suche.",
			"admin.userlist.capped":     "Eine Suche führt höchstens %s Benutzer auf, die neuesten passenden. Geben Sie mehr vom Namen ein, um sie einzugrenzen.",
			"admin.userlist.past":       "Diese Seite liegt hinter dem Ende der Liste.",
			"admin.userlist.first":      "Zur ersten Seite",
			"admin.userlist.col.user":   "Benutzer",
			"admin.userlist.col.email":  "E-Mail",
			"admin.userlist.col.joined": "Registriert",
			"admin.userlist.col.seen":   "Letzte Anmeldung",
			"admin.userlist.col.status": "Status",
			"admin.userlist.noemail":    "keine E-Mail-Adresse",
			"admin.userlist.banned":     "Gesperrt",
			"admin.userlist.deletion":   "Löschung am %s",
			"admin.userlist.deletedat":  "Gelöscht",
			"admin.userlist.twofactor":  "2FA an",
			"admin.userlist.superadmin": "Super-Admin",
			"admin.userlist.active":     "Aktiv",
		},
	})
}
