package signin

import (
	"context"
	"net/http"
	"net/url"

	"hmid/internal/accounts"
	"hmid/internal/apperr"
	"hmid/internal/auth"
	"hmid/internal/authn"
	"hmid/internal/web"
)

// verifyKind describes one of the two confirmation pages the email-change and
// email-link mails point to. Following the link shows a confirmation button (a
// GET changes nothing, so mail scanners that open links cannot complete the
// change); the POST completes it for the signed-in user, who must be the one
// who asked.
type verifyKind struct {
	path, form, title, confirm, done string
	verify                           func(h *Pages, ctx context.Context, r *http.Request, tok string) error
}

var (
	verifyEmail = verifyKind{accounts.EmailChangePage, "verify-email", "title.verifyemail", "verify.email.confirm", "verify.email.done",
		func(h *Pages, ctx context.Context, r *http.Request, tok string) error {
			return h.Emails.VerifyEmailChange(ctx, r, tok)
		}}
	verifyLink = verifyKind{accounts.EmailLinkPage, "verify-link", "title.linkemail", "verify.link.confirm", "verify.link.done",
		func(h *Pages, ctx context.Context, r *http.Request, tok string) error {
			_, err := h.Emails.VerifyEmailLink(ctx, r, tok)
			return err
		}}
)

// VerifyEmailForm is GET /account/email/verify?token=….
func (h *Pages) VerifyEmailForm(w http.ResponseWriter, r *http.Request) {
	h.verifyForm(w, r, verifyEmail)
}

// VerifyEmailSubmit is POST /account/email/verify.
func (h *Pages) VerifyEmailSubmit(w http.ResponseWriter, r *http.Request) {
	h.verifySubmit(w, r, verifyEmail)
}

// VerifyLinkForm is GET /account/email-link/verify?token=….
func (h *Pages) VerifyLinkForm(w http.ResponseWriter, r *http.Request) {
	h.verifyForm(w, r, verifyLink)
}

// VerifyLinkSubmit is POST /account/email-link/verify.
func (h *Pages) VerifyLinkSubmit(w http.ResponseWriter, r *http.Request) {
	h.verifySubmit(w, r, verifyLink)
}

func (h *Pages) verifyForm(w http.ResponseWriter, r *http.Request, k verifyKind) {
	tok := r.URL.Query().Get("token")
	p := h.Session(r)
	if p == nil {
		h.Redirect(w, r, web.LoginURL(k.path+"?token="+url.QueryEscape(tok)))
		return
	}
	h.Render(w, r, http.StatusOK, "verify", web.View{Title: k.title, Notice: k.confirm, CSRF: h.CSRFToken(w, r, k.form, p.SessionID),
		Token: tok, ReturnTo: k.path, Username: h.Auth.Username(r.Context(), p.UserID)})
}

func (h *Pages) verifySubmit(w http.ResponseWriter, r *http.Request, k verifyKind) {
	p := h.sessionPost(w, r, k.form, func() string { return k.path + "?token=" + url.QueryEscape(r.PostFormValue("token")) })
	if p == nil {
		return
	}
	t := web.Translator(web.Language(r))
	if err := k.verify(h, authn.WithPrincipal(r.Context(), p), r, r.PostFormValue("token")); err != nil {
		h.Fail(w, r, err)
		return
	}
	// Done: "Continue" leads to the profile, which shows the new address.
	h.Render(w, r, http.StatusOK, "message", web.View{Title: k.title, Notice: t(k.done), ReturnTo: "/account", LoggedIn: true})
}

// verifyAddressForm is the CSRF form name of the address-verification page.
const verifyAddressForm = "verify-address"

// VerifyAddressForm is GET /verify-email?token=…, the page the verification
// mail of a registration links to. The token is the credential, so no
// sign-in is needed; the page shows the address and a confirmation button,
// and changes nothing itself (a mail scanner opening the link verifies
// nothing).
func (h *Pages) VerifyAddressForm(w http.ResponseWriter, r *http.Request) {
	t := web.Translator(web.Language(r))
	tok := r.URL.Query().Get("token")
	if tok == "" {
		h.Message(w, r, http.StatusBadRequest, "title.verifyaddress", t("verify.address.missing"))
		return
	}
	addr, err := h.Auth.VerificationAddress(r.Context(), tok)
	if err != nil {
		h.verifyAddressFailed(w, r, err)
		return
	}
	h.Render(w, r, http.StatusOK, "verify", web.View{Title: "title.verifyaddress", Notice: "verify.address.confirm",
		CSRF: h.CSRFToken(w, r, verifyAddressForm, ""), Token: tok, ReturnTo: auth.VerifyPage, Username: addr})
}

// VerifyAddressSubmit is POST /verify-email: it verifies the address.
func (h *Pages) VerifyAddressSubmit(w http.ResponseWriter, r *http.Request) {
	_, t, ok := h.posted(w, r)
	if !ok {
		return
	}
	if err := h.CheckCSRF(r, verifyAddressForm, ""); err != nil {
		h.Message(w, r, http.StatusForbidden, "title.error", t("err.csrf"))
		return
	}
	if _, err := h.Auth.VerifyEmail(r.Context(), r.PostFormValue("token"), auth.MetaFrom(r, web.Source)); err != nil {
		h.verifyAddressFailed(w, r, err)
		return
	}
	h.Message(w, r, http.StatusOK, "title.verifyaddress", t("verify.address.done"))
}

// verifyAddressFailed explains a refused verification: a bad link, an
// address another account owns by now, or anything else as usual.
func (h *Pages) verifyAddressFailed(w http.ResponseWriter, r *http.Request, err error) {
	t := web.Translator(web.Language(r))
	switch apperr.KindOf(err) {
	case apperr.BadRequest, apperr.Validation:
		h.Message(w, r, http.StatusBadRequest, "title.verifyaddress", t("err.badlink"))
	case apperr.Conflict:
		h.Message(w, r, http.StatusConflict, "title.verifyaddress", t("verify.address.conflict"))
	default:
		h.Fail(w, r, err)
	}
}
