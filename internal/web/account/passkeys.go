package account

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/auth"
	"hmid/internal/authn"
	"hmid/internal/httpx"
	"hmid/internal/passkey"
	"hmid/internal/twofactor"
	"hmid/internal/web"
)

// RecentAuth is how long after signing in a person may add a passkey
// without confirming it is them again (the password or a TOTP code).
const RecentAuth = 10 * time.Minute

// passkeysView is the passkey section of the security page.
type passkeysView struct {
	// Off: passkeys are turned off (or HMID_PUBLIC_URL names no domain).
	Off  bool
	List []passkey.Passkey
	// Recent: the session signed in within RecentAuth, so adding one asks
	// for nothing more.
	Recent bool
}

// passkeys fills the passkey section for the signed-in user.
func (sp *SecurityPages) passkeys(r *http.Request, d *securityData) error {
	if sp.Passkeys == nil {
		d.Passkeys = passkeysView{Off: true}
		return nil
	}
	ctx := r.Context()
	p := authn.From(ctx)
	pol, err := sp.Passkeys.Policy(ctx)
	if err != nil {
		return err
	}
	v := passkeysView{Off: !pol.Enabled || !sp.Passkeys.Available(), Recent: recent(p, sp.H.Auth.Clock.Now())}
	if v.List, err = sp.Passkeys.List(ctx, p.UserID); err != nil {
		return err
	}
	d.Passkeys = v
	return nil
}

// recent reports whether the session's sign-in was within RecentAuth.
func recent(p *authn.Principal, now time.Time) bool {
	return !p.AuthTime.IsZero() && now.Sub(p.AuthTime) < RecentAuth
}

// PasskeyOptions is POST /account/security/passkeys/options, called by the
// page's script: after recent authentication (the sign-in, else the
// password or a TOTP code sent along), the options of
// navigator.credentials.create, bound to this browser.
func (sp *SecurityPages) PasskeyOptions(w http.ResponseWriter, r *http.Request) {
	p, ok := sp.jsonPost(w, r)
	if !ok {
		return
	}
	if err := sp.confirmRecent(r, p); err != nil {
		sp.jsonError(w, r, err)
		return
	}
	c, _ := r.Cookie(web.CSRFCookie)
	opts, err := sp.Passkeys.BeginRegistration(r.Context(), p.UserID, c.Value)
	if err != nil {
		sp.jsonError(w, r, err)
		return
	}
	httpx.JSON(w, http.StatusOK, opts)
}

// confirmRecent lets a registration begin: the session signed in within
// RecentAuth, or the request carries the password or a TOTP (or backup)
// code of the user.
func (sp *SecurityPages) confirmRecent(r *http.Request, p *authn.Principal) error {
	if recent(p, sp.H.Auth.Clock.Now()) {
		return nil
	}
	ctx := r.Context()
	m := auth.MetaFrom(r, web.Source)
	if code := r.PostFormValue("code"); code != "" {
		return sp.TwoFactor.ConfirmCode(ctx, p.UserID, code, "passkey_registration",
			twofactor.Client{IPAddress: m.IP, UserAgent: m.UserAgent, SourceService: m.Source})
	}
	has, err := sp.H.Auth.ConfirmPassword(ctx, p.UserID, r.PostFormValue("password"), m.IP)
	if !has && err == nil {
		return apperr.Forbiddenf("%s", sp.t(r)("security.pk.signinagain"))
	}
	return err
}

// AddPasskey is POST /account/security/passkeys, called by the page's
// script with the browser's answer: the passkey is stored (passkey_added,
// a mail) and the answer names the page to go to, which shows it.
func (sp *SecurityPages) AddPasskey(w http.ResponseWriter, r *http.Request) {
	p, ok := sp.jsonPost(w, r)
	if !ok {
		return
	}
	c, _ := r.Cookie(web.CSRFCookie)
	m := auth.MetaFrom(r, web.Source)
	_, err := sp.Passkeys.FinishRegistration(r.Context(), p.UserID, c.Value, []byte(r.PostFormValue("credential")), r.PostFormValue("name"),
		passkey.Client{IPAddress: m.IP, UserAgent: m.UserAgent, SourceService: m.Source})
	if err != nil {
		sp.jsonError(w, r, err)
		return
	}
	sp.H.Done(w, r, "/account/security", "security.pk.done")
}

// RenamePasskey is POST /account/security/passkeys/{id}/rename (a plain form).
func (sp *SecurityPages) RenamePasskey(w http.ResponseWriter, r *http.Request) {
	sp.passkeyForm(w, r, "security.pk.renamed", func(p *authn.Principal, id string) error {
		_, err := sp.Passkeys.Rename(r.Context(), p.UserID, id, r.PostFormValue("name"))
		return err
	}, func(err error) {
		sp.render(w, r, sp.H.Status(w, err), &securityData{PasskeyErrID: chi.URLParam(r, "id"), PasskeyErr: sp.H.ErrorText(r, err)}, "")
	})
}

// RemovePasskey is POST /account/security/passkeys/{id}/remove (a plain
// form; the script asks for confirmation first).
func (sp *SecurityPages) RemovePasskey(w http.ResponseWriter, r *http.Request) {
	sp.passkeyForm(w, r, "security.pk.removed", func(p *authn.Principal, id string) error {
		m := auth.MetaFrom(r, web.Source)
		return sp.Passkeys.Remove(r.Context(), "", p.UserID, id, passkey.Client{IPAddress: m.IP, UserAgent: m.UserAgent, SourceService: m.Source})
	}, func(err error) {
		sp.render(w, r, sp.H.Status(w, err), &securityData{}, sp.H.ErrorText(r, err))
	})
}

// passkeyForm is the shape of the plain passkey forms: the console post is
// read, a server without passkeys has none to change (404), call changes
// the passkey of the path's id, and the browser goes back to the security
// page with flash, or refused draws the page again with the error.
func (sp *SecurityPages) passkeyForm(w http.ResponseWriter, r *http.Request, flash string, call func(p *authn.Principal, id string) error, refused func(err error)) {
	p := sp.H.ConsolePost(w, r)
	if p == nil {
		return
	}
	if sp.Passkeys == nil {
		sp.H.Fail(w, r, apperr.NotFoundf("passkey not found"))
		return
	}
	if err := call(p, chi.URLParam(r, "id")); err != nil {
		refused(err)
		return
	}
	sp.H.Done(w, r, "/account/security", flash)
}

// jsonPost checks a script's POST like ConsolePost, answering JSON.
func (sp *SecurityPages) jsonPost(w http.ResponseWriter, r *http.Request) (*authn.Principal, bool) {
	p := authn.From(r.Context())
	if sp.Passkeys == nil || p == nil {
		sp.jsonError(w, r, apperr.NotFoundf("passkeys are not offered here"))
		return nil, false
	}
	if err := web.ParseForm(r); err != nil {
		sp.jsonError(w, r, err)
		return nil, false
	}
	if err := sp.H.CheckCSRF(r, web.ConsoleForm, p.SessionID); err != nil {
		sp.jsonError(w, r, apperr.Forbiddenf("%s", sp.t(r)("err.csrf")))
		return nil, false
	}
	return p, true
}

// jsonError answers err as {error, message}, the message in the reader's
// language.
func (sp *SecurityPages) jsonError(w http.ResponseWriter, r *http.Request, err error) {
	status := sp.H.Status(w, err)
	w.Header().Set("Cache-Control", "no-store")
	httpx.JSON(w, status, map[string]string{"error": string(apperr.KindOf(err)), "message": sp.H.ErrorText(r, err)})
}
