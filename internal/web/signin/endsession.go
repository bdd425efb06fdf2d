package signin

import (
	"net/http"

	"hmid/internal/apperr"
	"hmid/internal/auth"
	"hmid/internal/authflow"
	"hmid/internal/web"
)

// endSessionParams are the RP-Initiated Logout parameters a confirmation
// form carries on to its POST (OpenID Connect RP-Initiated Logout 1.0 §2).
var endSessionParams = []string{"id_token_hint", "logout_hint", "client_id", "post_logout_redirect_uri", "state", "ui_locales"}

// confirmField is the button of the confirmation form: its presence tells
// the confirmation POST from an RP's POST of the logout request.
const confirmField = "hmid_confirm"

// EndSession serves GET and POST /v1/oauth/logout, the end_session_endpoint
// (OpenID Connect RP-Initiated Logout 1.0 §2). The OAuth provider checks the
// request (authflow.Logouts). A request whose id_token_hint proves it comes
// from a client of this browser's session logs the session out at once;
// any other asks the person first (§2: the OP SHOULD ask when the hint is
// missing or does not match), with a CSRF-protected form that posts back
// here. After logout the browser goes to the verified
// post_logout_redirect_uri with state (§3), else sees a "logged out" page.
// Bad input gets an error page (400) and never a redirect.
func (h *Pages) EndSession(w http.ResponseWriter, r *http.Request) {
	if err := web.ParseForm(r); err != nil {
		h.Fail(w, r, err)
		return
	}
	if l := web.UILocale(r.Form.Get("ui_locales")); l != "" {
		// ui_locales (§2) outranks the browser's Accept-web.Language.
		r.Header.Set("Accept-web.Language", l)
	}
	lo := h.logouts()
	if lo == nil {
		h.Fail(w, r, apperr.Unavailablef("no OAuth provider is configured"))
		return
	}
	p := h.Session(r)
	sessionID, userID := "", ""
	if p != nil {
		sessionID, userID = p.SessionID, p.UserID
	}
	params := map[string][]string{}
	for _, k := range endSessionParams {
		if v, ok := r.Form[k]; ok {
			params[k] = v
		}
	}
	es, err := lo.CheckEndSession(r.Context(), params, sessionID, userID)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	t := web.Translator(web.Language(r))
	confirmed := r.Method == http.MethodPost && r.PostForm.Get(confirmField) != ""
	if confirmed {
		if err := h.CheckCSRF(r, "end_session", sessionID); err != nil {
			h.Message(w, r, http.StatusForbidden, "title.error", t("err.csrf"))
			return
		}
	}
	if !es.Confirmed && !confirmed {
		h.confirmEndSession(w, r, es, params, sessionID, userID)
		return
	}
	if p != nil {
		if err := h.Auth.Logout(r.Context(), p, auth.MetaFrom(r, web.Source)); err != nil {
			h.Fail(w, r, err)
			return
		}
		if h.SessionEnded != nil {
			h.SessionEnded()
		}
	}
	auth.ClearSessionCookie(w, h.Secure)
	if es.RedirectURL != "" {
		h.Redirect(w, r, es.RedirectURL)
		return
	}
	h.Message(w, r, http.StatusOK, "title.loggedout", t("logout.done"))
}

// confirmEndSession renders the question "Log out of hmid?" with the
// request's parameters as hidden fields.
func (h *Pages) confirmEndSession(w http.ResponseWriter, r *http.Request, es authflow.EndSession, params map[string][]string, sessionID, userID string) {
	v := web.View{Title: "title.logout", CSRF: h.CSRFToken(w, r, "end_session", sessionID), ReturnTo: es.RedirectURL}
	v.Client.ClientName = es.ClientName
	if userID != "" {
		v.Username = h.Auth.Username(r.Context(), userID)
	}
	for _, k := range endSessionParams {
		if vs := params[k]; len(vs) == 1 {
			v.Hidden = append(v.Hidden, web.HiddenField{Name: k, Value: vs[0]})
		}
	}
	h.Render(w, r, http.StatusOK, "endsession", v)
}

func (h *Pages) logouts() authflow.Logouts {
	if h.Logouts == nil {
		return nil
	}
	return h.Logouts()
}
