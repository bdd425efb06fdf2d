package oauth

import (
	"context"
	"database/sql"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/db"
	"hmid/internal/oauth/claims"
	"hmid/internal/token"
)

// TokenResponse is the successful answer of the token endpoint (RFC 6749 §5.1).
type TokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
	IDToken      string `json:"id_token,omitempty"`
}

// dummySecretHash is compared against when the client is unknown, so an
// unknown client_id costs the same as a wrong secret.
var dummySecretHash = token.Hash("hm_sec_dummy")

// parseForm reads an application/x-www-form-urlencoded POST body (RFC 6749
// §3.2) and refuses repeated parameters (§3.1).
func parseForm(r *http.Request) (url.Values, *Error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/x-www-form-urlencoded" {
		return nil, oerr(ErrInvalidRequest, "the body must be application/x-www-form-urlencoded")
	}
	if err := r.ParseForm(); err != nil {
		return nil, oerr(ErrInvalidRequest, "the form body could not be parsed")
	}
	for k, v := range r.PostForm {
		if len(v) > 1 && k != "resource" { // resource may be repeated (RFC 8707 §2)
			return nil, oerr(ErrInvalidRequest, k+" is given more than once")
		}
	}
	return r.PostForm, nil
}

// authenticateClient authenticates the client of a token, revocation or
// introspection request: with a client assertion (private_key_jwt, RFC 7523
// §2.2; clientassertion.go), client_secret_basic (RFC 6749 §2.3.1, id and
// secret form-urlencoded inside the header), client_secret_post, or none for
// public clients (which then rely on PKCE). It returns the client and the
// secret it presented (the HS256 key of its ID tokens; "" for the others).
func (s *Service) authenticateClient(ctx context.Context, r *http.Request, form url.Values) (Client, string, *Error) {
	if usesAssertion(form) {
		c, oe := s.authenticateAssertion(ctx, r, form)
		return c, "", oe
	}
	id, secret, basic := r.BasicAuth()
	fail := func(desc string) *Error {
		e := oerr(ErrInvalidClient, desc)
		e.basic = basic
		return e
	}
	if basic {
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return Client{}, "", fail("malformed client credentials in the Authorization header")
		}
		if form.Has("client_secret") {
			return Client{}, "", oerr(ErrInvalidRequest, "use one client authentication method, not Basic and client_secret together")
		}
		if fid := form.Get("client_id"); fid != "" && fid != id {
			return Client{}, "", oerr(ErrInvalidRequest, "client_id differs from the client authenticated by the Authorization header")
		}
	} else {
		id, secret = form.Get("client_id"), form.Get("client_secret")
	}
	if id == "" {
		return Client{}, "", fail("client authentication is required (client_id)")
	}
	c, err := s.loadClient(ctx, s.DB, id)
	if err != nil && !apperr.Is(err, apperr.NotFound) {
		return Client{}, "", asOAuthErr(err)
	}
	if err != nil || !c.IsActive {
		token.Equal(token.Hash(secret), dummySecretHash)
		return Client{}, "", fail("unknown or inactive client")
	}
	return checkSecret(c, secret, fail)
}

// checkSecret checks the secret a client presented: none for a public
// client, its own for a secret client. A private_key_jwt client has no
// secret and must send an assertion.
func checkSecret(c Client, secret string, fail func(string) *Error) (Client, string, *Error) {
	switch {
	case c.ClientType == Public && secret != "":
		return Client{}, "", fail("public clients have no secret")
	case c.ClientType == Public:
		return c, "", nil
	case c.TokenEndpointAuthMethod == AuthPrivateKeyJWT:
		return Client{}, "", fail("this client authenticates with private_key_jwt: send client_assertion")
	case secret == "" || !token.Equal(token.Hash(secret), c.secretHash):
		return Client{}, "", fail("client authentication failed")
	}
	return c, secret, nil
}

