package signin

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
	"hmid/internal/authn"
	"hmid/internal/cache"
	"hmid/internal/secretbox"
	"hmid/internal/token"
	"hmid/internal/web"
)

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

// registrationOpen reports whether the login page offers registration.
func (h *Pages) registrationOpen(ctx context.Context) bool {
	ok, err := h.Auth.RegistrationOpen(ctx)
	return err == nil && ok
}

// The sign-in pages' form posts start alike: the form is read (a body that
// is none answers as an error page) and the CSRF token checked. A form
// sent before sign-in is drawn again with its refusal (posted, tokenOK); a
// form of a signed-in person sends a browser without a session to sign in
// and answers a failed token with the error page (sessionPost).

// posted reads the form post of r and returns the browser's language and
// its texts; ok is false when the answer is written.
func (h *Pages) posted(w http.ResponseWriter, r *http.Request) (lang string, t func(string) string, ok bool) {
	if err := web.ParseForm(r); err != nil {
		h.Fail(w, r, err)
		return "", nil, false
	}
	lang = web.Language(r)
	return lang, web.Translator(lang), true
}

// tokenOK checks the CSRF token of form, sent before sign-in, and when it
// fails draws the page again with again (403, the text err.csrf).
func (h *Pages) tokenOK(r *http.Request, form string, again func(status int, msg string)) bool {
	if err := h.CheckCSRF(r, form, ""); err != nil {
		again(http.StatusForbidden, web.Translator(web.Language(r))("err.csrf"))
		return false
	}
	return true
}

// sessionPost reads the post of form, a form of a signed-in person: a
// browser without a session is sent to sign in and come back to back (of
// the read form), and a token that is not the session's is answered 403.
// It returns the session, or nil when the answer is written.
func (h *Pages) sessionPost(w http.ResponseWriter, r *http.Request, form string, back func() string) *authn.Principal {
	if _, _, ok := h.posted(w, r); !ok {
		return nil
	}
	p := h.Session(r)
	if p == nil {
		h.Redirect(w, r, web.LoginURL(back()))
		return nil
	}
	if err := h.CheckCSRF(r, form, p.SessionID); err != nil {
		h.Message(w, r, http.StatusForbidden, "title.error", web.Translator(web.Language(r))("err.csrf"))
		return nil
	}
	return p
}

// Home is GET /: the account console for a signed-in browser, else the
// invitation to sign in.
func (h *Pages) Home(w http.ResponseWriter, r *http.Request) {
	if h.Session(r) != nil {
		h.Redirect(w, r, "/account")
		return
	}
	h.Render(w, r, http.StatusOK, "home", web.View{Title: "title.home"})
}

// LoginForm is GET /login.
func (h *Pages) LoginForm(w http.ResponseWriter, r *http.Request) {
	h.loginPage(w, r, http.StatusOK, h.SafeReturn(r.URL.Query().Get("return_to")), web.LoginHint(r), "")
}

// loginPage draws the login page with status: email in its field, msg (a
// refusal) above the form, and returnTo the page it leads back to.
func (h *Pages) loginPage(w http.ResponseWriter, r *http.Request, status int, returnTo, email, msg string) {
	h.Render(w, r, status, "login", web.View{
		Title: "title.login", CSRF: h.CSRFToken(w, r, "login", ""), Error: msg, Email: email,
		ReturnTo: returnTo, Register: h.registrationOpen(r.Context()), Providers: h.Buttons(r, returnTo),
		Passkey: h.passkeyOffered(r),
	})
}

// LoginSubmit is POST /login: the password step, or with a state handle the
// two-factor step. On success the session cookie is set and the browser is
// sent to return_to (when it stays on this service) or to "/".
func (h *Pages) LoginSubmit(w http.ResponseWriter, r *http.Request) {
	lang, _, ok := h.posted(w, r)
	if !ok {
		return
	}
	returnTo := h.SafeReturn(r.PostFormValue("return_to"))
	again := func(status int, msg string) { h.loginPage(w, r, status, returnTo, r.PostFormValue("email"), msg) }
	if !h.tokenOK(r, "login", again) {
		return
	}
	m := auth.MetaFrom(r, web.Source)
	if handle := r.PostFormValue("state"); handle != "" {
		h.codeStep(w, r, handle, m, again)
		return
	}
	res, err := h.Auth.Login(r.Context(), auth.LoginInput{Email: r.PostFormValue("email"), Password: r.PostFormValue("password")}, m)
	if err != nil {
		again(h.Status(w, err), h.ErrorTextIn(r.Context(), lang, err))
		return
	}
	h.finishLogin(w, r, res, auth.Platform, returnTo)
}

// finishLogin ends a first login step (password or provider): the code
// step when the user has two-factor authentication, else the session.
func (h *Pages) finishLogin(w http.ResponseWriter, r *http.Request, res auth.Result, provider, returnTo string) {
	if !res.TwoFactorRequired {
		h.signedIn(w, r, res, returnTo)
		return
	}
	handle := token.New("hm_ls_")
	raw, _ := json.Marshal(codeState{UserID: res.User.ID, Nonce: h.EnsureCSRFCookie(w, r), ReturnTo: returnTo, Provider: provider})
	if err := h.Cache.Set(r.Context(), stateKey(handle), raw, codeStateTTL); err != nil {
		h.Fail(w, r, err)
		return
	}
	h.Render(w, r, http.StatusOK, "code", h.codeView(w, r, res.User.ID, handle, returnTo))
}

