package admin

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"hmid/internal/access"
	"hmid/internal/accounts"
	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/bans"
	"hmid/internal/deletion"
	"hmid/internal/httpx"
	"hmid/internal/passkey"
	"hmid/internal/sessions"
	"hmid/internal/twofactor"
	"hmid/internal/useradmin"
	"hmid/internal/users"
	"hmid/internal/web"
)

// UserPages is /admin/users/{id}: one user as an operator sees them —
// profile, sign-in accounts, roles, sessions, two-factor state, bans and
// deletion — with the actions on them, and /admin/users/{id}/audit, the
// user's audit log. Each action posts to a route of its own whose rule in
// internal/app/routes.go is its REST twin's, and calls the service that
// twin calls: users.Service (roles, soft deletion), bans.Service,
// deletion.Service, twofactor.Service (the administrator's reset) and
// audit.ParseAdminFilter with audit.List (GET /v1/admin/audit?user_id=).
// Another user's sessions have no REST route; sessions.Service lists and
// revokes them (docs/decisions.md, "Admin console: one user").
type UserPages struct {
	H         *web.Handler
	Users     *users.Service
	Accounts  *accounts.Service
	Access    *access.Service
	Sessions  *sessions.Service
	TwoFactor *twofactor.Service
	Bans      *bans.Service
	Deletion  *deletion.Service
	Audit     *audit.Service
	// Passkeys lists and removes the user's passkeys (user_passkeys.go);
	// nil: the section is left out.
	Passkeys *passkey.Service
	// Manage is the operators' user management (usermanage.go).
	Manage *useradmin.Service
}

// The permissions of the REST routes the page's forms post to. The routes
// enforce them; the page only leaves out the forms its reader cannot use.
const (
	permUsersWrite  = "users:write"
	permUsersBan    = "users:ban"
	permUsersDelete = "users:delete"
	permTwoFactor   = "two_factor:manage"
	permAuditRead   = "audit:read"
)

// banDurations are the ban lengths the form offers, in seconds; the API
// takes any length up to bans.MaxDuration.
var banDurations = []struct {
	Seconds int64
	Key     string
}{
	{3600, "admin.user.ban.d.hour"},
	{86400, "admin.user.ban.d.day"},
	{7 * 86400, "admin.user.ban.d.week"},
	{30 * 86400, "admin.user.ban.d.month"},
	{90 * 86400, "admin.user.ban.d.quarter"},
	{365 * 86400, "admin.user.ban.d.year"},
}

// permanentBan is the duration choice of a ban without an end.
const permanentBan = "permanent"

// adminUserCan says which of the page's forms its reader may use.
type adminUserCan struct {
	Write, Ban, Delete, TwoFactor, Audit bool
}

// userForm is a refused form post: which form, the error at its field (or
// none) and the values sent, to fill the form again.
type userForm struct {
	Name  string
	Err   web.FormError
	Input url.Values
}

// banRow is a ban of the history with the names of who banned and lifted.
type banRow struct {
	bans.Ban
	By, LiftedBy string
}

// adminUserView is what admin_user.html reads.
type adminUserView struct {
	User users.User
	// Self: the reader looks at their own account.
	Self     bool
	Can      adminUserCan
	Accounts []accounts.PlatformAccount
	// AccountsNote says why Accounts is not shown ("" when it is).
	AccountsNote string
	Roles        []users.RoleRef
	Grantable    []access.Role // roles the reader may add that the user lacks
	Sessions     []sessions.Session
	// TwoFactor is the user's two-factor state; nil when the service does
	// not show it to the reader (TwoFactorNote says why).
	TwoFactor     *twofactor.Status
	TwoFactorNote string
	// TwoFactorOn is the platform two-factor authentication was set up on.
	TwoFactorOn string
	Ban         *bans.Ban
	Bans        []banRow
	Deletion    deletion.Status
	Durations   []web.Choice
	GraceDays   int
	Form        userForm
	// Passkeys are the user's passkeys (user_passkeys.go).
	Passkeys []passkey.Passkey
	// Manage is the panel "Sign-in and email" (usermanage.go).
	Manage manageView
}

// FieldErr is the error of field in the refused form named form, "" for none
// (templates: {{with $v.FieldErr "ban" "reason"}}).
func (v adminUserView) FieldErr(form, field string) string {
	if v.Form.Name == form && v.Form.Err.Is(field) {
		return v.Form.Err.Text
	}
	return ""
}

// Value is the value of field sent with the refused form named form, to
// fill it again; "" for the other forms.
func (v adminUserView) Value(form, field string) string {
	if v.Form.Name != form || v.Form.Input == nil {
		return ""
	}
	return v.Form.Input.Get(field)
}

// userPath is the page of user id.
func userPath(id string) string { return "/admin/users/" + url.PathEscape(id) }