// Token serves POST /v1/oauth/token (RFC 6749 §3.2; spec 1, Token).
func (h *Handler) Token(w http.ResponseWriter, r *http.Request) {
	s := h.S
	form, oe := parseForm(r)
	if oe != nil {
		writeOAuthError(w, oe)
		return
	}
	gt := form.Get("grant_type")
	if gt == "" {
		writeOAuthError(w, oerr(ErrInvalidRequest, "grant_type is required"))
		return
	}
	c, secret, oe := s.authenticateClient(r.Context(), r, form)
	if oe != nil {
		writeOAuthError(w, logged(r, oe))
		return
	}
	if oe := checkGrant(c, gt); oe != nil {
		writeOAuthError(w, logged(r, oe))
		return
	}
	var resp any
	switch gt {
	case "authorization_code":
		resp, oe = s.exchangeCode(r.Context(), c, secret, form)
	case "refresh_token":
		resp, oe = s.refresh(r.Context(), c, secret, form, MetaFrom(r))
	case GrantClientCredentials:
		resp, oe = s.clientCredentials(r.Context(), c, form)
	case GrantDeviceCode:
		resp, oe = s.deviceToken(r.Context(), c, secret, form)
	default:
		oe = oerr(ErrUnsupportedGrantType, "grant_type must be one of "+strings.Join(grantCatalogue, ", "))
	}
	if oe != nil {
		writeOAuthError(w, logged(r, oe))
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// codeRow is a stored authorization code.
type codeRow struct {
	family, clientID, userID, redirectURI, nonce, challenge string
	scopes                                                  db.Strings
	authTime, expires                                       int64
	sessionID                                               sql.NullString
	context                                                 string       // authContext as JSON
	usable                                                  sql.NullBool // the user may still authorize (NULL: gone)
}

// redeemCodeSQL burns an unused code and returns it with the state of its
// user, in one statement: of racing redemptions exactly one gets the row.
// $1 is the code hash, $2 now (db.UserBannedSQL reads it as $2).
const redeemCodeSQL = `UPDATE oauth_codes SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL
	RETURNING family_id, client_id, user_id, redirect_uri, scopes, nonce, code_challenge, auth_time, expires_at, session_id, auth_context,
	(SELECT ` + usableSQL + ` FROM users u WHERE u.id = oauth_codes.user_id)`

// exchangeCode redeems an authorization code (RFC 6749 §4.1.3). The code is
// burnt by the first attempt whatever its outcome; presenting a used code
// revokes every token issued from it (RFC 9700 §4.3.1).
func (s *Service) exchangeCode(ctx context.Context, c Client, secret string, form url.Values) (TokenResponse, *Error) {
	code, redirect, verifier := form.Get("code"), form.Get("redirect_uri"), form.Get("code_verifier")
	if code == "" {
		return TokenResponse{}, oerr(ErrInvalidRequest, "code is required")
	}
	if redirect == "" {
		return TokenResponse{}, oerr(ErrInvalidRequest, "redirect_uri is required")
	}
	// Resources the client may not ask for are refused before the code is
	// touched; whether they were granted is known once it is read.
	if _, oe := tokenAudience(c, nil, form); oe != nil {
		return TokenResponse{}, oe
	}
	signer, oe := s.accessSigner(ctx, c)
	if oe != nil {
		return TokenResponse{}, oe
	}
	now := s.Clock.Now()
	var (
		fail   *Error
		row    codeRow
		issued issuedTokens
		ac     authContext // the code's authentication context, decoded
	)
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		hash := token.Hash(code)
		err := tx.QueryRowContext(ctx, redeemCodeSQL, hash, db.TS(now)).
			Scan(&row.family, &row.clientID, &row.userID, &row.redirectURI, &row.scopes, &row.nonce, &row.challenge, &row.authTime, &row.expires,
				&row.sessionID, &row.context, &row.usable)
		if errors.Is(err, sql.ErrNoRows) {
			// Unknown, or used before: only a replay has a family to revoke.
			var family string
			err := tx.QueryRowContext(ctx, `SELECT family_id FROM oauth_codes WHERE code_hash = $1`, hash).Scan(&family)
			if errors.Is(err, sql.ErrNoRows) {
				fail = oerr(ErrInvalidGrant, "invalid authorization code")
				return nil
			}
			if err != nil {
				return err
			}
			// A replayed code: whoever holds it, the tokens it bought are no longer trustworthy.
			if _, err := tx.ExecContext(ctx, `UPDATE oauth_tokens SET revoked_at = $1 WHERE family_id = $2 AND revoked_at IS NULL`, db.TS(now), family); err != nil {
				return err
			}
			fail = oerr(ErrInvalidGrant, "the authorization code was already used; tokens issued from it are revoked")
			return nil
		}
		if err != nil {
			return err
		}
		if fail = checkCode(row, c, redirect, verifier, now); fail != nil {
			return nil // commit: the code stays burnt
		}
		if !row.usable.Bool {
			fail = oerr(ErrInvalidGrant, "the user can no longer authorize this client")
			return nil
		}
		issued, ac = s.newIssuedTokens(c, row.scopes), decodeContext(row.context)
		if fail = s.finishAccess(signer, c, row.userID, &issued, row.authTime, ac, form, now); fail != nil {
			return nil // commit: the code stays burnt
		}
		f := tokenFamily{family: row.family, clientID: c.ID, userID: row.userID, refreshScopes: row.scopes, authTime: row.authTime,
			sessionID: row.sessionID.String, context: row.context, offlineRefresh: slices.Contains(row.scopes, "offline_access")}
		if err := s.storeTokens(ctx, tx, issued, f, now); err != nil {
			return err
		}
		return s.recordSessionGrant(ctx, tx, row.family, row.sessionID.String, c.ID, row.userID, now)
	})
	if err != nil {
		return TokenResponse{}, asOAuthErr(err)
	}
	if fail != nil {
		return TokenResponse{}, fail
	}
	return s.respond(ctx, c, secret, row.userID, issued, db.FromTS(row.authTime), row.nonce, row.sessionID.String, ac, nil, now)
}

