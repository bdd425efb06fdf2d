package signin

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/auth"
	"hmid/internal/cache"
	"hmid/internal/httpx"
	"hmid/internal/passkey"
	"hmid/internal/secretbox"
	"hmid/internal/sessions"
	"hmid/internal/web"
)

// Sign-in with a passkey. The page's script (passkey.Script) asks
// POST /login/passkey/options for the options of navigator.credentials.get
// and posts the browser's answer to POST /login/passkey; both carry the
// login form's CSRF token, and the ceremony is bound to the browser's CSRF
// cookie. With the state of the two-factor step, the passkey is the second
// factor after the password (or provider) of that state; without, it is the
// whole sign-in (a discoverable credential). Both answer JSON: the options,
// or {redirect} after the session cookie was set; errors are {error,
// message} in the page's language.

// passkeyOffered reports whether the login page shows the passkey
// controls: passkeys on and allowed without a password.
func (h *Pages) passkeyOffered(r *http.Request) bool {
	if h.Passkeys == nil {
		return false
	}
	p, err := h.Passkeys.Policy(r.Context())
	return err == nil && p.Enabled && p.Passwordless && h.Passkeys.Available()
}

// PasskeyOptions is POST /login/passkey/options.
func (h *Pages) PasskeyOptions(w http.ResponseWriter, r *http.Request) {
	binding, st, ok := h.passkeyRequest(w, r)
	if !ok {
		return
	}
	if err := h.beginAllowed(r); err != nil {
		h.jsonError(w, r, err)
		return
	}
	opts, err := h.Passkeys.BeginLogin(r.Context(), binding, st.UserID)
	if err != nil {
		h.jsonError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.JSON(w, http.StatusOK, opts)
}

// BeginsPerMinute bounds the passkey sign-ins one client address may
// begin per minute: each stores a challenge in the shared cache for five
// minutes, so an unbounded stream would fill it. Every view of the login
// page begins one (its autofill request), and many people may share an
// address behind a NAT, so the bound is generous.
const BeginsPerMinute = 120

// beginAllowed takes one begun sign-in from the client address's
// allowance (429 with Retry-After past it; 503 without the limiter's store).
func (h *Pages) beginAllowed(r *http.Request) error {
	if h.Auth.Limiter == nil {
		return nil
	}
	m := auth.MetaFrom(r, web.Source)
	d, err := cache.Allow(r.Context(), h.Auth.Limiter, "passkey:begin:ip:"+m.IP, cache.PerPeriod(BeginsPerMinute, time.Minute))
	if err != nil {
		return apperr.Unavailablef("passkeys are unavailable right now; try again later")
	}
	if !d.Allowed {
		return apperr.RateLimited(d.RetryAfter, "too many passkey sign-ins from this address; try again later")
	}
	return nil
}

// PasskeyLogin is POST /login/passkey.
func (h *Pages) PasskeyLogin(w http.ResponseWriter, r *http.Request) {
	binding, st, ok := h.passkeyRequest(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	m := auth.MetaFrom(r, web.Source)
	c := passkey.Client{IPAddress: m.IP, UserAgent: m.UserAgent, SourceService: m.Source}
	as, err := h.Passkeys.FinishLogin(ctx, binding, st.UserID, []byte(r.PostFormValue("credential")), c)
	if err != nil {
		h.jsonError(w, r, err)
		return
	}
	provider, amr, returnTo := auth.PasskeyProvider, as.AMR, r.PostFormValue("return_to")
	if st.UserID != "" {
		// The second factor: the first step's method, then the passkey;
		// a password (or provider) and a passkey are two factors.
		_ = h.Cache.Delete(ctx, stateKey(r.PostFormValue("state")))
		provider, returnTo = st.provider(), st.ReturnTo
		amr = withMFA(append(sessions.AMR(provider == auth.Platform, false), as.AMR...))
	} else if err := h.singleFactorAllowed(r, as); err != nil {
		h.jsonError(w, r, err)
		return
	}
	res, err := h.Auth.LoginVerified(ctx, as.UserID, provider, amr, m)
	if err != nil {
		h.jsonError(w, r, err)
		return
	}
	auth.SetSessionCookie(w, res.Session, h.Auth.Clock.Now(), h.Secure)
	auth.SetDeviceCookie(w, res.Device, h.Secure)
	w.Header().Set("Cache-Control", "no-store")
	httpx.JSON(w, http.StatusOK, map[string]string{"redirect": h.SafeReturn(returnTo)})
}

// singleFactorAllowed refuses a passwordless sign-in whose authenticator
// did not verify the user (no PIN, no biometric: one factor only) for a
// user who has two-factor authentication on or must have it.
func (h *Pages) singleFactorAllowed(r *http.Request, as passkey.Assertion) error {
	if as.UserVerified || h.Auth.SecondFactor == nil || h.Auth.SecondFactor() == nil {
		return nil
	}
	sf := h.Auth.SecondFactor()
	on, err := sf.Enabled(r.Context(), as.UserID)
	if err == nil && !on {
		on, err = sf.SetupRequired(r.Context(), as.UserID, "")
	}
	if err != nil {
		return err
	}
	if on {
		return apperr.Forbiddenf("this passkey did not verify you (no PIN or fingerprint); sign in with your password")
	}
	return nil
}

// withMFA adds "mfa" to amr once (RFC 8176 §2: more than one factor).
func withMFA(amr []string) []string {
	out := slices.Compact(amr)
	if !slices.Contains(out, "mfa") {
		out = append(out, "mfa")
	}
	return out
}

// passkeyRequest checks the CSRF token of a ceremony request and returns
// the browser's binding (its CSRF cookie) and, for the two-factor step,
// the login state it continues (zero otherwise); on failure it has
// answered.
func (h *Pages) passkeyRequest(w http.ResponseWriter, r *http.Request) (string, codeState, bool) {
	var st codeState
	if h.Passkeys == nil {
		h.jsonError(w, r, apperr.NotFoundf("passkeys are not offered here"))
		return "", st, false
	}
	if err := web.ParseForm(r); err != nil {
		h.jsonError(w, r, err)
		return "", st, false
	}
	if err := h.CheckCSRF(r, "login", ""); err != nil {
		h.jsonError(w, r, apperr.Forbiddenf("%s", web.Translator(web.Language(r))("err.csrf")))
		return "", st, false
	}
	c, _ := r.Cookie(web.CSRFCookie) // present: CheckCSRF needs it
	handle := r.PostFormValue("state")
	if handle == "" {
		return c.Value, st, true
	}
	raw, err := h.Cache.Get(r.Context(), stateKey(handle))
	if err == nil {
		err = json.Unmarshal(raw, &st)
	}
	if err != nil || !secretbox.Equal([]byte(st.Nonce), []byte(c.Value)) || st.UserID == "" {
		if err != nil && !errors.Is(err, cache.ErrMiss) && !apperr.Is(err, apperr.BadRequest) {
			h.jsonError(w, r, err)
			return "", st, false
		}
		h.jsonError(w, r, apperr.Invalid("%s", web.Translator(web.Language(r))("err.state")))
		return "", st, false
	}
	return c.Value, st, true
}

// jsonError answers err as {error, message} with the message in the
// page's language.
func (h *Pages) jsonError(w http.ResponseWriter, r *http.Request, err error) {
	status := h.Status(w, err)
	msg := h.ErrorTextIn(r.Context(), web.Language(r), err)
	if apperr.KindOf(err) == apperr.Unauthorized {
		// Not "wrong email or password": no password was typed.
		msg = web.Translator(web.Language(r))("passkey.refused")
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.JSON(w, status, map[string]string{"error": string(apperr.KindOf(err)), "message": msg})
}

// codeView is the two-factor step for userID: the code form when they have
// TOTP, the passkey button when they have a passkey that counts.
func (h *Pages) codeView(w http.ResponseWriter, r *http.Request, userID, handle, returnTo string) web.View {
	v := web.View{Title: "title.code", CSRF: h.CSRFToken(w, r, "login", ""), State: handle, ReturnTo: returnTo}
	if h.Passkeys == nil {
		return v
	}
	ctx := r.Context()
	if on, err := h.Passkeys.Counts(ctx, userID); err == nil && on {
		v.Passkey = true
		if h.TOTPEnabled != nil {
			totp, err := h.TOTPEnabled(ctx, userID)
			v.NoCode = err == nil && !totp
		}
	}
	return v
}
