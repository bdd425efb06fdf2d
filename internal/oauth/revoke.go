package oauth

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/oauth/store"
	"hmid/internal/token"
)

// callerForm is the front of the endpoints whose caller authenticates in
// or beside a form body (device authorization, revocation, introspection):
// it parses the form and authenticates the caller with authenticate. On
// failure it has answered, and ok is false.
func callerForm[C any](w http.ResponseWriter, r *http.Request, authenticate func(*http.Request, url.Values) (C, *Error)) (caller C, form url.Values, ok bool) {
	form, oe := parseForm(r)
	if oe != nil {
		writeOAuthError(w, oe)
		return caller, nil, false
	}
	if caller, oe = authenticate(r, form); oe != nil {
		writeOAuthError(w, logged(r, oe))
		return caller, nil, false
	}
	return caller, form, true
}

// tokenForm is callerForm for the endpoints that act on the form's
// token (RFC 7009 §2.1, RFC 7662 §2.1), which is required.
func tokenForm[C any](w http.ResponseWriter, r *http.Request, authenticate func(*http.Request, url.Values) (C, *Error)) (caller C, tok string, ok bool) {
	caller, form, ok := callerForm(w, r, authenticate)
	if !ok {
		return caller, "", false
	}
	if tok = form.Get("token"); tok == "" {
		writeOAuthError(w, oerr(ErrInvalidRequest, "token is required"))
		return caller, "", false
	}
	return caller, tok, true
}

// formClient authenticates the client of a form as at the token endpoint
// (authenticateClient), for callerForm.
func (s *Service) formClient(r *http.Request, form url.Values) (Client, *Error) {
	c, _, oe := s.authenticateClient(r.Context(), r, form)
	return c, oe
}

// Revoke serves POST /v1/oauth/revoke (RFC 7009; spec 1, Revocation). The
// client must authenticate; the answer is 200 whether or not the token
// existed, and a token of another client is left alone without telling
// (RFC 7009 §2.1). Revoking an access token revokes the refresh token issued
// with it; revoking a refresh token revokes every token of its authorization
// (RFC 7009 §2.1: "all access tokens based on the same authorization grant").
func (h *Handler) Revoke(w http.ResponseWriter, r *http.Request) {
	s := h.S
	c, tok, ok := tokenForm(w, r, s.formClient)
	if !ok {
		return
	}
	// The hint only speeds up a lookup (RFC 7009 §2.1); tokens are found by
	// hash whatever the hint, and the prefix tells the kind.
	if !strings.HasPrefix(tok, token.PrefixAccessToken) && !strings.HasPrefix(tok, token.PrefixRefreshToken) && !authn.LooksLikeJWT(tok) {
		securityHeaders(w)
		w.WriteHeader(http.StatusOK)
		return
	}
	ctx := r.Context()
	if isClientToken(tok) {
		if err := s.Store.RevokeClientToken(ctx, token.Hash(tok), c.ID, s.Clock.Now()); err != nil {
			writeOAuthError(w, asOAuth(r, err))
			return
		}
		securityHeaders(w)
		w.WriteHeader(http.StatusOK)
		return
	}
	now := s.Clock.Now()
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		t, err := s.Store.TokenByHash(ctx, tx, token.Hash(tok))
		if errors.Is(err, store.ErrNotFound) || (err == nil && t.ClientID != c.ID) {
			return nil
		}
		if err != nil {
			return err
		}
		return s.Store.RevokeWithKin(ctx, tx, t, now)
	})
	if err != nil {
		writeOAuthError(w, asOAuth(r, err))
		return
	}
	securityHeaders(w)
	w.WriteHeader(http.StatusOK)
}