// codeStep is the second login step of the page.
func (h *Pages) codeStep(w http.ResponseWriter, r *http.Request, handle string, m auth.Meta, again func(int, string)) {
	lang := web.Language(r)
	t := web.Translator(lang)
	raw, err := h.Cache.Get(r.Context(), stateKey(handle))
	var st codeState
	if err == nil {
		err = json.Unmarshal(raw, &st)
	}
	c, cerr := r.Cookie(web.CSRFCookie)
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
		code := h.Status(w, err)
		if code == http.StatusBadRequest || code == http.StatusTooManyRequests {
			// A wrong code (or too many): ask again within the same state.
			v := h.codeView(w, r, st.UserID, handle, st.ReturnTo)
			v.Error = h.ErrorTextIn(r.Context(), lang, err)
			h.Render(w, r, code, "code", v)
			return
		}
		_ = h.Cache.Delete(r.Context(), stateKey(handle))
		again(code, h.ErrorTextIn(r.Context(), lang, err))
		return
	}
	_ = h.Cache.Delete(r.Context(), stateKey(handle))
	h.signedIn(w, r, res, st.ReturnTo)
}

// signedIn sets the session cookie and leaves the login page.
func (h *Pages) signedIn(w http.ResponseWriter, r *http.Request, res auth.Result, returnTo string) {
	auth.SetSessionCookie(w, res.Session, h.Auth.Clock.Now(), h.Secure)
	auth.SetDeviceCookie(w, res.Device, h.Secure)
	h.Redirect(w, r, h.SafeReturn(returnTo))
}

// RegisterForm is GET /register.
func (h *Pages) RegisterForm(w http.ResponseWriter, r *http.Request) {
	if !h.registrationOpen(r.Context()) {
		h.Message(w, r, http.StatusForbidden, "title.register", web.Translator(web.Language(r))("register.closed"))
		return
	}
	h.registerPage(w, r, http.StatusOK, h.SafeReturn(r.URL.Query().Get("return_to")), "")
}

// registerPage draws the registration page with status: msg (a refusal)
// above the form, the posted email and username in their fields (none
// before the form is sent), and returnTo the page it leads back to.
func (h *Pages) registerPage(w http.ResponseWriter, r *http.Request, status int, returnTo, msg string) {
	h.Render(w, r, status, "register", web.View{
		Title: "title.register", CSRF: h.CSRFToken(w, r, "register", ""), Error: msg, ReturnTo: returnTo,
		Email: r.PostFormValue("email"), Username: r.PostFormValue("username"),
		Password: web.NewPasswordHint(web.Language(r), h.Auth.PasswordRules()),
	})
}

