package oauth

import (
	"context"
	"errors"
	"mime"
	"net/http"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/oauth/claims"
	"hmid/internal/oauth/store"
	"hmid/internal/token"
)

// ResolveAccessToken turns an OAuth access token (hm_at_) into a principal
// (authn.OAuthTokens). Unknown, expired or revoked tokens, tokens of inactive
// clients and tokens of deleted or banned users are authn.ErrInvalidToken.
func (s *Service) ResolveAccessToken(ctx context.Context, tok string) (*authn.Principal, error) {
	if isClientToken(tok) {
		return s.resolveClientToken(ctx, tok)
	}
	p, _, err := s.resolveAccess(ctx, tok, nil)
	return p, err
}

// resolveAccess resolves an access token; with cr set it also reads the
// user's claim columns into cr, and the token's authentication context.
func (s *Service) resolveAccess(ctx context.Context, tok string, cr *claims.Row) (*authn.Principal, *store.AccessToken, error) {
	if !token.HasShape(tok, token.PrefixAccessToken) && !authn.LooksLikeJWT(tok) {
		return nil, nil, authn.ErrInvalidToken
	}
	now := s.Clock.Now()
	row, err := s.Store.ResolveAccess(ctx, token.Hash(tok), now, cr)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, authn.ErrInvalidToken
	}
	if err != nil {
		return nil, nil, apperr.Unavailable(err, "database unavailable")
	}
	expiresAt := db.FromTS(row.Expires)
	if !now.Before(expiresAt) {
		return nil, nil, authn.ErrInvalidToken
	}
	return authn.NewPrincipal(authn.Principal{
		Kind: authn.KindOAuth, UserID: row.UserID, OAuthClientID: row.ClientID, OAuthScopes: row.Scopes,
		OAuthTokenID: row.ID, OAuthAudience: store.DecodeResources(row.Audience), ExpiresAt: expiresAt, AuthTime: db.FromTS(row.AuthTime),
	}, nil), row, nil
}

// UserInfo serves GET and POST /v1/oauth/userinfo (OpenID Connect Core §5.3;
// spec 1, UserInfo claims). The access token comes in the Authorization
// header or, on POST, as the access_token form field (RFC 6750 §2.1, §2.2).
func (h *Handler) UserInfo(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	bearerError := func(status int, code, desc string) {
		v := `Bearer realm="hmid"`
		if code != "" {
			v += `, error="` + code + `", error_description="` + desc + `"`
		}
		w.Header().Set("WWW-Authenticate", v)
		if code == "" {
			code = ErrInvalidToken
		}
		httpx.JSON(w, status, map[string]string{"error": code, "error_description": desc})
	}
	tok := ""
	hdr := r.Header.Get("Authorization")
	if hdr != "" {
		var ok bool
		if tok, ok = authn.ParseBearer(hdr); !ok {
			bearerError(http.StatusUnauthorized, ErrInvalidToken, "malformed Authorization header")
			return
		}
	}
	if r.Method == http.MethodPost {
		ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if ct == "application/x-www-form-urlencoded" {
			if err := r.ParseForm(); err != nil {
				bearerError(http.StatusBadRequest, ErrInvalidRequest, "the form body could not be parsed")
				return
			}
			if v := r.PostForm["access_token"]; len(v) > 0 {
				// RFC 6750 §2: one method per request.
				if tok != "" || len(v) > 1 {
					bearerError(http.StatusBadRequest, ErrInvalidRequest, "send the access token once")
					return
				}
				tok = v[0]
			}
		}
	}
	if tok == "" {
		// RFC 6750 §3.1: a request without credentials gets no error code.
		bearerError(http.StatusUnauthorized, "", "an access token is required")
		return
	}
	var row claims.Row
	p, t, err := h.S.resolveAccess(r.Context(), tok, &row)
	if err != nil {
		if apperr.Is(err, apperr.Unauthorized) {
			bearerError(http.StatusUnauthorized, ErrInvalidToken, "the access token is invalid, expired or revoked")
			return
		}
		httpx.Error(w, r, err)
		return
	}
	if !p.HasOAuthScope("openid") {
		bearerError(http.StatusForbidden, ErrInsufficientScope, "the access token lacks the openid scope")
		return
	}
	// The authentication context rides on the token row, read with it.
	var set claims.Set
	if err := h.S.releasedClaims(r.Context(), p.UserID, &row, p.OAuthScopes, userInfoContext(t.Context), true, &set); err != nil {
		httpx.Error(w, r, err)
		return
	}
	set.Write(w)
}