// event is the audit event of a page action, from the request and with the
// admin console as its source.
func (ap *UserPages) event(r *http.Request) audit.Event {
	return audit.FromRequest(r, audit.Event{SourceService: adminSource})
}

// Show is GET /admin/users/{id} (the rule of GET /v1/users/{id}).
func (ap *UserPages) Show(w http.ResponseWriter, r *http.Request) {
	ap.render(w, r, http.StatusOK, "", userForm{})
}

// pathUser is the user of the request's {id} and the reader's texts; ok
// is false when the error page is written.
func (ap *UserPages) pathUser(w http.ResponseWriter, r *http.Request) (users.User, func(string) string, bool) {
	u, err := ap.Users.Get(r.Context(), ap.Users.DB, chi.URLParam(r, "id"))
	if err != nil {
		ap.H.Fail(w, r, err)
		return users.User{}, nil, false
	}
	return u, web.Translator(ap.H.UserLanguage(r, authn.From(r.Context()))), true
}

// render shows the user of the request's {id}, with errText above the page
// and the refused form f.
func (ap *UserPages) render(w http.ResponseWriter, r *http.Request, status int, errText string, f userForm) {
	v, err := ap.view(r, f)
	if err != nil {
		ap.H.Fail(w, r, err)
		return
	}
	// A username has no dot and every message key has one, so the title
	// (a message key of the layout) shows the name as it is.
	ap.H.Console(w, r, status, "admin_user", web.ConsoleView{Title: v.User.Username, Section: "users", Error: errText, Data: v})
}

// view is the user of the request's {id} as its page shows it, with the
// refused form f.
func (ap *UserPages) view(r *http.Request, f userForm) (v adminUserView, err error) {
	ctx := r.Context()
	p := authn.From(ctx)
	u, err := ap.Users.Get(ctx, ap.Users.DB, chi.URLParam(r, "id"))
	if err != nil {
		return v, err
	}
	t := web.Translator(ap.H.UserLanguage(r, p))
	v = adminUserView{User: u, Self: p.IsSelf(u.ID), Form: f, GraceDays: int(users.DeletionGrace / (24 * time.Hour)),
		Can: adminUserCan{Write: p.Can(permUsersWrite), Ban: p.Can(permUsersBan), Delete: p.Can(permUsersDelete),
			TwoFactor: p.Can(permTwoFactor), Audit: p.Can(permAuditRead)}}
	// The accounts service, like GET /v1/users/{id}/accounts, answers a
	// deleted account as not found.
	switch v.Accounts, err = ap.Accounts.Accounts(ctx, u.ID); {
	case apperr.Is(err, apperr.NotFound):
		v.AccountsNote = t("admin.user.hidden.deleted")
	case err != nil:
		return v, err
	}
	if v.Roles, err = ap.Users.Roles(ctx, u.ID); err != nil {
		return v, err
	}
	if v.Can.Write {
		if v.Grantable, err = ap.grantable(r, v.Roles); err != nil {
			return v, err
		}
	}
	if v.Sessions, err = ap.Sessions.OfUser(ctx, p, u.ID); err != nil {
		return v, err
	}
	if err := ap.twoFactorState(r, t, u.ID, &v); err != nil {
		return v, err
	}
	if v.Ban, err = ap.Bans.Active(ctx, ap.Bans.DB, u.ID); err != nil {
		return v, err
	}
	history, err := ap.Bans.History(ctx, u.ID)
	if err != nil {
		return v, err
	}
	for _, b := range history {
		v.Bans = append(v.Bans, banRow{Ban: b, By: ap.name(r, b.BannedBy), LiftedBy: ap.name(r, b.UnbannedBy)})
	}
	if v.Deletion, err = ap.Deletion.GetStatus(ctx, ap.Deletion.DB, u.ID); err != nil {
		return v, err
	}
	if err := ap.passkeys(r, &v); err != nil {
		return v, err
	}
	// (issue 22) the panel of the operators' user management
	locale := web.Deref(u.PreferredLocale)
	if f.Name == "profile" {
		locale = v.Value("profile", "locale")
	}
	if v.Manage, err = ap.manageData(ctx, t, u.ID, locale); err != nil {
		return v, err
	}
	chosen := v.Value("ban", "duration_seconds")
	for _, d := range banDurations {
		s := strconv.FormatInt(d.Seconds, 10)
		v.Durations = append(v.Durations, web.Choice{Value: s, Label: t(d.Key), Selected: s == chosen})
	}
	v.Durations = append(v.Durations, web.Choice{Value: permanentBan, Label: t("admin.user.ban.d.permanent"), Selected: chosen == permanentBan})
	return v, nil
}

