// Package web is the kit the built-in HTML pages of hmid are made with:
// the layout and the console frame, the stylesheet and script, CSRF tokens,
// flash messages, the texts in English and German and the choice between
// them, the signed-in principal, the error pages a browser gets where an
// API client gets JSON (ErrorPages), and the shapes every page uses: a form
// post (Action, Act, FormRefusal), a list with filters and paging (list.go),
// and the pages of one OAuth client and one API key both consoles show
// (CredentialPages). The pages themselves live in one package per room:
// internal/web/signin (login, registration, consent, logout, upstream
// sign-in, verification, password reset), internal/web/account (the account
// console) and internal/web/admin (the admin console); each keeps its
// templates and texts and adds them here (AddPages, AddConsole, AddMessages).
// The routes and their rules are in internal/app/routes.go, the one table.
//
// They are plain server-rendered html/template pages with one embedded
// stylesheet and no inline script, in English and German (by
// Accept-Language), so a person in a browser can finish an OAuth sign-in
// without any other front end (DECISIONS.md, OAuth and OIDC).
//
// Every form carries a CSRF token: an HMAC, under the server key, of the form
// name, a random pre-session cookie (hmid_csrf) and, once signed in, the
// session id. A cross-site page can neither read the cookie nor compute the
// HMAC. Origin and Sec-Fetch-Site are checked too when the browser sends them.
package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/auth"
	"hmid/internal/authflow"
	"hmid/internal/authn"
	"hmid/internal/cache"
	"hmid/internal/httpx"
	"hmid/internal/secretbox"
	"hmid/internal/upstream"
	"hmid/internal/users"
)

//go:embed templates/*.html static/hmid.css static/hmid.js static/favicon.ico
var files embed.FS

// Handler serves the pages.
type Handler struct {
	Auth *auth.Service
	// Consents returns the OAuth provider's consent service at request time
	// (nil while no OAuth provider is wired: the consent page answers 503).
	Consents func() authflow.Consents
	// Logouts returns the OAuth provider's end-session checks at request
	// time (nil while none is wired: the end-session endpoint answers 503).
	Logouts func() authflow.Logouts
	// SessionEnded is told when the end-session endpoint logged a session
	// out, so back-channel logout tokens go out at once (nil: nobody listens).
	SessionEnded func()
	// Box computes the CSRF HMACs with the server key.
	Box *secretbox.Box
	// Cache keeps the short-lived state between the password step and the
	// two-factor step of a page login.
	Cache cache.Cache
	// PublicURL is HMID_PUBLIC_URL: the one absolute prefix return_to may have.
	PublicURL string
	// Secure sets the Secure attribute on cookies (PublicURL is https).
	Secure bool
	Log    *slog.Logger
	// Emails confirms email changes and email links from the links in their mails.
	Emails EmailVerifier
	// Users reads the signed-in user of a console page (name, locale).
	Users *users.Service
	// Providers are the configured upstream sign-in providers (nil: none).
	Providers *upstream.Registry
	// Flow keeps provider sign-ins between start and callback.
	Flow *upstream.Flow
}

// EmailVerifier completes email changes and email links (the accounts area).
type EmailVerifier interface {
	VerifyEmailChange(ctx context.Context, r *http.Request, tok string) error
	VerifyEmailLink(ctx context.Context, r *http.Request, tok string) (string, error)
}

// CSRFCookie is the pre-session cookie the CSRF tokens are bound to.
const CSRFCookie = "hmid_csrf"

// csrfField is the form field carrying the CSRF token.
const csrfField = "csrf_token"

// contentSecurityPolicy allows only the site's own stylesheet, script and
// images (client logos may be on any https host); no inline script or style
// runs (no 'unsafe-inline'), nothing may frame
// the pages (clickjacking on the consent page), and <base> cannot be
// injected. form-action is left out on purpose: browsers apply it to the
// redirect that follows a form post, and the consent form must redirect to
// the client's own redirect URI.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'"

// securityHeaders are set on every page.
func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Vary", "Accept-Language, Cookie")
}

// Stylesheet serves the embedded CSS.
func (h *Handler) Stylesheet(w http.ResponseWriter, r *http.Request) {
	serveStatic(w, "static/hmid.css", "text/css; charset=utf-8", 3600)
}

// Script serves the embedded script: small progressive enhancements (copy
// to clipboard, confirmation of destructive actions); every page works
// without it.
func (h *Handler) Script(w http.ResponseWriter, r *http.Request) {
	serveStatic(w, "static/hmid.js", "text/javascript; charset=utf-8", 3600)
}