// RegisterSubmit is POST /register.
func (h *Pages) RegisterSubmit(w http.ResponseWriter, r *http.Request) {
	lang, _, ok := h.posted(w, r)
	if !ok {
		return
	}
	returnTo := h.SafeReturn(r.PostFormValue("return_to"))
	again := func(status int, msg string) { h.registerPage(w, r, status, returnTo, msg) }
	if !h.tokenOK(r, "register", again) {
		return
	}
	res, err := h.Auth.Register(r.Context(), auth.RegisterInput{
		Email: r.PostFormValue("email"), Password: r.PostFormValue("password"), Username: r.PostFormValue("username"),
	}, auth.MetaFrom(r, web.Source))
	if err != nil {
		again(h.Status(w, err), h.ErrorTextIn(r.Context(), lang, err))
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
func (h *Pages) ConsentForm(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("pending_authorization_id")
	p := h.Session(r)
	if p == nil {
		h.Redirect(w, r, web.LoginURL(consentReturn(id)))
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
	lang := web.Language(r)
	scopes := make([]authflow.Scope, len(pend.Scopes))
	for i, s := range pend.Scopes {
		scopes[i] = authflow.Scope{Name: s.Name, Description: web.ScopeText(lang, s.Name, s.Description)}
	}
	if !strings.HasPrefix(pend.LogoURL, "https://") {
		// Only https logos are shown (the page's CSP allows no other source).
		pend.LogoURL = ""
	}
	h.Render(w, r, http.StatusOK, "consent", web.View{
		Title: "title.consent", CSRF: h.CSRFToken(w, r, "consent", p.SessionID), Client: pend, Scopes: scopes, Pending: id,
		Username: h.Auth.Username(r.Context(), p.UserID),
	})
}

func (h *Pages) consents() authflow.Consents {
	if h.Consents == nil {
		return nil
	}
	return h.Consents()
}

// ConsentSubmit is POST /consent: the decision goes to the OAuth provider,
// and the browser to the URL it answers (the client's redirect URI).
func (h *Pages) ConsentSubmit(w http.ResponseWriter, r *http.Request) {
	id := func() string { return r.PostFormValue("pending_authorization_id") }
	p := h.sessionPost(w, r, "consent", func() string { return consentReturn(id()) })
	if p == nil {
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
	m := auth.MetaFrom(r, web.Source)
	to, err := cs.Decide(r.Context(), id(), p.UserID, approved, m.IP, m.UserAgent)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	h.Redirect(w, r, to)
}

// LogoutForm is GET /logout: a confirmation button (a GET never logs out, so
// a link or image on another site cannot sign the user out).
func (h *Pages) LogoutForm(w http.ResponseWriter, r *http.Request) {
	p := h.Session(r)
	if p == nil {
		h.Message(w, r, http.StatusOK, "title.logout", web.Translator(web.Language(r))("logout.none"))
		return
	}
	h.Render(w, r, http.StatusOK, "logout", web.View{Title: "title.logout", CSRF: h.CSRFToken(w, r, "logout", p.SessionID),
		Username: h.Auth.Username(r.Context(), p.UserID)})
}

// LogoutSubmit is POST /logout: revokes the session and clears the cookie.
func (h *Pages) LogoutSubmit(w http.ResponseWriter, r *http.Request) {
	_, t, ok := h.posted(w, r)
	if !ok {
		return
	}
	p := h.Session(r)
	if p == nil {
		auth.ClearSessionCookie(w, h.Secure)
		h.Message(w, r, http.StatusOK, "title.logout", t("logout.none"))
		return
	}
	if err := h.CheckCSRF(r, "logout", p.SessionID); err != nil {
		h.Message(w, r, http.StatusForbidden, "title.error", t("err.csrf"))
		return
	}
	if err := h.Auth.Logout(r.Context(), p, auth.MetaFrom(r, web.Source)); err != nil {
		h.Fail(w, r, err)
		return
	}
	auth.ClearSessionCookie(w, h.Secure)
	h.Message(w, r, http.StatusOK, "title.loggedout", t("logout.done"))
}

// ForgotForm is GET /forgot-password.
func (h *Pages) ForgotForm(w http.ResponseWriter, r *http.Request) {
	h.Render(w, r, http.StatusOK, "forgot", web.View{Title: "title.forgot", CSRF: h.CSRFToken(w, r, "forgot", "")})
}

// ForgotSubmit is POST /forgot-password: the same answer whether or not the
// account exists.
func (h *Pages) ForgotSubmit(w http.ResponseWriter, r *http.Request) {
	lang, t, ok := h.posted(w, r)
	if !ok {
		return
	}
	if err := h.CheckCSRF(r, "forgot", ""); err != nil {
		h.Render(w, r, http.StatusForbidden, "forgot", web.View{Title: "title.forgot", CSRF: h.CSRFToken(w, r, "forgot", ""), Error: t("err.csrf")})
		return
	}
	if err := h.Auth.RequestReset(r.Context(), r.PostFormValue("email"), auth.MetaFrom(r, web.Source)); err != nil {
		h.Render(w, r, h.Status(w, err), "forgot", web.View{Title: "title.forgot", CSRF: h.CSRFToken(w, r, "forgot", ""),
			Error: h.ErrorTextIn(r.Context(), lang, err), Email: r.PostFormValue("email")})
		return
	}
	h.Message(w, r, http.StatusOK, "title.forgot", t("forgot.sent"))
}

// ResetForm is GET /reset-password?token=…, the page the reset mail links to.
func (h *Pages) ResetForm(w http.ResponseWriter, r *http.Request) {
	tok := r.URL.Query().Get("token")
	if tok == "" {
		h.Message(w, r, http.StatusBadRequest, "title.reset", web.Translator(web.Language(r))("reset.missing"))
		return
	}
	h.Render(w, r, http.StatusOK, "reset", web.View{Title: "title.reset", CSRF: h.CSRFToken(w, r, "reset", ""), Token: tok,
		Password: web.NewPasswordHint(web.Language(r), h.Auth.PasswordRules())})
}

// ResetSubmit is POST /reset-password.
func (h *Pages) ResetSubmit(w http.ResponseWriter, r *http.Request) {
	lang, t, ok := h.posted(w, r)
	if !ok {
		return
	}
	tok := strings.TrimSpace(r.PostFormValue("token"))
	again := func(status int, msg string) {
		h.Render(w, r, status, "reset", web.View{Title: "title.reset", CSRF: h.CSRFToken(w, r, "reset", ""), Token: tok, Error: msg,
			Password: web.NewPasswordHint(lang, h.Auth.PasswordRules())})
	}
	if !h.tokenOK(r, "reset", again) {
		return
	}
	err := h.Auth.ConfirmReset(r.Context(), tok, r.PostFormValue("password"), auth.MetaFrom(r, web.Source))
	switch {
	case apperr.KindOf(err) == apperr.BadRequest:
		h.Message(w, r, http.StatusBadRequest, "title.reset", t("err.badlink"))
	case err != nil:
		again(h.Status(w, err), h.ErrorTextIn(r.Context(), lang, err))
	default:
		auth.ClearSessionCookie(w, h.Secure)
		h.Message(w, r, http.StatusOK, "title.reset", t("reset.done"))
	}
}