// twoFactorState fills v's second-factor section. The two-factor service
// decides who sees the state (two_factor:manage for another user) and
// answers a deleted account as not found; both become a note, not an error.
func (ap *UserPages) twoFactorState(r *http.Request, t func(string) string, userID string, v *adminUserView) error {
	switch st, err := ap.TwoFactor.Status(r.Context(), authn.From(r.Context()), userID); {
	case err == nil:
		v.TwoFactor = &st
		if st.PlatformSlug != nil {
			v.TwoFactorOn = *st.PlatformSlug
			for _, a := range v.Accounts {
				if a.PlatformSlug == *st.PlatformSlug {
					v.TwoFactorOn = a.PlatformName
				}
			}
		}
	case apperr.Is(err, apperr.Forbidden):
		v.TwoFactorNote = t("admin.user.2fa.hidden")
	case apperr.Is(err, apperr.NotFound):
		v.TwoFactorNote = t("admin.user.hidden.deleted")
	default:
		return err
	}
	return nil
}

// grantable lists the roles the reader may assign (access.Service, the
// rule of POST /v1/users/{id}/roles) that the user does not hold yet.
func (ap *UserPages) grantable(r *http.Request, held []users.RoleRef) ([]access.Role, error) {
	all, err := ap.Access.GrantableRoles(r.Context(), authn.From(r.Context()))
	if err != nil {
		return nil, err
	}
	has := map[string]bool{}
	for _, h := range held {
		has[h.ID] = true
	}
	out := []access.Role{}
	for _, role := range all {
		if !has[role.ID] {
			out = append(out, role)
		}
	}
	return out, nil
}

// name is the username of the user id points to, "" for nil.
func (ap *UserPages) name(r *http.Request, id *string) string {
	if id == nil {
		return ""
	}
	if n := ap.H.Auth.Username(r.Context(), *id); n != "" {
		return n
	}
	return *id
}

// refuse shows the page again after form was refused: the error at the
// field the service or the page named (with a hint above the page), else
// above the page.
func (ap *UserPages) refuse(w http.ResponseWriter, r *http.Request, form string, err error) {
	status, text, fe := ap.H.FormRefusal(w, r, err, "admin.user.fixfield")
	ap.render(w, r, status, text, userForm{Name: form, Input: r.PostForm, Err: fe})
}

// act runs the page action form on the page of the user of the URL, which
// the browser is sent back to; confirm asks for the form's ticked box.
func (ap *UserPages) act(w http.ResponseWriter, r *http.Request, form string, confirm bool, call func(p *authn.Principal, id string) (string, error)) {
	id := chi.URLParam(r, "id")
	a := web.Action{Form: form, To: userPath(id), Refuse: ap.refuse,
		Call: func(p *authn.Principal) (string, error) { return call(p, id) }}
	if confirm {
		a.Confirm, a.Unconfirmed = "confirm", "admin.user.confirm.missing"
	}
	ap.H.Act(w, r, a)
}

// AddRole is POST /admin/users/{id}/roles (POST /v1/users/{id}/roles).
func (ap *UserPages) AddRole(w http.ResponseWriter, r *http.Request) {
	ap.act(w, r, "role", false, func(p *authn.Principal, id string) (string, error) {
		added, err := ap.Users.AddRole(r.Context(), p, id, r.PostFormValue("role_id"), ap.event(r))
		if !added {
			return "admin.user.role.held", err
		}
		return "admin.user.role.added", err
	})
}

// RemoveRole is POST /admin/users/{id}/roles/{role_id}/remove (DELETE
// /v1/users/{id}/roles/{role_id}).
func (ap *UserPages) RemoveRole(w http.ResponseWriter, r *http.Request) {
	ap.act(w, r, "role", false, func(p *authn.Principal, id string) (string, error) {
		return "admin.user.role.removed", ap.Users.RemoveRole(r.Context(), p, id, chi.URLParam(r, "role_id"), ap.event(r))
	})
}

// RevokeSession is POST /admin/users/{id}/sessions/{session_id}/revoke.
// The reader's own session is refused with the sessions page's sentence
// (log out instead), as the account console does.
func (ap *UserPages) RevokeSession(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	ap.H.Act(w, r, web.Action{Form: "sessions", To: userPath(id),
		Call: func(p *authn.Principal) (string, error) {
			return "admin.user.sessions.revoked", ap.Sessions.RevokeOf(r.Context(), p, id, chi.URLParam(r, "session_id"), ap.event(r))
		},
		Refuse: func(w http.ResponseWriter, r *http.Request, form string, err error) {
			if errors.Is(err, sessions.ErrCurrent) {
				ap.render(w, r, http.StatusBadRequest, web.Translator(ap.H.UserLanguage(r, authn.From(r.Context())))("sessions.current"), userForm{})
				return
			}
			ap.refuse(w, r, form, err)
		}})
}