// Favicon serves the embedded icon at /favicon.ico, where browsers ask for
// it on every site: hmid's mark, a 32×32 PNG in an ICO container.
func (h *Handler) Favicon(w http.ResponseWriter, r *http.Request) {
	serveStatic(w, "static/favicon.ico", "image/x-icon", 86400)
}

// serveStatic writes the embedded file name as contentType, cacheable for
// maxAge seconds: the static files are public and change only with a
// release.
func serveStatic(w http.ResponseWriter, name, contentType string, maxAge int) {
	body, _ := files.ReadFile(name)
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(maxAge))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(body)
}

// templates holds, per language, one template per page drawn in the
// layout (layout.html): the kit's message and error pages, and the pages of
// the packages that add theirs (AddPages). The "t" function is bound to the
// Language at parse time, so a template cannot mix languages.
var templates = map[string]map[string]*page{}

// AddPages adds the pages matching glob in fsys (a page's name is its file
// name without .html), each drawn in the layout with parts: the files in
// fsys of the pieces its pages share, which are no pages themselves. A
// package of pages calls it from init; each page is parsed when it is
// first drawn (lazy.go), and a page that does not parse fails
// TestEveryPageParses.
func AddPages(fsys fs.FS, glob string, parts ...string) {
	names, err := fs.Glob(fsys, glob)
	if err != nil || len(names) == 0 {
		panic("web: no pages match " + glob)
	}
	names = slices.DeleteFunc(names, func(name string) bool { return slices.Contains(parts, name) })
	for lang := range messages {
		if templates[lang] == nil {
			templates[lang] = map[string]*page{}
		}
		for _, name := range names {
			funcs := template.FuncMap{"t": Translator(lang), "initial": initial}
			own := slices.Concat(parts, []string{name})
			templates[lang][strings.TrimSuffix(path.Base(name), ".html")] = newPage(func() (*template.Template, error) {
				tpl, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/head.html")
				if err != nil {
					return nil, err
				}
				return tpl.ParseFS(fsys, own...)
			})
		}
	}
}

// The kit's own pages: a message, an error.
func init() {
	AddPages(files, "templates/message.html")
	AddPages(files, "templates/error.html")
}

// initial is the first letter of a client name, shown when it has no logo.
func initial(s string) string {
	for _, r := range s {
		return string(unicode.ToUpper(r))
	}
	return "?"
}

// View is what every page template reads.
type View struct {
	Lang     string
	Title    string // message key of the page title
	CSRF     string
	Error    string // localized error, shown as an alert above the content
	Notice   string // localized confirmation
	ReturnTo string
	Email    string
	Username string
	// Register shows the registration link (email platform open for it).
	Register bool
	State    string // two-factor step state
	Token    string // password-reset token
	Client   authflow.Pending
	Scopes   []authflow.Scope
	Pending  string
	LoggedIn bool
	// Providers are the "Sign in with …" buttons of the login page.
	Providers []ProviderButton
	// Status, Detail and RequestID are the error page's (ErrorPage).
	Status    int
	Detail    string
	RequestID string
	// Hidden are the request parameters a confirmation form carries on.
	Hidden []HiddenField
	// Passkey offers sign-in with a passkey (the login page, the two-factor
	// step); NoCode says the two-factor step has no TOTP to ask for (the
	// user's second factor is a passkey only).
	Passkey, NoCode bool
	// Password is the rules and strength hint of a form that sets a new
	// password (registration, reset).
	Password PasswordHint
}

// HiddenField is one hidden input of a form.
type HiddenField struct{ Name, Value string }

// Render writes page with status.
func (h *Handler) Render(w http.ResponseWriter, r *http.Request, status int, page string, v View) {
	securityHeaders(w)
	h.write(w, r, status, page, v)
}

// write executes page in the language of r and writes it with status; the
// caller has set the headers.
func (h *Handler) write(w http.ResponseWriter, r *http.Request, status int, page string, v View) {
	v.Lang = Language(r)
	h.draw(w, r, status, templates[v.Lang][page], page, v)
}

