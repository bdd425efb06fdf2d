package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/auth"
	"hmid/internal/authflow"
	"hmid/internal/cache"
	"hmid/internal/secretbox"
	"hmid/internal/token"
)

// Source is the audit source_service of the pages: the identity web app.
const Source = "id"

// codeStateTTL bounds the time between the password step and the code step
// of a page login.
const codeStateTTL = 5 * time.Minute

// codeState is kept server side between the two login steps: the password
// was right for UserID. Only a random handle goes to the browser, bound to
// its CSRF cookie, so neither the password nor a reusable credential is ever
// echoed into the page.
type codeState struct {
	UserID   string `json:"user_id"`
	Nonce    string `json:"nonce"` // the CSRF cookie it belongs to
	ReturnTo string `json:"return_to"`
	// Provider is the platform of the first step; "" (older states) is
	// the email platform.
	Provider string `json:"provider,omitempty"`
}

// provider is the platform slug of the first step.
func (st codeState) provider() string {
	if st.Provider == "" {
		return auth.Platform
	}
	return st.Provider
}

func stateKey(handle string) string { return "web:login2fa:" + token.Hash(handle) }

// parseForm reads a urlencoded form post; a broken body is a 400.
func parseForm(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return apperr.Bad("the form could not be read")
	}
	return nil
}

// registrationOpen reports whether the login page offers registration.
func (h *Handler) registrationOpen(ctx context.Context) bool {
	ok, err := h.Auth.RegistrationOpen(ctx)
	return err == nil && ok
}

// Home is GET /: the account console for a signed-in browser, else the
// invitation to sign in.
func (h *Handler) Home(w http.ResponseWriter, r *http.Request) {
	if h.session(r) != nil {
		h.Redirect(w, r, "/account")
		return
	}
	h.render(w, r, http.StatusOK, "home", view{Title: "title.home"})
}

// LoginForm is GET /login.
func (h *Handler) LoginForm(w http.ResponseWriter, r *http.Request) {
	returnTo := h.SafeReturn(r.URL.Query().Get("return_to"))
	h.render(w, r, http.StatusOK, "login", view{
		Title: "title.login", CSRF: h.csrfToken(w, r, "login", ""), Email: loginHint(r),
		ReturnTo: returnTo, Register: h.registrationOpen(r.Context()), Providers: h.buttons(r, returnTo),
	})
}

// LoginSubmit is POST /login: the password step, or with a state handle the
// two-factor step. On success the session cookie is set and the browser is
// sent to return_to (when it stays on this service) or to "/".
func (h *Handler) LoginSubmit(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(r); err != nil {
		h.Fail(w, r, err)
		return
	}
	lang := language(r)
	t := Translator(lang)
	returnTo := h.SafeReturn(r.PostFormValue("return_to"))
	again := func(status int, msg string) {
		h.render(w, r, status, "login", view{
			Title: "title.login", CSRF: h.csrfToken(w, r, "login", ""), Error: msg,
			ReturnTo: returnTo, Email: r.PostFormValue("email"), Register: h.registrationOpen(r.Context()),
			Providers: h.buttons(r, returnTo),
		})
	}
	if err := h.checkCSRF(r, "login", ""); err != nil {
		again(http.StatusForbidden, t("err.csrf"))
		return
	}
	m := auth.MetaFrom(r, Source)
	if handle := r.PostFormValue("state"); handle != "" {
		h.codeStep(w, r, handle, m, again)
		return
	}
	res, err := h.Auth.Login(r.Context(), auth.LoginInput{Email: r.PostFormValue("email"), Password: r.PostFormValue("password")}, m)
	if err != nil {
		again(status(w, err), h.errorText(r.Context(), lang, err))
		return
	}
	h.finishLogin(w, r, res, auth.Platform, returnTo)
}

