package signin

import (
	"net/http"
	"net/url"
	"strings"

	"hmid/internal/apperr"
	"hmid/internal/auth"
	"hmid/internal/authflow"
	"hmid/internal/authn"
	"hmid/internal/oauth"
	"hmid/internal/web"
)

// The verification page of the device authorization grant (RFC 8628 §3.3):
// /device asks the signed-in person for the code their device shows (in the
// field user_code, prefilled from verification_uri_complete's query), then
// shows which app asks for what under that code, and approves or denies.
// Signed-out people go through the login page (with its two-factor step)
// first and come back with the code. The page warns that a code must come
// from the person's own device: a code sent by someone else is a phishing
// attempt to get their account onto the sender's device (RFC 8628 §5.4).

// deviceForm is the CSRF form name of the verification page.
const deviceForm = "device"

// deviceReturn is the verification page with the code typed or linked so far.
func deviceReturn(code string) string {
	if code == "" {
		return oauth.DeviceVerificationPath
	}
	return oauth.DeviceVerificationPath + "?" + url.Values{oauth.UserCodeParam: {code}}.Encode()
}

// approver is the person deciding, from their session.
func approver(p *authn.Principal) authflow.Approver {
	return authflow.Approver{UserID: p.UserID, AuthTime: p.AuthTime, AMR: p.AMR}
}

// devices is the OAuth provider's side of the page, or nil.
func (h *Pages) devices() authflow.Devices {
	if h.Devices == nil {
		return nil
	}
	return h.Devices()
}

// DeviceForm is GET /device[?user_code=…]: the code form, prefilled.
func (h *Pages) DeviceForm(w http.ResponseWriter, r *http.Request) {
	code := strings.TrimSpace(r.URL.Query().Get(oauth.UserCodeParam))
	if len(code) > 32 {
		code = ""
	}
	p := h.Session(r)
	if p == nil {
		h.Redirect(w, r, web.LoginURL(deviceReturn(code)))
		return
	}
	h.renderDevice(w, r, http.StatusOK, p, code, authflow.DeviceRequest{}, "")
}

// renderDevice draws the page: the code form, or with req set the request
// to approve or deny. The code travels as the hidden field user_code.
func (h *Pages) renderDevice(w http.ResponseWriter, r *http.Request, status int, p *authn.Principal, code string, req authflow.DeviceRequest, errText string) {
	lang := web.Language(r)
	v := web.View{
		Title: "title.device", CSRF: h.CSRFToken(w, r, deviceForm, p.SessionID), Error: errText,
		Username: h.Auth.Username(r.Context(), p.UserID), Hidden: []web.HiddenField{{Name: oauth.UserCodeParam, Value: code}},
	}
	if req.ClientID != "" {
		v.Title = "title.device.confirm"
		v.Client = authflow.Pending{ClientID: req.ClientID, ClientName: req.ClientName, LogoURL: req.LogoURL, ExpiresAt: req.ExpiresAt}
		if !strings.HasPrefix(v.Client.LogoURL, "https://") {
			v.Client.LogoURL = "" // the page's CSP shows https logos only
		}
		v.Hidden[0].Value = req.UserCode
		if req.NeedsConsent {
			for _, s := range req.Scopes {
				v.Scopes = append(v.Scopes, authflow.Scope{Name: s.Name, Description: web.ScopeText(lang, s.Name, s.Description)})
			}
		}
	}
	h.Render(w, r, status, "device", v)
}

// DeviceSubmit is POST /device: with decision approve or deny it decides
// the request of user_code; without, it looks the code up and shows the
// request.
func (h *Pages) DeviceSubmit(w http.ResponseWriter, r *http.Request) {
	lang, t, ok := h.posted(w, r)
	if !ok {
		return
	}
	code := strings.TrimSpace(r.PostFormValue(oauth.UserCodeParam))
	p := h.Session(r)
	if p == nil {
		h.Redirect(w, r, web.LoginURL(deviceReturn(code)))
		return
	}
	if err := h.CheckCSRF(r, deviceForm, p.SessionID); err != nil {
		h.renderDevice(w, r, http.StatusForbidden, p, code, authflow.DeviceRequest{}, t("err.csrf"))
		return
	}
	ds := h.devices()
	if ds == nil {
		h.Fail(w, r, apperr.Unavailablef("no OAuth provider is configured"))
		return
	}
	m := auth.MetaFrom(r, web.Source)
	decision := r.PostFormValue("decision")
	if decision == "" {
		req, err := ds.FindDevice(r.Context(), approver(p), code, m.IP)
		if err != nil {
			h.renderDevice(w, r, h.Status(w, err), p, code, authflow.DeviceRequest{}, h.deviceError(r, lang, err))
			return
		}
		h.renderDevice(w, r, http.StatusOK, p, code, req, "")
		return
	}
	if decision != "approve" && decision != "deny" {
		h.renderDevice(w, r, http.StatusBadRequest, p, code, authflow.DeviceRequest{}, t("device.err.decision"))
		return
	}
	req, err := ds.DecideDevice(r.Context(), approver(p), code, decision == "approve", m.IP, m.UserAgent)
	if err != nil {
		h.renderDevice(w, r, h.Status(w, err), p, code, authflow.DeviceRequest{}, h.deviceError(r, lang, err))
		return
	}
	if decision == "approve" {
		h.Message(w, r, http.StatusOK, "title.device.done", strings.Replace(t("device.approved"), "%s", req.ClientName, 1))
		return
	}
	h.Message(w, r, http.StatusOK, "title.device.denied", t("device.denied"))
}

// deviceError is the text of a refused code: the page's own for a wrong
// code and for too many, else the kit's.
func (h *Pages) deviceError(r *http.Request, lang string, err error) string {
	t := web.Translator(lang)
	switch apperr.KindOf(err) {
	case apperr.NotFound:
		return t("device.err.code")
	case apperr.TooManyRequests:
		return t("device.err.throttled")
	}
	return h.ErrorTextIn(r.Context(), lang, err)
}
