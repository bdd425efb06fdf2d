package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"hmid/internal/access"
	"hmid/internal/authn"
	"hmid/internal/bans"
	"hmid/internal/httpx"
	"hmid/internal/twofactor"
	"hmid/internal/users"
	"hmid/internal/web"
)

// UserListPages is /admin/users, the admin console's users list: a
// search by id or a part of the username, name or email, filters by state
// (banned, scheduled for deletion, two-factor on or off, a role), sorting
// by the listed columns and pages of users with their state. It calls
// users.Service.List as GET /v1/users does, with the same query parameters,
// and shows each row's ban as GET /v1/users/{id}/ban reports it
// (bans.Service) and, for holders of two_factor:manage, whether two-factor
// authentication is on (twofactor.Service).
type UserListPages struct {
	H         *web.Handler
	Users     *users.Service
	Bans      *bans.Service
	TwoFactor *twofactor.Service
	// Access lists the roles of the role filter (shown with roles:read).
	Access *access.Service
}

// userListParams are the query parameters of GET /v1/users the page reads
// and keeps in its links.
var userListParams = []string{"search", "include_deleted", "limit", "status", "two_factor", "role_id", "sort_field", "sort_direction"}

// userListRow is one user as the list shows them.
type userListRow struct {
	users.User
	Banned    bool
	TwoFactor bool
	Joined    string // the day of created_at
	Deletion  string // the day of scheduled_deletion_at, "" when none
}

// sortHeader is a sortable column's header: the link that sorts by it
// (the other way round when it is the current order) and its aria-sort.
type sortHeader struct {
	Href string
	// Sort is "ascending" or "descending" for the current order, "" else.
	Sort string
}

// userListView is the page's data.
type userListView struct {
	Search         string
	IncludeDeleted bool
	// ShowTwoFactor: the reader may see other users' two-factor state.
	ShowTwoFactor bool
	// CanCreate: the reader may create users (users:write).
	CanCreate bool
	Status    web.SelectField
	TwoFactor web.SelectField
	Role      web.SelectField
	ShowRoles bool
	// Active is the number of filters set.
	Active int
	Rows   []userListRow
	Total  string // formatted, as every number of the page
	// Capped: a search matched more users than it lists (users.MaxSearchMatches).
	Capped       bool
	From, To     string // positions of the first and last user shown
	Page         int
	TotalPages   int
	PageText     string // "Page 3 of 5,001"
	Newer, Older string // links to the neighbouring pages
	First        string // the first page, when the page asked for is past the end
	// Headers are the sortable columns by sort field.
	Headers map[string]sortHeader
	// Keep are the filter's fields the page jump carries on.
	Keep []web.HiddenField
}

// List is GET /admin/users.
func (up *UserListPages) List(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	lang := up.H.UserLanguage(r, p)
	t := web.Translator(lang)
	q := r.URL.Query()
	lq := users.ParseListQuery(q)
	keep, active := web.FilterQuery(q, userListParams)
	v := userListView{Search: lq.Search, IncludeDeleted: lq.IncludeDeleted, CanCreate: p.Can(permUsersWrite),
		ShowTwoFactor: p.Can(permTwoFactor), ShowRoles: p.Can("roles:read"), Active: active,
		Headers: sortHeaders(lq, keep)}
	if err := up.filterFields(r, t, &v, lq); err != nil {
		up.H.Fail(w, r, err)
		return
	}
	if err := lq.Check(q); err != nil {
		status, text, fe := up.H.FormRefusal(w, r, err, "admin.userlist.badfilter")
		v.Status.Error, v.TwoFactor.Error = fieldText(fe, "status"), fieldText(fe, "two_factor")
		up.H.Console(w, r, status, "admin_users", web.ConsoleView{Title: "admin.userlist.title", Section: "users", Error: text, Data: &v})
		return
	}
	if lq.TwoFactor != "" && !v.ShowTwoFactor {
		lq.TwoFactor = "" // the filter is not offered to this reader
	}
	if err := up.fill(r, lang, &v, lq, keep); err != nil {
		up.H.Fail(w, r, err)
		return
	}
	up.H.Console(w, r, http.StatusOK, "admin_users", web.ConsoleView{Title: "admin.userlist.title", Section: "users", Data: &v})
}

// fieldText is the error text of fe at field, "" elsewhere.
func fieldText(fe web.FormError, field string) string {
	if fe.Is(field) {
		return fe.Text
	}
	return ""
}