// finishLogin ends a first login step (password or provider): the code
// step when the user has two-factor authentication, else the session.
func (h *Handler) finishLogin(w http.ResponseWriter, r *http.Request, res auth.Result, provider, returnTo string) {
	if !res.TwoFactorRequired {
		h.signedIn(w, r, res, returnTo)
		return
	}
	handle := token.New("hm_ls_")
	raw, _ := json.Marshal(codeState{UserID: res.User.ID, Nonce: h.csrfCookie(w, r), ReturnTo: returnTo, Provider: provider})
	if err := h.Cache.Set(r.Context(), stateKey(handle), raw, codeStateTTL); err != nil {
		h.Fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "code", view{Title: "title.code", CSRF: h.csrfToken(w, r, "login", ""), State: handle, ReturnTo: returnTo})
}

// codeStep is the second login step of the page.
func (h *Handler) codeStep(w http.ResponseWriter, r *http.Request, handle string, m auth.Meta, again func(int, string)) {
	lang := language(r)
	t := Translator(lang)
	raw, err := h.Cache.Get(r.Context(), stateKey(handle))
	var st codeState
	if err == nil {
		err = json.Unmarshal(raw, &st)
	}
	c, cerr := r.Cookie(CSRFCookie)
	if err != nil || cerr != nil || !secretbox.Equal([]byte(st.Nonce), []byte(c.Value)) {
		if err != nil && !errors.Is(err, cache.ErrMiss) {
			h.Fail(w, r, err)
			return
		}
		again(http.StatusBadRequest, t("err.state"))
		return
	}
	res, err := h.Auth.LoginWithCode(r.Context(), st.UserID, st.provider(), r.PostFormValue("code"), m)
	if err != nil {
		code := status(w, err)
		if code == http.StatusBadRequest || code == http.StatusTooManyRequests {
			// A wrong code (or too many): ask again within the same state.
			h.render(w, r, code, "code", view{Title: "title.code", CSRF: h.csrfToken(w, r, "login", ""), State: handle, ReturnTo: st.ReturnTo,
				Error: h.errorText(r.Context(), lang, err)})
			return
		}
		_ = h.Cache.Delete(r.Context(), stateKey(handle))
		again(code, h.errorText(r.Context(), lang, err))
		return
	}
	_ = h.Cache.Delete(r.Context(), stateKey(handle))
	h.signedIn(w, r, res, st.ReturnTo)
}

// signedIn sets the session cookie and leaves the login page.
func (h *Handler) signedIn(w http.ResponseWriter, r *http.Request, res auth.Result, returnTo string) {
	auth.SetSessionCookie(w, res.Session, h.Auth.Clock.Now(), h.Secure)
	auth.SetDeviceCookie(w, res.Device, h.Secure)
	h.Redirect(w, r, h.SafeReturn(returnTo))
}

// RegisterForm is GET /register.
func (h *Handler) RegisterForm(w http.ResponseWriter, r *http.Request) {
	if !h.registrationOpen(r.Context()) {
		h.message(w, r, http.StatusForbidden, "title.register", Translator(language(r))("register.closed"))
		return
	}
	h.render(w, r, http.StatusOK, "register", view{
		Title: "title.register", CSRF: h.csrfToken(w, r, "register", ""), ReturnTo: h.SafeReturn(r.URL.Query().Get("return_to")),
	})
}

// RegisterSubmit is POST /register.
func (h *Handler) RegisterSubmit(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(r); err != nil {
		h.Fail(w, r, err)
		return
	}
	lang := language(r)
	returnTo := h.SafeReturn(r.PostFormValue("return_to"))
	again := func(status int, msg string) {
		h.render(w, r, status, "register", view{
			Title: "title.register", CSRF: h.csrfToken(w, r, "register", ""), Error: msg, ReturnTo: returnTo,
			Email: r.PostFormValue("email"), Username: r.PostFormValue("username"),
		})
	}
	if err := h.checkCSRF(r, "register", ""); err != nil {
		again(http.StatusForbidden, Translator(lang)("err.csrf"))
		return
	}
	res, err := h.Auth.Register(r.Context(), auth.RegisterInput{
		Email: r.PostFormValue("email"), Password: r.PostFormValue("password"), Username: r.PostFormValue("username"),
	}, auth.MetaFrom(r, Source))
	if err != nil {
		again(status(w, err), h.errorText(r.Context(), lang, err))
		return
	}
	h.signedIn(w, r, res, returnTo)
}