// RevokeSessions is POST /admin/users/{id}/sessions/revoke-all: every
// session of the user ends (but the reader's own, when they look at themself).
func (ap *UserPages) RevokeSessions(w http.ResponseWriter, r *http.Request) {
	ap.act(w, r, "sessions", false, func(p *authn.Principal, id string) (string, error) {
		_, err := ap.Sessions.RevokeAllOf(r.Context(), p, id, ap.event(r))
		return "admin.user.sessions.revokedall", err
	})
}

// ResetTwoFactor is POST /admin/users/{id}/2fa/reset (POST
// /v1/users/{id}/2fa/reset): a reason and a ticked box confirm it.
func (ap *UserPages) ResetTwoFactor(w http.ResponseWriter, r *http.Request) {
	ap.act(w, r, "reset", true, func(p *authn.Principal, id string) (string, error) {
		c := twofactor.Client{IPAddress: httpx.ClientIP(r.Context()), UserAgent: r.UserAgent(), SourceService: adminSource}
		_, err := ap.TwoFactor.Reset(r.Context(), p, id, r.PostFormValue("reason"), c)
		return "admin.user.2fa.done", err
	})
}

// Ban is POST /admin/users/{id}/ban (POST /v1/users/{id}/ban): a reason, a
// duration from the list or permanent, and a ticked box.
func (ap *UserPages) Ban(w http.ResponseWriter, r *http.Request) {
	ap.act(w, r, "ban", true, func(_ *authn.Principal, id string) (string, error) {
		in := bans.Input{Reason: r.PostFormValue("reason")}
		if d := r.PostFormValue("duration_seconds"); d != permanentBan {
			n, err := strconv.ParseInt(d, 10, 64)
			if err != nil {
				return "", &web.Invalid{Field: "duration_seconds", Key: "admin.user.ban.badduration"}
			}
			in.DurationSeconds = &n
		}
		_, err := ap.Bans.Create(r.Context(), ap.event(r), id, in)
		return "admin.user.ban.done", err
	})
}

// Lift is POST /admin/users/{id}/ban/lift (DELETE /v1/users/{id}/ban).
func (ap *UserPages) Lift(w http.ResponseWriter, r *http.Request) {
	ap.act(w, r, "lift", false, func(_ *authn.Principal, id string) (string, error) {
		return "admin.user.ban.lifted", ap.Bans.Lift(r.Context(), ap.event(r), id)
	})
}

// ScheduleDeletion is POST /admin/users/{id}/deletion (DELETE
// /v1/users/{id}): the soft deletion with its grace period, confirmed by a
// ticked box.
func (ap *UserPages) ScheduleDeletion(w http.ResponseWriter, r *http.Request) {
	ap.act(w, r, "schedule", true, func(p *authn.Principal, id string) (string, error) {
		return "admin.user.deletion.scheduled", ap.Users.Delete(r.Context(), p, id, ap.event(r))
	})
}

// CancelDeletion is POST /admin/users/{id}/deletion/cancel (POST
// /v1/admin/users/{id}/cancel-deletion).
func (ap *UserPages) CancelDeletion(w http.ResponseWriter, r *http.Request) {
	ap.act(w, r, "cancel", false, func(p *authn.Principal, id string) (string, error) {
		ev := audit.FromRequest(r, audit.Event{ActorID: p.UserID, SourceService: adminSource})
		return "admin.user.deletion.cancelled", ap.Deletion.Cancel(r.Context(), ev, id)
	})
}

// ForceDelete is POST /admin/users/{id}/deletion/force (POST
// /v1/admin/users/{id}/force-delete): the user is purged at once, confirmed
// by typing their username (not the ticked box of Action: the page reads
// the user first, and an unknown user is the page's 404, not a form error).
func (ap *UserPages) ForceDelete(w http.ResponseWriter, r *http.Request) {
	p := ap.H.ConsolePost(w, r)
	if p == nil {
		return
	}
	ctx := r.Context()
	id := chi.URLParam(r, "id")
	u, err := ap.Users.Get(ctx, ap.Users.DB, id)
	if err != nil {
		ap.H.Fail(w, r, err)
		return
	}
	if r.PostFormValue("confirm_username") != u.Username {
		ap.refuse(w, r, "force", &web.Invalid{Field: "confirm_username", Key: "admin.user.force.mismatch"})
		return
	}
	if err := ap.Deletion.ForceDelete(ctx, p, ap.event(r), id, r.PostFormValue("reason")); err != nil {
		ap.refuse(w, r, "force", err)
		return
	}
	ap.H.Done(w, r, "/admin/users", "admin.user.force.done")
}

// ---- the user's audit log ----

// userAuditParams are the query parameters of GET /v1/admin/audit that the
// user's log offers; user_id is the page's own.
var userAuditParams = []string{"event_type", "status", "page", "limit"}

// userAuditRow is one event as the log shows it.
type userAuditRow struct {
	audit.Entry
	What   string
	Source string
	By     string // who acted, when someone else than the user did
}