// filterFields fills the filter's selects.
func (up *UserListPages) filterFields(r *http.Request, t func(string) string, v *userListView, lq users.ListQuery) error {
	v.Status = web.SelectField{ID: "f-status", Name: "status", Label: t("admin.userlist.f.status"), All: t("admin.userlist.f.all"),
		Options: web.Choices(t, "admin.userlist.status.", users.Statuses, lq.Status)}
	v.TwoFactor = web.SelectField{ID: "f-2fa", Name: "two_factor", Label: t("admin.userlist.f.2fa"), All: t("admin.userlist.f.all"),
		Options: web.Choices(t, "admin.userlist.2fa.", []string{"on", "off"}, lq.TwoFactor)}
	v.Role = web.SelectField{ID: "f-role", Name: "role_id", Label: t("admin.userlist.f.role"), All: t("admin.userlist.f.all")}
	if !v.ShowRoles {
		return nil
	}
	roles, _, err := up.Access.ListRoles(r.Context(), httpx.Page{Page: 1, Limit: 100})
	for _, role := range roles {
		v.Role.Options = append(v.Role.Options, web.Choice{Value: role.ID, Label: role.Name, Selected: role.ID == lq.Role})
	}
	return err
}

// fill lists the page of lq onto v, with the rows' states and the pager.
func (up *UserListPages) fill(r *http.Request, lang string, v *userListView, lq users.ListQuery, keep url.Values) error {
	ctx := r.Context()
	list, total, err := up.Users.List(ctx, lq)
	if err != nil {
		return err
	}
	ids := make([]string, len(list))
	for i, u := range list {
		ids[i] = u.ID
	}
	banned, err := up.Bans.BannedAmong(ctx, ids)
	if err != nil {
		return err
	}
	twoFactor := map[string]bool{}
	if v.ShowTwoFactor {
		if twoFactor, err = up.TwoFactor.EnabledAmong(ctx, authn.From(ctx), ids); err != nil {
			return err
		}
	}
	for _, u := range list {
		row := userListRow{User: u, Banned: banned[u.ID], TwoFactor: twoFactor[u.ID], Joined: listDay(lang, u.CreatedAt)}
		if u.ScheduledDeletionAt != nil {
			row.Deletion = listDay(lang, *u.ScheduledDeletionAt)
		}
		v.Rows = append(v.Rows, row)
	}
	pg := web.NewPager(lq.Page, total, len(list), "/admin/users", keep)
	v.Total, v.Page, v.TotalPages, v.Newer, v.Older, v.First = overviewNumber(lang, total), pg.Page, pg.TotalPages, pg.Newer, pg.Older, pg.First
	v.From, v.To = overviewNumber(lang, pg.From), overviewNumber(lang, pg.To)
	v.PageText = web.Translator(lang)("admin.userlist.pageof")
	v.PageText = fmt.Sprintf(v.PageText, overviewNumber(lang, pg.Page), overviewNumber(lang, pg.TotalPages))
	v.Capped = lq.Search != "" && total >= users.MaxSearchMatches
	for k, vals := range keep {
		if k != "page" {
			v.Keep = append(v.Keep, web.HiddenField{Name: k, Value: vals[0]})
		}
	}
	slices.SortFunc(v.Keep, func(a, b web.HiddenField) int { return strings.Compare(a.Name, b.Name) })
	return nil
}