// consentReturn is the URL of the consent page for a pending authorization.
func consentReturn(pendingID string) string {
	return "/consent?pending_authorization_id=" + url.QueryEscape(pendingID)
}

// ConsentForm is GET /consent?pending_authorization_id=…: who asks for what,
// with allow and deny buttons. Without a session it sends the browser to the
// login page, which returns here.
func (h *Handler) ConsentForm(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("pending_authorization_id")
	p := h.session(r)
	if p == nil {
		h.Redirect(w, r, loginURL(consentReturn(id)))
		return
	}
	cs := h.consents()
	if cs == nil {
		h.Fail(w, r, apperr.Unavailablef("no OAuth provider is configured"))
		return
	}
	if id == "" {
		h.Fail(w, r, apperr.Invalid("pending_authorization_id is required"))
		return
	}
	pend, err := cs.Pending(r.Context(), id, p.UserID)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	lang := language(r)
	scopes := make([]authflow.Scope, len(pend.Scopes))
	for i, s := range pend.Scopes {
		scopes[i] = authflow.Scope{Name: s.Name, Description: ScopeText(lang, s.Name, s.Description)}
	}
	if !strings.HasPrefix(pend.LogoURL, "https://") {
		// Only https logos are shown (the page's CSP allows no other source).
		pend.LogoURL = ""
	}
	h.render(w, r, http.StatusOK, "consent", view{
		Title: "title.consent", CSRF: h.csrfToken(w, r, "consent", p.SessionID), Client: pend, Scopes: scopes, Pending: id,
		Username: h.Auth.Username(r.Context(), p.UserID),
	})
}

func (h *Handler) consents() authflow.Consents {
	if h.Consents == nil {
		return nil
	}
	return h.Consents()
}

// ConsentSubmit is POST /consent: the decision goes to the OAuth provider,
// and the browser to the URL it answers (the client's redirect URI).
func (h *Handler) ConsentSubmit(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(r); err != nil {
		h.Fail(w, r, err)
		return
	}
	id := r.PostFormValue("pending_authorization_id")
	p := h.session(r)
	if p == nil {
		h.Redirect(w, r, loginURL(consentReturn(id)))
		return
	}
	if err := h.checkCSRF(r, "consent", p.SessionID); err != nil {
		h.message(w, r, http.StatusForbidden, "title.error", Translator(language(r))("err.csrf"))
		return
	}
	cs := h.consents()
	if cs == nil {
		h.Fail(w, r, apperr.Unavailablef("no OAuth provider is configured"))
		return
	}
	var approved bool
	switch r.PostFormValue("decision") {
	case "approve":
		approved = true
	case "deny":
	default:
		h.Fail(w, r, apperr.Invalid("decision must be approve or deny"))
		return
	}
	m := auth.MetaFrom(r, Source)
	to, err := cs.Decide(r.Context(), id, p.UserID, approved, m.IP, m.UserAgent)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	h.Redirect(w, r, to)
}

// LogoutForm is GET /logout: a confirmation button (a GET never logs out, so
// a link or image on another site cannot sign the user out).
func (h *Handler) LogoutForm(w http.ResponseWriter, r *http.Request) {
	p := h.session(r)
	if p == nil {
		h.message(w, r, http.StatusOK, "title.logout", Translator(language(r))("logout.none"))
		return
	}
	h.render(w, r, http.StatusOK, "logout", view{Title: "title.logout", CSRF: h.csrfToken(w, r, "logout", p.SessionID),
		Username: h.Auth.Username(r.Context(), p.UserID)})
}

