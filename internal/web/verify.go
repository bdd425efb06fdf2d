package web

import (
	"context"
	"net/http"
	"net/url"

	"hmid/internal/accounts"
	"hmid/internal/apperr"
	"hmid/internal/auth"
	"hmid/internal/authn"
)

// verifyKind describes one of the two confirmation pages the email-change and
// email-link mails point to. Following the link shows a confirmation button (a
// GET changes nothing, so mail scanners that open links cannot complete the
// change); the POST completes it for the signed-in user, who must be the one
// who asked.
type verifyKind struct {
	path, form, title, confirm, done string
	verify                           func(h *Handler, ctx context.Context, r *http.Request, tok string) error
}

var (
	verifyEmail = verifyKind{accounts.EmailChangePage, "verify-email", "title.verifyemail", "verify.email.confirm", "verify.email.done",
		func(h *Handler, ctx context.Context, r *http.Request, tok string) error {
			return h.Emails.VerifyEmailChange(ctx, r, tok)
		}}
	verifyLink = verifyKind{accounts.EmailLinkPage, "verify-link", "title.linkemail", "verify.link.confirm", "verify.link.done",
		func(h *Handler, ctx context.Context, r *http.Request, tok string) error {
			_, err := h.Emails.VerifyEmailLink(ctx, r, tok)
			return err
		}}
)

// VerifyEmailForm is GET /account/email/verify?token=….
func (h *Handler) VerifyEmailForm(w http.ResponseWriter, r *http.Request) {
	h.verifyForm(w, r, verifyEmail)
}

// VerifyEmailSubmit is POST /account/email/verify.
func (h *Handler) VerifyEmailSubmit(w http.ResponseWriter, r *http.Request) {
	h.verifySubmit(w, r, verifyEmail)
}

// VerifyLinkForm is GET /account/email-link/verify?token=….
func (h *Handler) VerifyLinkForm(w http.ResponseWriter, r *http.Request) {
	h.verifyForm(w, r, verifyLink)
}

// VerifyLinkSubmit is POST /account/email-link/verify.
func (h *Handler) VerifyLinkSubmit(w http.ResponseWriter, r *http.Request) {
	h.verifySubmit(w, r, verifyLink)
}

func (h *Handler) verifyForm(w http.ResponseWriter, r *http.Request, k verifyKind) {
	tok := r.URL.Query().Get("token")
	p := h.session(r)
	if p == nil {
		h.Redirect(w, r, loginURL(k.path+"?token="+url.QueryEscape(tok)))
		return
	}
	h.render(w, r, http.StatusOK, "verify", view{Title: k.title, Notice: k.confirm, CSRF: h.csrfToken(w, r, k.form, p.SessionID),
		Token: tok, ReturnTo: k.path, Username: h.Auth.Username(r.Context(), p.UserID)})
}

func (h *Handler) verifySubmit(w http.ResponseWriter, r *http.Request, k verifyKind) {
	if err := parseForm(r); err != nil {
		h.Fail(w, r, err)
		return
	}
	t := Translator(language(r))
	p := h.session(r)
	if p == nil {
		h.Redirect(w, r, loginURL(k.path+"?token="+url.QueryEscape(r.PostFormValue("token"))))
		return
	}
	if err := h.checkCSRF(r, k.form, p.SessionID); err != nil {
		h.message(w, r, http.StatusForbidden, "title.error", t("err.csrf"))
		return
	}
	if err := k.verify(h, authn.WithPrincipal(r.Context(), p), r, r.PostFormValue("token")); err != nil {
		h.Fail(w, r, err)
		return
	}
	// Done: "Continue" leads to the profile, which shows the new address.
	h.render(w, r, http.StatusOK, "message", view{Title: k.title, Notice: t(k.done), ReturnTo: "/account", LoggedIn: true})
}

// verifyAddressForm is the CSRF form name of the address-verification page.
const verifyAddressForm = "verify-address"

// VerifyAddressForm is GET /verify-email?token=…, the page the verification
// mail of a registration links to. The token is the credential, so no
// sign-in is needed; the page shows the address and a confirmation button,
// and changes nothing itself (a mail scanner opening the link verifies
// nothing).
func (h *Handler) VerifyAddressForm(w http.ResponseWriter, r *http.Request) {
	t := Translator(language(r))
	tok := r.URL.Query().Get("token")
	if tok == "" {
		h.message(w, r, http.StatusBadRequest, "title.verifyaddress", t("verify.address.missing"))
		return
	}
	addr, err := h.Auth.VerificationAddress(r.Context(), tok)
	if err != nil {
		h.verifyAddressFailed(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "verify", view{Title: "title.verifyaddress", Notice: "verify.address.confirm",
		CSRF: h.csrfToken(w, r, verifyAddressForm, ""), Token: tok, ReturnTo: auth.VerifyPage, Username: addr})
}

// VerifyAddressSubmit is POST /verify-email: it verifies the address.
func (h *Handler) VerifyAddressSubmit(w http.ResponseWriter, r *http.Request) {
	if err := parseForm(r); err != nil {
		h.Fail(w, r, err)
		return
	}
	t := Translator(language(r))
	if err := h.checkCSRF(r, verifyAddressForm, ""); err != nil {
		h.message(w, r, http.StatusForbidden, "title.error", t("err.csrf"))
		return
	}
	if _, err := h.Auth.VerifyEmail(r.Context(), r.PostFormValue("token"), auth.MetaFrom(r, Source)); err != nil {
		h.verifyAddressFailed(w, r, err)
		return
	}
	h.message(w, r, http.StatusOK, "title.verifyaddress", t("verify.address.done"))
}

// verifyAddressFailed explains a refused verification: a bad link, an
// address another account owns by now, or anything else as usual.
func (h *Handler) verifyAddressFailed(w http.ResponseWriter, r *http.Request, err error) {
	t := Translator(language(r))
	switch apperr.KindOf(err) {
	case apperr.BadRequest, apperr.Validation:
		h.message(w, r, http.StatusBadRequest, "title.verifyaddress", t("err.badlink"))
	case apperr.Conflict:
		h.message(w, r, http.StatusConflict, "title.verifyaddress", t("verify.address.conflict"))
	default:
		h.Fail(w, r, err)
	}
}
