package web

import (
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/authn"
)

// The consoles (/account for everyone, /admin for operators: packages
// account and admin, added with AddConsole) have a frame of their own
// (templates/console.html): a navigation beside the content, a flash message after each action
// (POST-redirect-GET), one CSRF token per page bound to the session, and
// the user's preferred locale before Accept-Language. Each area of a
// console is a type of its own (SecurityPages, …) that holds the services it
// calls (the same ones REST calls) and this Handler for the page machinery;
// its routes are in internal/app/routes.go with the REST route's rule, made
// a browser rule (authn.Rule.InBrowser).

// ConsoleForm is the CSRF form name of every console form: a console page
// has one token, valid for all its forms, bound to the session.
const ConsoleForm = "console"

// flashCookie carries the message of the action just done to the page the
// browser is redirected to.
const flashCookie = "hmid_flash"

// consoleTemplates holds, per language, one template per console page,
// filled by AddConsole from the packages of the consoles (each keeps its
// templates beside its code) before any request is served.
var consoleTemplates = map[string]map[string]*page{}

// consoleSite is one console as the frame draws it.
type consoleSite struct {
	prefix string    // of its pages' names: "account_", "admin_"
	nav    []NavItem // its navigation, in order
	admin  bool      // the admin console (its label and navigation)
}

// consoles are the consoles AddConsole added.
var consoles []consoleSite

// AddConsole adds a console: its pages are the files prefix*.html in the
// templates directory of fsys (a page's name is its file name without
// .html), nav is its navigation and admin marks the admin console. Each
// page is parsed with the frame (console.html and the head it shares with
// the layout, head.html), the pieces pages share
// (parts_*.html: form fields, event texts, pagers) and the parts both
// consoles show (shared_*.html: a client's page, a key's page). A console
// package calls it from init; each page is parsed when it is first drawn
// (lazy.go), and a page that does not parse fails TestEveryPageParses.
func AddConsole(fsys fs.FS, prefix string, admin bool, nav []NavItem) {
	names, err := fs.Glob(fsys, "templates/"+prefix+"*.html")
	if err != nil || len(names) == 0 {
		panic("web: no console pages named " + prefix)
	}
	consoles = append(consoles, consoleSite{prefix: prefix, nav: nav, admin: admin})
	parts, err := fs.Glob(fsys, "templates/parts_*.html")
	if err != nil {
		panic("web: " + err.Error())
	}
	for lang := range messages {
		if consoleTemplates[lang] == nil {
			consoleTemplates[lang] = map[string]*page{}
		}
		for _, name := range names {
			funcs := consoleFuncs(lang)
			consoleTemplates[lang][strings.TrimSuffix(path.Base(name), ".html")] = newPage(func() (*template.Template, error) {
				tpl, err := template.New("console.html").Funcs(funcs).
					ParseFS(files, "templates/console.html", "templates/head.html", "templates/parts_*.html", "templates/shared_*.html")
				if err != nil {
					return nil, err
				}
				return tpl.ParseFS(fsys, append(parts, name)...)
			})
		}
	}
}

// Can is a navigation Show func: p holds perm.
func Can(perm string) func(p *authn.Principal) bool {
	return func(p *authn.Principal) bool { return p.Can(perm) }
}

// consoleFuncs are the template functions of the console pages in lang.
func consoleFuncs(lang string) template.FuncMap {
	t := Translator(lang)
	return template.FuncMap{
		"t":       t,
		"initial": initial,
		// tf formats a text with arguments: {{tf "sessions.count" 3}}.
		"tf": func(key string, args ...any) string { return fmt.Sprintf(t(key), args...) },
		// when shows a time in the page's language, in UTC (the page does
		// not know the reader's zone; the zone is written out).
		"when": func(v any) string { return formatTime(lang, v) },
		// filters gathers a list page's filter form for the "filter-box"
		// part: {{template "filter-box" (filters "/path" .Active .FieldErrors .A .B)}}.
		"filters": func(action string, active int, errs map[string]string, fields ...Field) FilterBox {
			return FilterBox{Action: action, Active: active, Invalid: len(errs) > 0, Fields: fields}
		},
		// stored shows a text hmid stores in English (an event's or a seeded
		// role's description) in the page's language when it knows it.
		"stored": func(s string) string { return Stored(lang, s) },
		// button gathers a form of one button for the "post-button" part:
		// {{template "post-button" (button "/path" "label.key" "secondary" $.CSRF)}}.
		"button": func(action, label, class, csrf string) PostButton {
			return PostButton{Action: action, Label: label, Class: class, CSRF: csrf}
		},
	}
}