// checkCode verifies the binding of a code to its client, redirect URI and
// PKCE challenge (RFC 6749 §4.1.3, RFC 7636 §4.6, RFC 9700 §2.1.1).
func checkCode(row codeRow, c Client, redirect, verifier string, now time.Time) *Error {
	switch {
	case !now.Before(db.FromTS(row.expires)):
		return oerr(ErrInvalidGrant, "the authorization code has expired")
	case row.clientID != c.ID:
		return oerr(ErrInvalidGrant, "the authorization code was issued to another client")
	case row.redirectURI != redirect:
		return oerr(ErrInvalidGrant, "redirect_uri does not match the authorization request")
	case row.challenge == "" && verifier != "":
		// A verifier without a challenge is a PKCE downgrade attempt.
		return oerr(ErrInvalidGrant, "code_verifier sent but the authorization request had no code_challenge")
	case row.challenge != "" && verifier == "":
		return oerr(ErrInvalidGrant, "code_verifier is required: the authorization request had a code_challenge")
	case row.challenge != "" && !validVerifier(verifier):
		return oerr(ErrInvalidRequest, "code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~")
	case row.challenge != "" && !token.Equal(s256(verifier), row.challenge):
		return oerr(ErrInvalidGrant, "code_verifier does not match the code_challenge")
	}
	return nil
}

// refresh serves the refresh_token grant (RFC 6749 §6). The token rotates:
// the presented one is spent by a conditional UPDATE, so of racing requests
// exactly one wins; presenting a spent token again revokes its whole family
// (RFC 9700 §4.14.2), unless its own client presents it within
// RefreshReuseInterval of its rotation (see reissue). A scope parameter may
// only narrow the access token.
//
// The token and its user are read first, on the readers; only the rotation
// writes, and the conditional UPDATE at its start is what decides a race, so
// a token spent or revoked between the read and the write still counts as
// reused.
func (s *Service) refresh(ctx context.Context, c Client, secret string, form url.Values, m Meta) (TokenResponse, *Error) {
	rt := form.Get("refresh_token")
	if rt == "" {
		return TokenResponse{}, oerr(ErrInvalidRequest, "refresh_token is required")
	}
	now := s.Clock.Now()
	var (
		old              spentToken
		expires          int64
		rotated, revoked db.NullTime
		usable           bool
		row              claims.Row
	)
	err := s.DB.QueryRowContext(ctx, refreshSQL, token.Hash(rt), db.TS(now)).
		Scan(append([]any{&old.id, &old.clientID, &old.userID, &old.family, &old.pair, &old.scopes, &old.authTime, &expires, &rotated, &revoked,
			&old.sessionID, &old.context, &old.offline, &usable}, row.Dest()...)...)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return TokenResponse{}, oerr(ErrInvalidGrant, "invalid refresh token")
	case err != nil:
		return TokenResponse{}, asOAuthErr(err)
	case old.clientID != c.ID:
		return TokenResponse{}, oerr(ErrInvalidGrant, "the refresh token was issued to another client")
	case rotated.Valid && !s.inReuseInterval(rotated.Time, now):
		return TokenResponse{}, s.revokeFamily(ctx, old, m, now)
	case (revoked.Valid && !rotated.Valid) || !now.Before(db.FromTS(expires)):
		return TokenResponse{}, oerr(ErrInvalidGrant, "the refresh token is expired or revoked")
	}
	accessScopes, oe := narrowScope(old.scopes, form)
	if oe != nil {
		return TokenResponse{}, oe
	}
	if !usable {
		return TokenResponse{}, oerr(ErrInvalidGrant, "the user can no longer authorize this client")
	}
	ac := decodeContext(old.context)
	issued, oe := s.refreshedTokens(ctx, c, old, accessScopes, ac, form, now)
	if oe != nil {
		return TokenResponse{}, oe
	}
	won := false
	if !rotated.Valid {
		if won, err = s.rotate(ctx, old, issued, now); err != nil {
			return TokenResponse{}, asOAuthErr(err)
		}
	}
	if !won {
		// Spent before (rotated.Valid) or meanwhile, by a racing request.
		if s.RefreshReuseInterval <= 0 {
			return TokenResponse{}, s.revokeFamily(ctx, old, m, now)
		}
		ok, err := s.reissue(ctx, old, issued, m, now)
		if err != nil {
			return TokenResponse{}, asOAuthErr(err)
		}
		if !ok {
			return TokenResponse{}, s.revokeFamily(ctx, old, m, now)
		}
	}
	// OpenID Connect Core §12.2: the refreshed ID token carries no nonce.
	return s.respond(ctx, c, secret, old.userID, issued, db.FromTS(old.authTime), "", old.sessionID.String, ac, &row, now)
}