// userAuditView is what admin_user_audit.html reads.
type userAuditView struct {
	User        users.User
	Query       url.Values
	FieldErrors map[string]string
	EventType   web.SelectField
	Status      web.SelectField
	Events      []userAuditRow
	web.Pager
}

// AuditLog is GET /admin/users/{id}/audit: the events of the user with the
// filters and paging of GET /v1/admin/audit?user_id= (its rule, audit:read).
func (ap *UserPages) AuditLog(w http.ResponseWriter, r *http.Request) {
	u, t, ok := ap.pathUser(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	v := userAuditView{User: u, FieldErrors: map[string]string{}}
	v.Query, _ = web.FilterQuery(r.URL.Query(), userAuditParams)
	q := url.Values{"user_id": {u.ID}}
	for k, vals := range v.Query {
		q[k] = vals
	}
	status, view := http.StatusOK, web.ConsoleView{Title: "admin.user.audit.title", Section: "users", Data: &v}
	f, err := audit.ParseAdminFilter(q)
	var events []audit.Entry
	var total int
	if err == nil {
		events, total, err = audit.List(ctx, ap.Audit.DB, f)
	}
	status, view.Error = ap.H.Refusal(w, r, status, view.Error, err, v.FieldErrors, "activity.bad.")
	v.EventType, v.Status = web.EventFields(t, v.Query, v.FieldErrors)
	names := map[string]string{} // actor id → name, looked up once a page
	for _, e := range events {
		row := userAuditRow{Entry: e, What: web.EventTitle(t, e.EventType, e.Status), Source: t("activity.source." + e.SourceService)}
		if e.ActorID != nil && *e.ActorID != u.ID {
			if _, ok := names[*e.ActorID]; !ok {
				names[*e.ActorID] = ap.name(r, e.ActorID)
			}
			row.By = names[*e.ActorID]
		}
		v.Events = append(v.Events, row)
	}
	if err == nil {
		v.Pager = web.NewPager(f.Page, total, len(events), userPath(u.ID)+"/audit", v.Query)
	}
	ap.H.Console(w, r, status, "admin_user_audit", view)
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"admin.user.onpage":              "On this page",
			"admin.user.fixfield":            "The form could not be sent. Check the field marked below.",
			"admin.user.confirm.missing":     "Tick the box to confirm.",
			"admin.user.you":                 "This is your own account.",
			"admin.user.profile":             "Profile",
			"admin.user.id":                  "User id",
			"admin.user.username":            "Username",
			"admin.user.name":                "Display name",
			"admin.user.email":               "Email",
			"admin.user.locale":              "Language",
			"admin.user.created":             "Created",
			"admin.user.lastlogin":           "Last sign-in",
			"admin.user.none":                "—",
			"admin.user.badge.super":         "Super admin",
			"admin.user.badge.banned":        "Banned",
			"admin.user.badge.deleting":      "Scheduled for deletion",
			"admin.user.badge.2fa":           "Two-factor on",
			"admin.user.accounts":            "Sign-in accounts",
			"admin.user.accounts.none":       "This user has no sign-in account.",
			"admin.user.accounts.platform":   "Platform",
			"admin.user.accounts.name":       "Name on the platform",
			"admin.user.accounts.since":      "Linked",
			"admin.user.accounts.primary":    "Primary",
			"admin.user.roles":               "Roles",
			"admin.user.roles.none":          "This user holds no role.",
			"admin.user.roles.remove":        "Remove",
			"admin.user.roles.removelabel":   "Remove the role %s",
			"admin.user.roles.removeconfirm": "Take this role away from the user?",
			"admin.user.roles.add":           "Add a role",
			"admin.user.roles.assign":        "Assign",
			"admin.user.roles.help":          "You can assign the roles whose every permission you hold yourself.",
			"admin.user.roles.nothing":       "There is no further role you can assign.",
			"admin.user.role.added":          "The role was assigned.",
			"admin.user.role.held":           "The user holds that role already.",
			"admin.user.role.removed":        "The role was removed.",
			"admin.user.sessions":            "Sessions",
			"admin.user.sessions.none":       "The user is not signed in anywhere.",
			"admin.user.sessions.revokeall":  "Sign out everywhere",
			"admin.user.sessions.confirm":    "Sign this user out of every session?",
			"admin.user.sessions.revoked":    "The session was revoked. That device is signed out.",
			"admin.user.sessions.revokedall": "The user was signed out everywhere.",
			"admin.user.2fa":                 "Two-factor authentication",
			"admin.user.2fa.on":              "On since %s, set up on %s; %d backup codes left.",
			"admin.user.2fa.off":             "Off. The user signs in without a second factor.",
			"admin.user.2fa.hidden":          "You need the permission two_factor:manage to see and reset another user's two-factor authentication.",
			"admin.user.hidden.deleted":      "Not shown for a deleted account.",
			"admin.user.2fa.reset":           "Reset two-factor authentication",
			"admin.user.2fa.resetintro":      "For a user who lost their authenticator app and backup codes: two-factor authentication is turned off without a code, the user gets an email and signs in with their password, then sets it up again. Make sure the request really comes from the account's owner.",
			"admin.user.2fa.reason":          "Reason (kept in the audit log)",
			"admin.user.2fa.check":           "I checked that the owner of this account asked for it.",
			"admin.user.2fa.confirm":         "Turn off this user's two-factor authentication?",
			"admin.user.2fa.own":             "Your own two-factor authentication is changed on your security page, with a code.",
			"admin.user.2fa.done":            "Two-factor authentication was reset. The user was told by email.",
			"admin.user.ban":                 "Ban",
			"admin.user.ban.active":          "Banned since %s.",
			"admin.user.ban.until":           "The ban ends on %s.",
			"admin.user.ban.forever":         "The ban is permanent.",
			"admin.user.ban.none":            "The user is not banned.",
			"admin.user.ban.intro":           "A ban signs the user out everywhere, revokes their app tokens and refuses every sign-in until it ends or is lifted.",
			"admin.user.ban.reason":          "Reason (optional; shown to the user when they try to sign in)",
			"admin.user.ban.duration":        "Duration",
			"admin.user.ban.choose":          "Choose how long",
			"admin.user.ban.d.hour":          "1 hour",
			"admin.user.ban.d.day":           "1 day",
			"admin.user.ban.d.week":          "7 days",
			"admin.user.ban.d.month":         "30 days",
			"admin.user.ban.d.quarter":       "90 days",
			"admin.user.ban.d.year":          "1 year",
			"admin.user.ban.d.permanent":     "Permanent",
			"admin.user.ban.check":           "Ban this user and sign them out everywhere.",
			"admin.user.ban.submit":          "Ban user",
			"admin.user.ban.confirm":         "Ban this user?",
			"admin.user.ban.badduration":     "Choose a duration from the list.",
			"admin.user.ban.lift":            "Lift the ban",
			"admin.user.ban.done":            "The user is banned and signed out everywhere.",
			"admin.user.ban.lifted":          "The ban was lifted. The user can sign in again.",
			"admin.user.bans":                "Ban history",
			"admin.user.bans.none":           "The user was never banned.",
			"admin.user.bans.when":           "Banned",
			"admin.user.bans.by":             "By",
			"admin.user.bans.reason":         "Reason",
			"admin.user.bans.end":            "End",
			"admin.user.bans.status.active":  "Active",
			"admin.user.bans.status.expired": "Expired",
			"admin.user.bans.status.lifted":  "Lifted",
			"admin.user.bans.liftedby":       "lifted by %s",
			"admin.user.deletion":            "Deletion",
			"admin.user.deletion.deleted":    "The account was deleted on %s and will be removed permanently on %s.",
			"admin.user.deletion.requested":  "The user asked for the deletion of their account; it will be removed permanently on %s.",
			"admin.user.deletion.none":       "The account is not scheduled for deletion.",
			"admin.user.deletion.intro":      "Deleting signs the user out, deletes their API keys and removes the account permanently after %d days; until then it can be restored here.",
			"admin.user.deletion.check":      "Delete this account.",
			"admin.user.deletion.submit":     "Delete account",
			"admin.user.deletion.confirm":    "Delete this account? It is removed permanently after the grace period.",
			"admin.user.deletion.cancel":     "Restore the account",
			"admin.user.deletion.scheduled":  "The account was deleted; it is removed permanently after the grace period.",
			"admin.user.deletion.cancelled":  "The deletion was cancelled. The account is active again.",
			"admin.user.force":               "Remove permanently now",
			"admin.user.force.intro":         "The account and everything linked to it are removed at once. This cannot be undone; the audit log keeps only anonymous records.",
			"admin.user.force.reason":        "Reason (optional)",
			"admin.user.force.type":          "Type the username %s to confirm",
			"admin.user.force.submit":        "Remove permanently",
			"admin.user.force.confirm":       "Remove this account permanently? This cannot be undone.",
			"admin.user.force.mismatch":      "Type the username exactly as shown.",
			"admin.user.force.done":          "The account was removed permanently.",
			"admin.user.audit":               "Audit log",
			"admin.user.audit.link":          "Everything recorded about this user",
			"admin.user.audit.title":         "Audit log of a user",
			"admin.user.audit.intro":         "Events of %s, newest first.",
			"admin.user.audit.back":          "Back to the user",
			"admin.user.audit.by":            "by %s",
		},
		"de": {
			"admin.user.onpage":              "Auf dieser Seite",
			"admin.user.fixfield":            "Das Formular wurde nicht gesendet. Prüfen Sie das markierte Feld unten.",
			"admin.user.confirm.missing":     "Setzen Sie zur Bestätigung das Häkchen.",
			"admin.user.you":                 "Das ist Ihr eigenes Konto.",
			"admin.user.profile":             "Profil",
			"admin.user.id":                  "Benutzer-ID",
			"admin.user.username":            "Benutzername",
			"admin.user.name":                "Anzeigename",
			"admin.user.email":               "E-Mail",
			"admin.user.locale":              "Sprache",
			"admin.user.created":             "Angelegt",
			"admin.user.lastlogin":           "Letzte Anmeldung",
			"admin.user.none":                "—",
			"admin.user.badge.super":         "Super-Admin",
			"admin.user.badge.banned":        "Gesperrt",
			"admin.user.badge.deleting":      "Zur Löschung vorgemerkt",
			"admin.user.badge.2fa":           "Zwei-Faktor an",
			"admin.user.accounts":            "Anmeldekonten",
			"admin.user.accounts.none":       "Dieser Benutzer hat kein Anmeldekonto.",
			"admin.user.accounts.platform":   "Plattform",
			"admin.user.accounts.name":       "Name auf der Plattform",
			"admin.user.accounts.since":      "Verknüpft",
			"admin.user.accounts.primary":    "Primär",
			"admin.user.roles":               "Rollen",
			"admin.user.roles.none":          "Dieser Benutzer hat keine Rolle.",
			"admin.user.roles.remove":        "Entfernen",
			"admin.user.roles.removelabel":   "Die Rolle %s entfernen",
			"admin.user.roles.removeconfirm": "Dem Benutzer diese Rolle entziehen?",
			"admin.user.roles.add":           "Rolle hinzufügen",
			"admin.user.roles.assign":        "Zuweisen",
			"admin.user.roles.help":          "Sie können die Rollen zuweisen, deren Berechtigungen Sie alle selbst haben.",
			"admin.user.roles.nothing":       "Es gibt keine weitere Rolle, die Sie zuweisen können.",
			"admin.user.role.added":          "Die Rolle wurde zugewiesen.",
			"admin.user.role.held":           "Der Benutzer hat diese Rolle bereits.",
			"admin.user.role.removed":        "Die Rolle wurde entfernt.",
			"admin.user.sessions":            "Sitzungen",
			"admin.user.sessions.none":       "Der Benutzer ist nirgends angemeldet.",
			"admin.user.sessions.revokeall":  "Überall abmelden",
			"admin.user.sessions.confirm":    "Diesen Benutzer aus allen Sitzungen abmelden?",
			"admin.user.sessions.revoked":    "Die Sitzung wurde beendet. Das Gerät ist abgemeldet.",
			"admin.user.sessions.revokedall": "Der Benutzer wurde überall abgemeldet.",
			"admin.user.2fa":                 "Zwei-Faktor-Authentifizierung",
			"admin.user.2fa.on":              "An seit %s, eingerichtet auf %s; %d Backup-Codes übrig.",
			"admin.user.2fa.off":             "Aus. Der Benutzer meldet sich ohne zweiten Faktor an.",
			"admin.user.2fa.hidden":          "Sie brauchen die Berechtigung two_factor:manage, um die Zwei-Faktor-Authentifizierung anderer Benutzer zu sehen und zurückzusetzen.",
			"admin.user.hidden.deleted":      "Für ein gelöschtes Konto nicht angezeigt.",
			"admin.user.2fa.reset":           "Zwei-Faktor-Authentifizierung zurücksetzen",
			"admin.user.2fa.resetintro":      "Für Benutzer, die ihre Authenticator-App und ihre Backup-Codes verloren haben: Die Zwei-Faktor-Authentifizierung wird ohne Code ausgeschaltet, der Benutzer erhält eine E-Mail, meldet sich mit seinem Passwort an und richtet sie neu ein. Stellen Sie sicher, dass die Anfrage wirklich vom Inhaber des Kontos kommt.",
			"admin.user.2fa.reason":          "Grund (wird im Audit-Log gespeichert)",
			"admin.user.2fa.check":           "Ich habe geprüft, dass der Inhaber dieses Kontos darum gebeten hat.",
			"admin.user.2fa.confirm":         "Die Zwei-Faktor-Authentifizierung dieses Benutzers ausschalten?",
			"admin.user.2fa.own":             "Ihre eigene Zwei-Faktor-Authentifizierung ändern Sie auf Ihrer Sicherheitsseite, mit einem Code.",
			"admin.user.2fa.done":            "Die Zwei-Faktor-Authentifizierung wurde zurückgesetzt. Der Benutzer wurde per E-Mail benachrichtigt.",
			"admin.user.ban":                 "Sperre",
			"admin.user.ban.active":          "Gesperrt seit %s.",
			"admin.user.ban.until":           "Die Sperre endet am %s.",
			"admin.user.ban.forever":         "Die Sperre ist dauerhaft.",
			"admin.user.ban.none":            "Der Benutzer ist nicht gesperrt.",
			"admin.user.ban.intro":           "Eine Sperre meldet den Benutzer überall ab, widerruft die Tokens seiner Apps und verweigert jede Anmeldung, bis sie endet oder aufgehoben wird.",
			"admin.user.ban.reason":          "Grund (optional; wird der Person bei der Anmeldung angezeigt)",
			"admin.user.ban.duration":        "Dauer",
			"admin.user.ban.choose":          "Dauer wählen",
			"admin.user.ban.d.hour":          "1 Stunde",
			"admin.user.ban.d.day":           "1 Tag",
			"admin.user.ban.d.week":          "7 Tage",
			"admin.user.ban.d.month":         "30 Tage",
			"admin.user.ban.d.quarter":       "90 Tage",
			"admin.user.ban.d.year":          "1 Jahr",
			"admin.user.ban.d.permanent":     "Dauerhaft",
			"admin.user.ban.check":           "Diesen Benutzer sperren und überall abmelden.",
			"admin.user.ban.submit":          "Benutzer sperren",
			"admin.user.ban.confirm":         "Diesen Benutzer sperren?",
			"admin.user.ban.badduration":     "Wählen Sie eine Dauer aus der Liste.",
			"admin.user.ban.lift":            "Sperre aufheben",
			"admin.user.ban.done":            "Der Benutzer ist gesperrt und überall abgemeldet.",
			"admin.user.ban.lifted":          "Die Sperre wurde aufgehoben. Der Benutzer kann sich wieder anmelden.",
			"admin.user.bans":                "Frühere Sperren",
			"admin.user.bans.none":           "Der Benutzer wurde noch nie gesperrt.",
			"admin.user.bans.when":           "Gesperrt",
			"admin.user.bans.by":             "Von",
			"admin.user.bans.reason":         "Grund",
			"admin.user.bans.end":            "Ende",
			"admin.user.bans.status.active":  "Aktiv",
			"admin.user.bans.status.expired": "Abgelaufen",
			"admin.user.bans.status.lifted":  "Aufgehoben",
			"admin.user.bans.liftedby":       "aufgehoben von %s",
			"admin.user.deletion":            "Löschung",
			"admin.user.deletion.deleted":    "Das Konto wurde am %s gelöscht und wird am %s endgültig entfernt.",
			"admin.user.deletion.requested":  "Der Benutzer hat die Löschung seines Kontos beantragt; es wird am %s endgültig entfernt.",
			"admin.user.deletion.none":       "Das Konto ist nicht zur Löschung vorgemerkt.",
			"admin.user.deletion.intro":      "Das Löschen meldet den Benutzer ab, löscht seine API-Schlüssel und entfernt das Konto nach %d Tagen endgültig; bis dahin kann es hier wiederhergestellt werden.",
			"admin.user.deletion.check":      "Dieses Konto löschen.",
			"admin.user.deletion.submit":     "Konto löschen",
			"admin.user.deletion.confirm":    "Dieses Konto löschen? Es wird nach der Frist endgültig entfernt.",
			"admin.user.deletion.cancel":     "Konto wiederherstellen",
			"admin.user.deletion.scheduled":  "Das Konto wurde gelöscht; es wird nach der Frist endgültig entfernt.",
			"admin.user.deletion.cancelled":  "Die Löschung wurde abgebrochen. Das Konto ist wieder aktiv.",
			"admin.user.force":               "Jetzt endgültig entfernen",
			"admin.user.force.intro":         "Das Konto und alles, was damit verknüpft ist, werden sofort entfernt. Das lässt sich nicht rückgängig machen; das Audit-Log behält nur anonyme Einträge.",
			"admin.user.force.reason":        "Grund (optional)",
			"admin.user.force.type":          "Geben Sie zur Bestätigung den Benutzernamen %s ein",
			"admin.user.force.submit":        "Endgültig entfernen",
			"admin.user.force.confirm":       "Dieses Konto endgültig entfernen? Das lässt sich nicht rückgängig machen.",
			"admin.user.force.mismatch":      "Geben Sie den Benutzernamen genau wie angezeigt ein.",
			"admin.user.force.done":          "Das Konto wurde endgültig entfernt.",
			"admin.user.audit":               "Audit-Log",
			"admin.user.audit.link":          "Alles, was über diesen Benutzer aufgezeichnet wurde",
			"admin.user.audit.title":         "Audit-Log eines Benutzers",
			"admin.user.audit.intro":         "Ereignisse von %s, die neuesten zuerst.",
			"admin.user.audit.back":          "Zurück zum Benutzer",
			"admin.user.audit.by":            "von %s",
		},
	})
}