// PostButton is a form of one button that posts to Action with the
// console's CSRF token, as the "post-button" part draws it: Label is the
// button's message key, Class its classes ("" for the plain button).
type PostButton struct{ Action, Label, Class, CSRF string }

// NavItem is one entry of a console's navigation.
type NavItem struct {
	Section string // the page's section key
	Href    string
	Label   string // message key
	// Show decides whether p sees the entry (nil: everyone).
	Show func(p *authn.Principal) bool
}

// AdminPermissions are the permissions of the admin console's areas: a
// user holding none of them gets 403 on /admin (the overview's rule).
var AdminPermissions = []string{"users:read", "roles:read", "oauth_clients:read", "api_keys:read", "audit:read",
	"settings:read", "chatplatform:read", "devices:read", "trips:read", "webhooks:read"}

// navLink is a navigation entry as the layout shows it.
type navLink struct {
	Href, Label string
	Current     bool
}

// ConsoleView is what console.html reads; Data is the page's own.
type ConsoleView struct {
	Lang     string
	Title    string // message key of the page title (the one h1)
	Section  string // navigation entry to mark current
	Username string
	CSRF     string
	// LogoutCSRF is the token of the log-out button in the top bar.
	LogoutCSRF string
	Flash      string // localized confirmation of the last action
	Error      string // localized error of this request
	Nav        []navLink
	// Admin marks a page of the admin console (its navigation and label).
	Admin bool
	// IsOperator shows the way to the admin console on account pages.
	IsOperator bool
	Data       any
}

// Console renders a console page for the signed-in principal of r (set by
// the browser rule of its route).
func (h *Handler) Console(w http.ResponseWriter, r *http.Request, status int, page string, v ConsoleView) {
	p := authn.From(r.Context())
	securityHeaders(w)
	v.Lang = h.UserLanguage(r, p)
	t := Translator(v.Lang)
	if p != nil {
		v.CSRF = h.CSRFToken(w, r, ConsoleForm, p.SessionID)
		v.LogoutCSRF = h.CSRFToken(w, r, "logout", p.SessionID)
		v.Username = h.Auth.Username(r.Context(), p.UserID)
	}
	if key := h.takeFlash(w, r); key != "" && v.Flash == "" {
		v.Flash = t(key)
	}
	var nav []NavItem
	for _, c := range consoles {
		if strings.HasPrefix(page, c.prefix) {
			nav, v.Admin = c.nav, c.admin
		}
	}
	for _, perm := range AdminPermissions {
		if p != nil && p.Can(perm) {
			v.IsOperator = true
		}
	}
	for _, n := range nav {
		if n.Show == nil || (p != nil && n.Show(p)) {
			v.Nav = append(v.Nav, navLink{Href: n.Href, Label: t(n.Label), Current: n.Section == v.Section})
		}
	}
	h.draw(w, r, status, consoleTemplates[v.Lang][page], page, v)
}

// Show draws the console page page in the frame v with the data build
// returns; when build fails it draws the failure page of its error instead
// (Fail). A page's loader is a function that returns at its first error,
// and this is the one place its failure is drawn.
func (h *Handler) Show(w http.ResponseWriter, r *http.Request, status int, page string, v ConsoleView, build func() (any, error)) {
	data, err := build()
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	v.Data = data
	h.Console(w, r, status, page, v)
}