// narrowScope is the scope of a refreshed access token: the granted one, or
// the scope parameter's, which may only narrow it (RFC 6749 §6).
func narrowScope(granted []string, form url.Values) ([]string, *Error) {
	if !form.Has("scope") {
		return granted, nil
	}
	req := parseScope(form.Get("scope"))
	if len(req) == 0 || !subset(req, granted) {
		return nil, oerr(ErrInvalidScope, "the scope may only narrow the scope originally granted")
	}
	return req, nil
}

// refreshSQL reads a refresh token with what its answer needs: whether its
// user may still authorize ($2 is now), the session and authentication
// context it carries, and the user's claims for a refreshed ID token; so a
// refresh reads once before it rotates.
const refreshSQL = `SELECT t.id, t.client_id, t.user_id, t.family_id, t.pair_id, t.scopes, t.auth_time, t.expires_at, t.rotated_at, t.revoked_at,
	t.session_id, t.auth_context, t.offline, ` + usableSQL + `, ` + claims.Cols + `
	FROM oauth_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = $1 AND t.kind = 'refresh'`

// inReuseInterval reports whether a refresh token rotated at rotatedAt is,
// at now, still within RefreshReuseInterval of its rotation.
func (s *Service) inReuseInterval(rotatedAt, now time.Time) bool {
	return s.RefreshReuseInterval > 0 && now.Sub(rotatedAt) < s.RefreshReuseInterval
}

// spentToken is the refresh token a refresh grant presents.
type spentToken struct {
	id, clientID, userID, family, pair string
	scopes                             db.Strings
	authTime                           int64
	sessionID                          sql.NullString
	context                            string // authContext as JSON
	offline                            bool   // granted with offline_access: outlives its session
}

// successor is the family a rotation or reissue of old stores its new pair
// in: the same session, context and offline standing, so the new tokens
// answer and end like the old ones.
func (old spentToken) successor() tokenFamily {
	return tokenFamily{family: old.family, clientID: old.clientID, userID: old.userID, refreshScopes: old.scopes, authTime: old.authTime,
		sessionID: old.sessionID.String, context: old.context, offlineRefresh: old.offline, offlineAccess: old.offline}
}