// draw executes the page tpl (named name, for the log) with v and writes
// it with status, or answers 500 and logs why when it does not parse or
// run: the page is written only once it is complete.
func (h *Handler) draw(w http.ResponseWriter, r *http.Request, status int, tpl *page, name string, v any) {
	var buf bytes.Buffer
	t, err := tpl.get()
	if err == nil {
		err = t.Execute(&buf, v)
	}
	if err != nil {
		h.Log.ErrorContext(r.Context(), "render page", slog.String("page", name), slog.String("error", err.Error()))
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// Message renders a page with only a title and a text.
func (h *Handler) Message(w http.ResponseWriter, r *http.Request, status int, title, text string) {
	h.Render(w, r, status, "message", Outcome(status, View{Title: title}, text))
}

// Outcome puts text on v as a confirmation, or for an error status as the
// page's alert: a refusal must not look like the green "done" of a success.
func Outcome(status int, v View, text string) View {
	if status >= http.StatusBadRequest {
		v.Error = text
	} else {
		v.Notice = text
	}
	return v
}

// fail renders err on a message page with its HTTP status.
func (h *Handler) Fail(w http.ResponseWriter, r *http.Request, err error) {
	lang := Language(r)
	h.Message(w, r, status(w, err), "title.error", h.ErrorTextIn(r.Context(), lang, err))
}

// ErrorTextIn localizes an error for a page. Messages of expected kinds are
// the service's own (English) detail after a localized sentence; internal
// errors are logged and shown only as a generic sentence.
func (h *Handler) ErrorTextIn(ctx context.Context, lang string, err error) string {
	t := Translator(lang)
	if h.Auth != nil {
		if text := PasswordProblem(lang, err, h.Auth.PasswordRules()); text != "" {
			return text
		}
	}
	var ban *auth.Ban
	if errors.As(err, &ban) {
		return BanText(lang, ban)
	}
	kind := apperr.KindOf(err)
	if kind == apperr.Internal {
		h.Log.ErrorContext(ctx, "page error", slog.String("error", err.Error()))
		return t("err.internal")
	}
	if kind == apperr.ServiceUnavailable {
		// An outage (apperr.KindOf classifies driver errors too) is no fault
		// of the person's input.
		h.Log.WarnContext(ctx, "page dependency unavailable", slog.String("error", err.Error()))
		return t("err.unavailable")
	}
	var e *apperr.Error
	if !errors.As(err, &e) {
		return t("err.internal")
	}
	switch e.Kind {
	case apperr.Unauthorized:
		return t("err.credentials")
	case apperr.TooManyRequests:
		return t("err.throttled")
	case apperr.Forbidden:
		return t("err.forbidden") + " " + e.Message
	case apperr.Conflict:
		return t("err.conflict")
	case apperr.NotFound:
		return t("err.notfound")
	default:
		return t("err.invalid") + " " + e.Message
	}
}

// status returns the HTTP status of err for a page, the one the REST API
// answers it with, and sets Retry-After when err is a rate limit (RFC 9110
// §10.2.3).
func status(w http.ResponseWriter, err error) int {
	var e *apperr.Error
	if errors.As(err, &e) && e.Kind == apperr.TooManyRequests && e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	return httpx.StatusOf(apperr.KindOf(err))
}

// ---- CSRF ----

// EnsureCSRFCookie returns the request's CSRF cookie value, setting a new one when
// it is missing or malformed.
func (h *Handler) EnsureCSRFCookie(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(CSRFCookie); err == nil && validNonce(c.Value) {
		return c.Value
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	v := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: CSRFCookie, Value: v, Path: "/", HttpOnly: true, Secure: h.Secure, SameSite: http.SameSiteLaxMode})
	// Later code of this request reads the cookie from the request.
	r.AddCookie(&http.Cookie{Name: CSRFCookie, Value: v})
	return v
}

func validNonce(s string) bool {
	b, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil && len(b) == 32
}

// CSRFToken is the token of form for this browser (and session, "" before login).
func (h *Handler) CSRFToken(w http.ResponseWriter, r *http.Request, form, sessionID string) string {
	nonce := h.EnsureCSRFCookie(w, r)
	return base64.RawURLEncoding.EncodeToString(h.Box.MAC([]byte("hmid csrf"), []byte(form), []byte(nonce), []byte(sessionID)))
}

// errCSRF is shown when a form post fails the CSRF checks.
var errCSRF = apperr.Forbiddenf("the form was sent from another site or has expired")

// CheckCSRF verifies a form post: the browser's fetch metadata and origin,
// when sent, must be this site, and the token must be the HMAC of the form,
// the CSRF cookie and the session (compared in constant time).
func (h *Handler) CheckCSRF(r *http.Request, form, sessionID string) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return errCSRF
	}
	// "null" is what browsers send under Referrer-Policy: no-referrer
	// (Fetch, "serializing a request origin"); the token still decides then.
	if o := r.Header.Get("Origin"); o != "" && o != "null" && !h.sameOrigin(r, o) {
		return errCSRF
	}
	c, err := r.Cookie(CSRFCookie)
	if err != nil || !validNonce(c.Value) {
		return errCSRF
	}
	got, err := base64.RawURLEncoding.DecodeString(r.PostFormValue(csrfField))
	if err != nil {
		return errCSRF
	}
	want := h.Box.MAC([]byte("hmid csrf"), []byte(form), []byte(c.Value), []byte(sessionID))
	if !secretbox.Equal(got, want) {
		return errCSRF
	}
	return nil
}