// ConsolePost reads a console form post and checks its CSRF token. It
// returns the principal, or renders the refusal and returns nil.
func (h *Handler) ConsolePost(w http.ResponseWriter, r *http.Request) *authn.Principal {
	p := authn.From(r.Context())
	if err := ParseForm(r); err != nil {
		h.Fail(w, r, err)
		return nil
	}
	if p == nil {
		h.SignIn(w, r)
		return nil
	}
	if err := h.CheckCSRF(r, ConsoleForm, p.SessionID); err != nil {
		h.Message(w, r, http.StatusForbidden, "title.error", Translator(h.UserLanguage(r, p))("err.csrf"))
		return nil
	}
	return p
}

// Done ends a successful console action: a redirect to the page at to,
// which shows the message of key once (POST-redirect-GET, so reloading
// the page does not repeat the action).
func (h *Handler) Done(w http.ResponseWriter, r *http.Request, to, key string) {
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString([]byte(key)),
		Path: "/", MaxAge: 60, HttpOnly: true, Secure: h.Secure, SameSite: http.SameSiteLaxMode})
	h.Redirect(w, r, to)
}

// takeFlash returns and clears the flash message key of the request; only
// a key of the message table is accepted, so the cookie cannot inject text.
func (h *Handler) takeFlash(w http.ResponseWriter, r *http.Request) string {
	c, err := r.Cookie(flashCookie)
	if err != nil {
		return ""
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: h.Secure, SameSite: http.SameSiteLaxMode})
	raw, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		return ""
	}
	if _, ok := messages["en"][string(raw)]; !ok {
		return ""
	}
	return string(raw)
}

// ErrorText is the localized text of err for the reader of r (see ErrorTextIn).
func (h *Handler) ErrorText(r *http.Request, err error) string {
	return h.ErrorTextIn(r.Context(), h.UserLanguage(r, authn.From(r.Context())), err)
}

// Status is the HTTP status of err for a page (and sets Retry-After on 429).
func (h *Handler) Status(w http.ResponseWriter, err error) int { return status(w, err) }

// SignIn sends the browser to the login page, which returns to the page it
// asked for (authn.PageAnswers).
func (h *Handler) SignIn(w http.ResponseWriter, r *http.Request) {
	back := "/"
	if r.Method == http.MethodGet {
		back = r.URL.RequestURI()
	}
	h.Redirect(w, r, LoginURL(back))
}

// Refuse renders a refused page request (authn.PageAnswers).
func (h *Handler) Refuse(w http.ResponseWriter, r *http.Request, err error) {
	if apperr.KindOf(err) == apperr.Unauthorized {
		h.SignIn(w, r)
		return
	}
	code := status(w, err)
	detail := ""
	var e *apperr.Error
	if errors.As(err, &e) && showsDetail(code) {
		detail = e.Message
	}
	if code >= 500 {
		// Logged here; the page shows only the request id.
		_ = h.ErrorTextIn(r.Context(), Language(r), err)
	}
	h.ErrorPage(w, r, code, detail)
}

// userLanguage is the language of a page for p: their preferred locale when
// it is one the pages speak, else Accept-Language.
func (h *Handler) UserLanguage(r *http.Request, p *authn.Principal) string {
	if p != nil && p.UserID != "" && h.Users != nil {
		if u, err := h.Users.Get(r.Context(), h.Users.DB, p.UserID); err == nil && u.PreferredLocale != nil {
			if _, ok := messages[*u.PreferredLocale]; ok {
				return *u.PreferredLocale
			}
		}
	}
	return Language(r)
}

// formatTime writes a time (time.Time, *time.Time) for lang; nil or zero is "—".
func formatTime(lang string, v any) string {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x != nil {
			t = *x
		}
	}
	if t.IsZero() {
		return "—"
	}
	if lang == "de" {
		return t.UTC().Format("02.01.2006, 15:04") + " UTC"
	}
	return t.UTC().Format("Jan 2, 2006, 15:04") + " UTC"
}