// lockLiveRefresh locks, on PostgreSQL, the family's live refresh tokens
// (neither revoked nor expired) in id order, and reports whether there is
// one. reissue and revokeFamily both take these locks first, so they
// serialize: a revocation that waited for a reissue runs its UPDATE after
// the reissued pair is committed and so revokes it too, and a reissue that
// waited for a revocation finds no live token left. On SQLite transactions
// are serialized anyway.
func lockLiveRefresh(ctx context.Context, tx *db.Tx, family string, now time.Time) (bool, error) {
	q := `SELECT id FROM oauth_tokens WHERE family_id = $1 AND kind = 'refresh' AND revoked_at IS NULL AND expires_at > $2 ORDER BY id`
	if tx.Flavor() == db.Postgres {
		q += ` FOR UPDATE`
	}
	rows, err := tx.QueryContext(ctx, q, family, db.TS(now))
	if err != nil {
		return false, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n > 0, rows.Err()
}

// reissue answers a spent refresh token presented again by its own client
// within RefreshReuseInterval of its rotation: typically a client that lost
// the answer to its refresh and retries, or two requests of one client that
// raced. Only hashes are stored, so the pair issued at the rotation cannot
// be handed out again; a new pair t is stored in the same family instead, as
// a sibling, and nothing is revoked: the pair of the rotation stays valid
// too. It reports false, writing nothing, when the token is not rotated
// within the interval (revoked otherwise) or when its family has no live
// refresh token left (revoked or expired meanwhile); the caller then revokes
// the family. A reissue is audited as refresh_token_reused.
func (s *Service) reissue(ctx context.Context, old spentToken, t issuedTokens, m Meta, now time.Time) (bool, error) {
	ok := false
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		live, err := lockLiveRefresh(ctx, tx, old.family, now)
		if err != nil || !live {
			return err
		}
		// Read again on the writer: the caller's read may predate a racing rotation.
		var rotated db.NullTime
		if err := tx.QueryRowContext(ctx, `SELECT rotated_at FROM oauth_tokens WHERE id = $1`, old.id).Scan(&rotated); err != nil {
			return err
		}
		if !rotated.Valid || !s.inReuseInterval(rotated.Time, now) {
			return nil
		}
		if err := s.storeTokens(ctx, tx, t, old.successor(), now); err != nil {
			return err
		}
		ok = true
		return s.auditReuse(ctx, tx, old, m, false, now.Sub(rotated.Time))
	})
	return ok && err == nil, err
}

// auditReuse records the presentation of a spent refresh token:
// refresh_token_reused, a failure when the family was revoked for it.
func (s *Service) auditReuse(ctx context.Context, q db.Querier, old spentToken, m Meta, revoked bool, since time.Duration) error {
	e := audit.Event{
		UserID: old.userID, EventType: audit.RefreshTokenReused, ResourceType: "oauth_client", ResourceID: old.clientID,
		Description: "a spent refresh token was presented again within the reuse interval; a new token pair was issued",
		Metadata:    map[string]any{"family_id": old.family, "reuse_interval_seconds": s.RefreshReuseInterval.Seconds()},
	}
	if since >= 0 {
		e.Metadata["seconds_since_rotation"] = since.Seconds()
	}
	if revoked {
		e.Failed = true
		e.Description = "a spent refresh token was presented again; every token of its authorization was revoked"
		e.ErrorMessage = "refresh token reuse detected (RFC 9700 §4.14.2)"
	}
	_, err := s.Audit.Record(ctx, q, m.event(e))
	return err
}