// LogoutSubmit is POST /logout: revokes the session and clears the cookie.
func (h *Handler) LogoutSubmit(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(r); err != nil {
		h.Fail(w, r, err)
		return
	}
	t := Translator(language(r))
	p := h.session(r)
	if p == nil {
		auth.ClearSessionCookie(w, h.Secure)
		h.message(w, r, http.StatusOK, "title.logout", t("logout.none"))
		return
	}
	if err := h.checkCSRF(r, "logout", p.SessionID); err != nil {
		h.message(w, r, http.StatusForbidden, "title.error", t("err.csrf"))
		return
	}
	if err := h.Auth.Logout(r.Context(), p, auth.MetaFrom(r, Source)); err != nil {
		h.Fail(w, r, err)
		return
	}
	auth.ClearSessionCookie(w, h.Secure)
	h.message(w, r, http.StatusOK, "title.loggedout", t("logout.done"))
}

// ForgotForm is GET /forgot-password.
func (h *Handler) ForgotForm(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "forgot", view{Title: "title.forgot", CSRF: h.csrfToken(w, r, "forgot", "")})
}

// ForgotSubmit is POST /forgot-password: the same answer whether or not the
// account exists.
func (h *Handler) ForgotSubmit(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(r); err != nil {
		h.Fail(w, r, err)
		return
	}
	lang := language(r)
	t := Translator(lang)
	if err := h.checkCSRF(r, "forgot", ""); err != nil {
		h.render(w, r, http.StatusForbidden, "forgot", view{Title: "title.forgot", CSRF: h.csrfToken(w, r, "forgot", ""), Error: t("err.csrf")})
		return
	}
	if err := h.Auth.RequestReset(r.Context(), r.PostFormValue("email"), auth.MetaFrom(r, Source)); err != nil {
		h.render(w, r, status(w, err), "forgot", view{Title: "title.forgot", CSRF: h.csrfToken(w, r, "forgot", ""),
			Error: h.errorText(r.Context(), lang, err), Email: r.PostFormValue("email")})
		return
	}
	h.message(w, r, http.StatusOK, "title.forgot", t("forgot.sent"))
}

// ResetForm is GET /reset-password?token=…, the page the reset mail links to.
func (h *Handler) ResetForm(w http.ResponseWriter, r *http.Request) {
	tok := r.URL.Query().Get("token")
	if tok == "" {
		h.message(w, r, http.StatusBadRequest, "title.reset", Translator(language(r))("reset.missing"))
		return
	}
	h.render(w, r, http.StatusOK, "reset", view{Title: "title.reset", CSRF: h.csrfToken(w, r, "reset", ""), Token: tok})
}

// ResetSubmit is POST /reset-password.
func (h *Handler) ResetSubmit(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(r); err != nil {
		h.Fail(w, r, err)
		return
	}
	lang := language(r)
	t := Translator(lang)
	tok := strings.TrimSpace(r.PostFormValue("token"))
	again := func(status int, msg string) {
		h.render(w, r, status, "reset", view{Title: "title.reset", CSRF: h.csrfToken(w, r, "reset", ""), Token: tok, Error: msg})
	}
	if err := h.checkCSRF(r, "reset", ""); err != nil {
		again(http.StatusForbidden, t("err.csrf"))
		return
	}
	err := h.Auth.ConfirmReset(r.Context(), tok, r.PostFormValue("password"), auth.MetaFrom(r, Source))
	switch {
	case apperr.KindOf(err) == apperr.BadRequest:
		h.message(w, r, http.StatusBadRequest, "title.reset", t("err.badlink"))
	case err != nil:
		again(status(w, err), h.errorText(r.Context(), lang, err))
	default:
		auth.ClearSessionCookie(w, h.Secure)
		h.message(w, r, http.StatusOK, "title.reset", t("reset.done"))
	}
}
