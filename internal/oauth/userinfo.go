package oauth

import (
	"context"
	"database/sql"
	"errors"
	"mime"
	"net/http"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/token"
)

// ResolveAccessToken turns an OAuth access token (hm_at_) into a principal
// (authn.OAuthTokens). Unknown, expired or revoked tokens, tokens of inactive
// clients and tokens of deleted or banned users are authn.ErrInvalidToken.
func (s *Service) ResolveAccessToken(ctx context.Context, tok string) (*authn.Principal, error) {
	if isClientToken(tok) {
		return s.resolveClientToken(ctx, tok)
	}
	return s.resolveAccess(ctx, tok, nil)
}

// resolveSQL reads a usable access token: not revoked, of an active
// client, of a user neither deleted nor banned. Those conditions sit in the
// WHERE clause, so an unusable token reads as no row (the answer is the same
// invalid_token either way) and the row carries six columns, not ten: every
// column is work for the driver on each request. Expiry is checked in Go,
// against the same clock, since the principal needs the time anyway.
// resolveClaimsSQL adds the token's authentication context and the user's
// claim columns, so UserInfo needs one query.
const (
	resolveCols = `t.id, t.user_id, t.client_id, t.scopes, t.expires_at, t.auth_time`
	resolveFrom = ` FROM oauth_tokens t JOIN oauth_clients c ON c.id = t.client_id JOIN users u ON u.id = t.user_id
		WHERE t.token_hash = $1 AND t.kind = 'access' AND t.revoked_at IS NULL AND c.is_active
		AND u.deleted_at IS NULL AND NOT ` + db.UserBannedSQL
	resolveSQL       = `SELECT ` + resolveCols + resolveFrom
	resolveClaimsSQL = `SELECT ` + resolveCols + `, t.auth_context, ` + claimCols + resolveFrom
)

// accessRow is what resolveSQL reads. Its fields are scanned in place, so
// one allocation holds them all (separate locals would each escape to the
// heap through Scan's arguments).
type accessRow struct {
	id, userID, clientID string
	scopes               db.Strings
	expires, authTime    int64
	dest                 [6]any
}

// resolveAccess resolves an access token; with claims set it also reads the
// user's claim columns into it.
func (s *Service) resolveAccess(ctx context.Context, tok string, claims *claimRow) (*authn.Principal, error) {
	if !token.HasShape(tok, token.PrefixAccessToken) && !authn.LooksLikeJWT(tok) {
		return nil, authn.ErrInvalidToken
	}
	now := s.Clock.Now()
	row := &accessRow{}
	row.dest = [6]any{&row.id, &row.userID, &row.clientID, &row.scopes, &row.expires, &row.authTime}
	query, dest := resolveSQL, row.dest[:]
	if claims != nil {
		cd := claims.dest()
		dest = append(append(append(make([]any, 0, len(row.dest)+1+len(cd)), dest...), &claims.context), cd...)
		query = resolveClaimsSQL
	}
	err := s.DB.QueryRowContext(ctx, query, token.Hash(tok), db.TS(now)).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, authn.ErrInvalidToken
	}
	if err != nil {
		return nil, apperr.Unavailable(err, "database unavailable")
	}
	expiresAt := db.FromTS(row.expires)
	if !now.Before(expiresAt) {
		return nil, authn.ErrInvalidToken
	}
	return authn.NewPrincipal(authn.Principal{
		Kind: authn.KindOAuth, UserID: row.userID, OAuthClientID: row.clientID, OAuthScopes: row.scopes,
		OAuthTokenID: row.id, ExpiresAt: expiresAt, AuthTime: db.FromTS(row.authTime),
	}, nil), nil
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
	var row claimRow
	p, err := h.S.resolveAccess(r.Context(), tok, &row)
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
	var claims claimSet
	if err := h.S.releasedClaims(r.Context(), p.UserID, &row, p.OAuthScopes, userInfoContext(row.context), true, &claims); err != nil {
		httpx.Error(w, r, err)
		return
	}
	writeClaims(w, &claims)
}