// revokeFamily revokes every token of an authorization whose refresh token
// was presented twice (RFC 9700 §4.14.2), audits it as a failed
// refresh_token_reused, and returns the answer to that presentation.
func (s *Service) revokeFamily(ctx context.Context, old spentToken, m Meta, now time.Time) *Error {
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := lockLiveRefresh(ctx, tx, old.family, now); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE oauth_tokens SET revoked_at = $1 WHERE family_id = $2 AND revoked_at IS NULL`, db.TS(now), old.family)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // already revoked: reported once, when it happened
		}
		return s.auditReuse(ctx, tx, old, m, true, -1)
	})
	if err != nil {
		return asOAuthErr(err)
	}
	return oerr(ErrInvalidGrant, "the refresh token was already used; every token of this authorization is revoked")
}

// rotatePGSQL is rotate on PostgreSQL as one statement, so one round trip:
// r spends the refresh token unless it already is; a revokes the access token
// issued with it (the spec's state table) and i stores the new pair, both
// only when r did, with the session, context and offline standing of the
// spent token (read from r, so they are the row's own). The access-token
// filter keeps a and r on different rows, as a statement may not update one
// row twice.
const rotatePGSQL = `WITH r AS (
		UPDATE oauth_tokens SET rotated_at = $1, revoked_at = $1
		WHERE id = $2 AND rotated_at IS NULL AND revoked_at IS NULL RETURNING id, session_id, auth_context, offline
	), a AS (
		UPDATE oauth_tokens SET revoked_at = $1
		WHERE pair_id = $3 AND kind = 'access' AND revoked_at IS NULL AND EXISTS (SELECT 1 FROM r)
	), i AS (
		INSERT INTO oauth_tokens (id, kind, token_hash, family_id, pair_id, client_id, user_id, scopes, auth_time, created_at, expires_at,
			session_id, auth_context, offline, audience)
		SELECT v.id, v.kind, v.hash, $4, $5, $6, $7, v.scopes, $8, $1, v.expires, r.session_id, r.auth_context, r.offline, v.audience
		FROM r, (VALUES ($9::text, 'access', $10::text, $11::text, $12::bigint, $17::text), ($13::text, 'refresh', $14::text, $15::text, $16::bigint, NULL))
			AS v (id, kind, hash, scopes, expires, audience)
	)
	SELECT COUNT(*) FROM r`

// spendSQLiteSQL is the first half of rotate on SQLite, which has no writing
// CTEs: one UPDATE spends the refresh token and revokes the access token
// issued with it; RETURNING tells whether the refresh token was among them.
const spendSQLiteSQL = `UPDATE oauth_tokens SET revoked_at = $1, rotated_at = CASE WHEN id = $2 THEN $1 ELSE rotated_at END
	WHERE (id = $2 AND rotated_at IS NULL AND revoked_at IS NULL) OR (pair_id = $3 AND kind = 'access' AND revoked_at IS NULL)
	RETURNING kind`

// errLost rolls back a SQLite rotation that lost to another spending.
var errLost = errors.New("oauth: the refresh token was spent meanwhile")

// rotate spends old and stores the issued pair in its family, atomically. It
// reports false, writing nothing, when old was already spent or revoked.
func (s *Service) rotate(ctx context.Context, old spentToken, t issuedTokens, now time.Time) (bool, error) {
	if s.DB.Flavor == db.Postgres {
		var n int
		err := s.DB.QueryRowContext(ctx, rotatePGSQL, db.TS(now), old.id, old.pair,
			old.family, db.NewID(), old.clientID, old.userID, old.authTime,
			t.accessID, token.Hash(t.access), db.JSON(t.accessScopes), db.TS(now.Add(t.accessTTL)),
			db.NewID(), token.Hash(t.refresh), db.JSON(old.scopes), db.TS(now.Add(t.refreshTTL)), t.audienceJSON()).Scan(&n)
		return n == 1, err
	}
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		kinds, err := db.All(ctx, tx, db.ScanString, spendSQLiteSQL, db.TS(now), old.id, old.pair)
		if err != nil {
			return err
		}
		if !slices.Contains(kinds, "refresh") {
			return errLost // and the access token stays as it was
		}
		return s.storeTokens(ctx, tx, t, old.successor(), now)
	})
	if errors.Is(err, errLost) {
		return false, nil
	}
	return err == nil, err
}

// issuedTokens is an access token and its refresh token, issued together,
// with the lifetimes they are issued with.
type issuedTokens struct {
	access, refresh       string
	accessID              string // the access token's row id (its jti)
	accessScopes          []string
	audience              []string // the access token's resources (RFC 8707); nil: the client
	accessTTL, refreshTTL time.Duration
}

// newIssuedTokens draws a new access and refresh token pair for client c,
// with c's lifetimes in force now (lifetimes.go).
func (s *Service) newIssuedTokens(c Client, accessScopes []string) issuedTokens {
	t := issuedTokens{access: token.New(token.PrefixAccessToken), refresh: token.New(token.PrefixRefreshToken),
		accessID: db.NewID(), accessScopes: accessScopes}
	t.accessTTL, t.refreshTTL = s.lifetimes(c)
	return t
}

// accessSigner returns the key that signs c's JWT access tokens (RFC 9068),
// nil for a client with opaque ones. It is taken before any transaction: the
// first use of an algorithm creates its key.
func (s *Service) accessSigner(ctx context.Context, c Client) (*signingKey, *Error) {
	if c.AccessTokenFormat != FormatJWT {
		return nil, nil
	}
	k, err := s.signer(ctx, accessTokenAlg(c))
	if err != nil {
		return nil, asOAuthErr(err)
	}
	return k, nil
}

// finishAccess gives t the audience the request asks for within the
// grant's resources, and makes its access token a JWT when k is set.
func (s *Service) finishAccess(k *signingKey, c Client, userID string, t *issuedTokens, authTime int64, ac authContext, form url.Values, now time.Time) *Error {
	aud, oe := tokenAudience(c, ac.Resources, form)
	if oe != nil {
		return oe
	}
	t.audience = aud
	if k == nil {
		return nil
	}
	jwt, err := s.accessJWT(k, c, userID, *t, authTime, ac, now)
	if err != nil {
		return asOAuthErr(err)
	}
	t.access = jwt
	return nil
}

// refreshedTokens draws the pair a refresh issues, its access token for
// the resources asked (RFC 8707 §2.2: a refresh may narrow them).
func (s *Service) refreshedTokens(ctx context.Context, c Client, old spentToken, scopes []string, ac authContext, form url.Values, now time.Time) (issuedTokens, *Error) {
	signer, oe := s.accessSigner(ctx, c)
	if oe != nil {
		return issuedTokens{}, oe
	}
	t := s.newIssuedTokens(c, scopes)
	return t, s.finishAccess(signer, c, old.userID, &t, old.authTime, ac, form, now)
}

// audienceJSON is the stored audience column of the access token.
func (t issuedTokens) audienceJSON() any {
	if len(t.audience) == 0 {
		return nil
	}
	return db.JSON(t.audience)
}

// tokenFamily is what every token of one authorization carries.
type tokenFamily struct {
	family, clientID, userID string
	refreshScopes            []string // the scope originally granted
	authTime                 int64
	sessionID                string // the browser session of the grant, "" for none
	context                  string // authContext as JSON
	// offlineRefresh: the refresh token was granted with offline_access;
	// offlineAccess: the access token was minted by such a refresh token.
	// Both outlive the session (Back-Channel Logout 1.0 §2.7).
	offlineRefresh, offlineAccess bool
}

// storeTokensSQL inserts an access and a refresh token of one pair.
const storeTokensSQL = `INSERT INTO oauth_tokens (id, kind, token_hash, family_id, pair_id, client_id, user_id, scopes, auth_time, created_at, expires_at,
		session_id, auth_context, offline, audience)
	VALUES ($1, 'access', $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $19),
		($14, 'refresh', $15, $3, $4, $5, $6, $16, $8, $9, $17, $11, $12, $18, NULL)`

// storeTokens stores t, hashed, as a new pair of family f, in one
// statement. The refresh token is always issued (spec 1, Token: the
// response carries refresh_token) and keeps f's refreshScopes.
func (s *Service) storeTokens(ctx context.Context, tx *db.Tx, t issuedTokens, f tokenFamily, now time.Time) error {
	var session any
	if f.sessionID != "" {
		session = f.sessionID
	}
	if f.context == "" {
		f.context = "{}"
	}
	_, err := tx.ExecContext(ctx, storeTokensSQL,
		t.accessID, token.Hash(t.access), f.family, db.NewID(), f.clientID, f.userID, db.JSON(t.accessScopes), f.authTime, db.TS(now),
		db.TS(now.Add(t.accessTTL)), session, f.context, f.offlineAccess,
		db.NewID(), token.Hash(t.refresh), db.JSON(f.refreshScopes), db.TS(now.Add(t.refreshTTL)), f.offlineRefresh, t.audienceJSON())
	return err
}

// respond builds the token response, with an ID token when openid was
// granted; ac, the authentication context of the token family, shapes it,
// and sessionID (the browser session of the grant) gives the ID token its
// sid. row holds the user's claim columns when the caller read them
// already (nil: read them).
func (s *Service) respond(ctx context.Context, c Client, secret, userID string, t issuedTokens, authTime time.Time, nonce, sessionID string, ac authContext, row *claims.Row, now time.Time) (TokenResponse, *Error) {
	resp := TokenResponse{
		AccessToken: t.access, TokenType: "Bearer", ExpiresIn: int(t.accessTTL / time.Second),
		RefreshToken: t.refresh, Scope: strings.Join(t.accessScopes, " "),
	}
	if slices.Contains(t.accessScopes, "openid") {
		idt, err := s.idToken(ctx, c, secret, userID, row, t.accessScopes, authTime, nonce, s.SessionSID(sessionID), ac, now)
		if err != nil {
			return TokenResponse{}, asOAuthErr(err)
		}
		resp.IDToken = idt
	}
	return resp, nil
}