// sortHeaders are the links of the sortable columns: each sorts by its
// column (times newest first, texts A to Z), the current one the other way.
func sortHeaders(lq users.ListQuery, keep url.Values) map[string]sortHeader {
	current := lq.Sort
	if current == "" {
		current = "created_at"
	}
	out := map[string]sortHeader{}
	for _, f := range users.SortFields {
		asc := f == "username" || f == "email"
		h := sortHeader{}
		if f == current {
			h.Sort = "descending"
			if lq.Asc {
				h.Sort = "ascending"
			}
			asc = !lq.Asc
		}
		q := url.Values{}
		for k, vals := range keep {
			if k != "page" {
				q[k] = vals
			}
		}
		q.Set("sort_field", f)
		q.Set("sort_direction", map[bool]string{true: "asc", false: "desc"}[asc])
		h.Href = "/admin/users?" + q.Encode()
		out[f] = h
	}
	return out
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
			"admin.userlist.title":                         "Users",
			"admin.userlist.search":                        "Search users",
			"admin.userlist.searchhelp":                    "An id, or a part of a username, name or email address, anywhere, in any case. One or two characters match the start.",
			"admin.userlist.deleted":                       "Include deleted accounts",
			"admin.userlist.submit":                        "Search",
			"admin.userlist.clear":                         "Show all users",
			"admin.userlist.count":                         "Users %s–%s of %s",
			"admin.userlist.pages":                         "Pages",
			"admin.userlist.newer":                         "← Previous",
			"admin.userlist.older":                         "Next →",
			"admin.userlist.none":                          "No users match this search.",
			"admin.userlist.capped":                        "A search lists at most %s users, the first that match in this order. Type more of the name to narrow it.",
			"admin.userlist.past":                          "This page is past the end of the list.",
			"admin.userlist.first":                         "Go to the first page",
			"admin.userlist.col.user":                      "User",
			"admin.userlist.col.email":                     "Email",
			"admin.userlist.col.joined":                    "Joined",
			"admin.userlist.col.seen":                      "Last sign-in",
			"admin.userlist.col.status":                    "Status",
			"admin.userlist.noemail":                       "no email address",
			"admin.userlist.banned":                        "Banned",
			"admin.userlist.deletion":                      "Deletion on %s",
			"admin.userlist.deletedat":                     "Deleted",
			"admin.userlist.twofactor":                     "2FA on",
			"admin.userlist.superadmin":                    "Super admin",
			"admin.userlist.active":                        "Active",
			"admin.userlist.filter":                        "Filter",
			"admin.userlist.apply":                         "Apply",
			"admin.userlist.f.status":                      "State",
			"admin.userlist.f.2fa":                         "Two-factor authentication",
			"admin.userlist.f.role":                        "Role",
			"admin.userlist.f.all":                         "All",
			"admin.userlist.status.banned":                 "Banned",
			"admin.userlist.status.scheduled_for_deletion": "Scheduled for deletion",
			"admin.userlist.2fa.on":                        "On",
			"admin.userlist.2fa.off":                       "Off",
			"admin.userlist.pageof":                        "Page %s of %s",
			"admin.userlist.jump":                          "Go to page",
			"admin.userlist.jumpsubmit":                    "Go",
			"admin.userlist.badfilter":                     "The list was not shown. Correct the marked filter.",
			"admin.userlist.sortby":                        "Sort by %s",
		},
		"de": {
			"admin.userlist.title":                         "Benutzer",
			"admin.userlist.search":                        "Benutzer suchen",
			"admin.userlist.searchhelp":                    "Eine ID oder ein Teil von Benutzername, Name oder E-Mail-Adresse, an beliebiger Stelle, Groß- und Kleinschreibung egal. Ein oder zwei Zeichen finden den Anfang.",
			"admin.userlist.deleted":                       "Gelöschte Konten einschließen",
			"admin.userlist.submit":                        "Suchen",
			"admin.userlist.clear":                         "Alle Benutzer zeigen",
			"admin.userlist.count":                         "Benutzer %s–%s von %s",
			"admin.userlist.pages":                         "Seiten",
			"admin.userlist.newer":                         "← Zurück",
			"admin.userlist.older":                         "Weiter →",
			"admin.userlist.none":                          "Keine Benutzer passen zu dieser Suche.",
			"admin.userlist.capped":                        "Eine Suche führt höchstens %s Benutzer auf, die ersten passenden in dieser Reihenfolge. Geben Sie mehr vom Namen ein, um sie einzugrenzen.",
			"admin.userlist.past":                          "Diese Seite liegt hinter dem Ende der Liste.",
			"admin.userlist.first":                         "Zur ersten Seite",
			"admin.userlist.col.user":                      "Benutzer",
			"admin.userlist.col.email":                     "E-Mail",
			"admin.userlist.col.joined":                    "Registriert",
			"admin.userlist.col.seen":                      "Letzte Anmeldung",
			"admin.userlist.col.status":                    "Status",
			"admin.userlist.noemail":                       "keine E-Mail-Adresse",
			"admin.userlist.banned":                        "Gesperrt",
			"admin.userlist.deletion":                      "Löschung am %s",
			"admin.userlist.deletedat":                     "Gelöscht",
			"admin.userlist.twofactor":                     "2FA an",
			"admin.userlist.superadmin":                    "Super-Admin",
			"admin.userlist.active":                        "Aktiv",
			"admin.userlist.filter":                        "Filter",
			"admin.userlist.apply":                         "Anwenden",
			"admin.userlist.f.status":                      "Zustand",
			"admin.userlist.f.2fa":                         "Zwei-Faktor-Authentifizierung",
			"admin.userlist.f.role":                        "Rolle",
			"admin.userlist.f.all":                         "Alle",
			"admin.userlist.status.banned":                 "Gesperrt",
			"admin.userlist.status.scheduled_for_deletion": "Zur Löschung vorgemerkt",
			"admin.userlist.2fa.on":                        "An",
			"admin.userlist.2fa.off":                       "Aus",
			"admin.userlist.pageof":                        "Seite %s von %s",
			"admin.userlist.jump":                          "Zu Seite",
			"admin.userlist.jumpsubmit":                    "Los",
			"admin.userlist.badfilter":                     "Die Liste wurde nicht gezeigt. Korrigieren Sie den markierten Filter.",
			"admin.userlist.sortby":                        "Sortieren nach %s",
		},
	})
}