// sameOrigin reports whether origin is the public URL's origin, or the
// origin the request was addressed to (a browser never lets a page forge the
// Host of another site).
func (h *Handler) sameOrigin(r *http.Request, origin string) bool {
	if u, err := url.Parse(h.PublicURL); err == nil && strings.EqualFold(origin, u.Scheme+"://"+u.Host) {
		return true
	}
	scheme := "http"
	if r.TLS != nil || h.Secure {
		scheme = "https"
	}
	return strings.EqualFold(origin, scheme+"://"+r.Host)
}

// ---- sessions and redirects ----

// Session returns the signed-in principal of the hmid_session cookie, or nil.
func (h *Handler) Session(r *http.Request) *authn.Principal {
	c, err := r.Cookie(auth.CookieName)
	if err != nil || c.Value == "" {
		return nil
	}
	p, err := h.Auth.Session(r.Context(), c.Value)
	if err != nil {
		return nil
	}
	return p
}

// SafeReturn returns return_to when it stays on this service: a relative
// path on this origin (not "//host", which browsers read as another host),
// or an absolute URL under HMID_PUBLIC_URL. Anything else becomes "/", so
// the login page cannot be used as an open redirector.
func (h *Handler) SafeReturn(s string) string {
	// 8 KiB leaves room for an authorization request carrying an
	// id_token_hint and a claims parameter.
	if s == "" || len(s) > 8192 || strings.ContainsAny(s, "\\\r\n\t") {
		return "/"
	}
	for _, c := range s {
		if c < 0x20 || c == 0x7f {
			return "/"
		}
	}
	if strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//") {
		if u, err := url.Parse(s); err == nil && u.Scheme == "" && u.Host == "" {
			return s
		}
		return "/"
	}
	base := strings.TrimRight(h.PublicURL, "/")
	if s == base || strings.HasPrefix(s, base+"/") || strings.HasPrefix(s, base+"?") {
		pu, err1 := url.Parse(base)
		u, err2 := url.Parse(s)
		if err1 == nil && err2 == nil && strings.EqualFold(u.Scheme, pu.Scheme) && strings.EqualFold(u.Host, pu.Host) && u.User == nil {
			return s
		}
	}
	return "/"
}

func (h *Handler) Redirect(w http.ResponseWriter, r *http.Request, to string) {
	securityHeaders(w)
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// LoginURL is the login page that returns to returnTo.
func LoginURL(returnTo string) string {
	return "/login?return_to=" + url.QueryEscape(returnTo)
}

// ---- language ----

// Language picks en or de: the ui_locales of an OpenID Connect request when
// it names one (requestUILocale), else from Accept-Language (RFC 9110 §12.5.4) the
// supported language with the highest weight; English when none matches.
func Language(r *http.Request) string {
	if l := requestUILocale(r); l != "" {
		return l
	}
	best, bestQ := "en", -1.0
	for _, part := range strings.Split(r.Header.Get("Accept-Language"), ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				continue
			}
			q = f
		}
		primary, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
		if _, ok := messages[primary]; ok && q > 0 && q > bestQ {
			best, bestQ = primary, q
		}
	}
	return best
}

// Source is the audit source_service of the pages: the identity web app.
const Source = "id"

// AdminSource is the audit source_service of the admin console's actions:
// spec 2 (Events) names the operators' dashboard "backend".
const AdminSource = "backend"

// AuditSource wraps the handler of the page at path so that the events its
// actions record without a source of their own are the website's ("id"), or
// under /admin the admin console's ("backend"), rather than the API's
// (audit.WithSource).
func AuditSource(path string, h http.HandlerFunc) http.HandlerFunc {
	src := Source
	if path == "/admin" || strings.HasPrefix(path, "/admin/") {
		src = AdminSource
	}
	return func(w http.ResponseWriter, r *http.Request) {
		h(w, r.WithContext(audit.WithSource(r.Context(), src)))
	}
}

// ParseForm reads a urlencoded form post; a broken body is a 400.
func ParseForm(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return apperr.Bad("the form could not be read")
	}
	return nil
}
