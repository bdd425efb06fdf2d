package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	"hmid/internal/db"
	"hmid/internal/oauth/claims"
)

// Family is what every token of one authorization carries: the code (or
// device authorization) it came from, and each refresh since.
type Family struct {
	ID       string
	ClientID string
	UserID   string
	Scopes   []string // the scope originally granted: the refresh token's
	AuthTime time.Time
	// SessionID is the browser session of the grant, "" for none; Context
	// the authentication context, as JSON ("" stores "{}").
	SessionID string
	Context   string
	// OfflineRefresh: the refresh token was granted with offline_access;
	// OfflineAccess: the access token was minted by such a refresh token.
	// Both outlive the session (Back-Channel Logout 1.0 §2.7).
	OfflineRefresh, OfflineAccess bool
}

// TokenPair is an access token and its refresh token, issued together,
// as StoreTokens and RotateRefresh store them: hashed, never in clear.
type TokenPair struct {
	Family         Family
	AccessID       string // the access token's row id, its jti
	AccessHash     string
	AccessScopes   []string
	Audience       []string // the access token's resources (RFC 8707); nil: the client
	AccessExpires  time.Time
	RefreshHash    string
	RefreshExpires time.Time
}

// audienceJSON is the stored audience column of the access token.
func (p TokenPair) audienceJSON() any { return resourcesColumn(p.Audience) }

// resourcesColumn is a list of resource indicators as an audience or
// resources column stores it: NULL for none.
func resourcesColumn(r []string) any {
	if len(r) == 0 {
		return nil
	}
	return db.JSON(r)
}

// DecodeResources reads an audience or resources column (resourcesColumn
// wrote it): nil for NULL. What hmid stored is always a JSON array.
func DecodeResources(raw *string) []string {
	if raw == nil || *raw == "" {
		return nil
	}
	var out db.Strings
	if err := out.Scan(*raw); err != nil {
		return nil
	}
	return out
}

// storeTokensSQL inserts an access and a refresh token of one pair.
const storeTokensSQL = `INSERT INTO oauth_tokens (id, kind, token_hash, family_id, pair_id, client_id, user_id, scopes, auth_time, created_at, expires_at,
		session_id, auth_context, offline, audience)
	VALUES ($1, 'access', $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $19),
		($14, 'refresh', $15, $3, $4, $5, $6, $16, $8, $9, $17, $11, $12, $18, NULL)`

// StoreTokens stores p as a new pair of its family through q, in one
// statement. The refresh token is always issued (spec 1, Token: the
// response carries refresh_token) and keeps the family's scope.
func (s *Store) StoreTokens(ctx context.Context, q db.Querier, p TokenPair, now time.Time) error {
	f := p.Family
	if f.Context == "" {
		f.Context = "{}"
	}
	_, err := q.ExecContext(ctx, storeTokensSQL,
		p.AccessID, p.AccessHash, f.ID, db.NewID(), f.ClientID, f.UserID, db.JSON(p.AccessScopes), db.TS(f.AuthTime), db.TS(now),
		db.TS(p.AccessExpires), nullStr(f.SessionID), f.Context, f.OfflineAccess,
		db.NewID(), p.RefreshHash, db.JSON(f.Scopes), db.TS(p.RefreshExpires), f.OfflineRefresh, p.audienceJSON())
	return err
}

// RecordSessionGrant notes, through q, that family f was granted in its
// browser session (f.SessionID, which must be set), so its client is told
// when that session ends (Back-Channel Logout 1.0 §2.5). A family is noted
// once.
func (s *Store) RecordSessionGrant(ctx context.Context, q db.Querier, f Family, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO oauth_session_grants (family_id, session_id, client_id, user_id, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (family_id) DO NOTHING`, f.ID, f.SessionID, f.ClientID, f.UserID, db.TS(now))
	return err
}

// RefreshToken is a refresh token as a refresh grant reads it.
type RefreshToken struct {
	ID      string
	PairID  string
	Family  Family // OfflineRefresh is the token's own offline standing
	Expires time.Time
	// Rotated is when it was spent by a rotation; Revoked when it stopped
	// working (a rotation sets both).
	Rotated, Revoked db.NullTime
	// Usable: its user may still authorize clients.
	Usable bool
}

// refreshSQL reads a refresh token with what its answer needs: whether its
// user may still authorize ($2 is now), the session and authentication
// context it carries, and the user's claims for a refreshed ID token; so a
// refresh reads once before it rotates.
const refreshSQL = `SELECT t.id, t.client_id, t.user_id, t.family_id, t.pair_id, t.scopes, t.auth_time, t.expires_at, t.rotated_at, t.revoked_at,
	t.session_id, t.auth_context, t.offline, ` + usableSQL + `, ` + claims.Cols + `
	FROM oauth_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = $1 AND t.kind = 'refresh'`

// RefreshToken reads the refresh token whose hash is hash, with its user's
// claim columns into cr; ErrNotFound when there is none. It reads on the
// readers and decides nothing: RotateRefresh does.
func (s *Store) RefreshToken(ctx context.Context, hash string, now time.Time, cr *claims.Row) (RefreshToken, error) {
	var (
		t                 RefreshToken
		scopes            db.Strings
		authTime, expires int64
		session           sql.NullString
	)
	err := s.db.QueryRowContext(ctx, refreshSQL, hash, db.TS(now)).
		Scan(append([]any{&t.ID, &t.Family.ClientID, &t.Family.UserID, &t.Family.ID, &t.PairID, &scopes, &authTime, &expires, &t.Rotated, &t.Revoked,
			&session, &t.Family.Context, &t.Family.OfflineRefresh, &t.Usable}, cr.Dest()...)...)
	t.Family.Scopes, t.Family.AuthTime, t.Expires, t.Family.SessionID = scopes, db.FromTS(authTime), db.FromTS(expires), session.String
	return t, err
}

// Successor is the family a rotation or reissue of t stores its new pair
// in: the same session, context and offline standing, so the new tokens
// answer and end like the old ones.
func (t RefreshToken) Successor() Family {
	f := t.Family
	f.OfflineAccess = f.OfflineRefresh
	return f
}

// rotatePGSQL is RotateRefresh on PostgreSQL as one statement, so one round
// trip: r spends the refresh token unless it already is; a revokes the
// access token issued with it (the spec's state table) and i stores the new
// pair, both only when r did, with the session, context and offline
// standing of the spent token (read from r, so they are the row's own). The
// access-token filter keeps a and r on different rows, as a statement may
// not update one row twice.
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

// spendSQLiteSQL is the first half of RotateRefresh on SQLite, which has no
// writing CTEs: one UPDATE spends the refresh token and revokes the access
// token issued with it; RETURNING tells whether the refresh token was among
// them.
const spendSQLiteSQL = `UPDATE oauth_tokens SET revoked_at = $1, rotated_at = CASE WHEN id = $2 THEN $1 ELSE rotated_at END
	WHERE (id = $2 AND rotated_at IS NULL AND revoked_at IS NULL) OR (pair_id = $3 AND kind = 'access' AND revoked_at IS NULL)
	RETURNING kind`

// errLost rolls back a SQLite rotation that lost to another spending.
var errLost = errors.New("store: the refresh token was spent meanwhile")

// RotateRefresh spends the refresh token spent (revoking the access token
// issued with it) and stores next in its family, atomically (RFC 6749 §6,
// RFC 9700 §4.14.2: refresh tokens rotate). Of racing rotations of one
// token exactly one wins; the others report false and write nothing, as
// does the rotation of a token spent or revoked before. next's family
// fields are spent.Successor()'s.
func (s *Store) RotateRefresh(ctx context.Context, spent RefreshToken, next TokenPair, now time.Time) (bool, error) {
	if s.db.Flavor == db.Postgres {
		var n int
		f := spent.Family
		err := s.db.QueryRowContext(ctx, rotatePGSQL, db.TS(now), spent.ID, spent.PairID,
			f.ID, db.NewID(), f.ClientID, f.UserID, db.TS(f.AuthTime),
			next.AccessID, next.AccessHash, db.JSON(next.AccessScopes), db.TS(next.AccessExpires),
			db.NewID(), next.RefreshHash, db.JSON(f.Scopes), db.TS(next.RefreshExpires), next.audienceJSON()).Scan(&n)
		return n == 1, err
	}
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		kinds, err := db.All(ctx, tx, db.ScanString, spendSQLiteSQL, db.TS(now), spent.ID, spent.PairID)
		if err != nil {
			return err
		}
		if !slices.Contains(kinds, "refresh") {
			return errLost // and the access token stays as it was
		}
		return s.StoreTokens(ctx, tx, next, now)
	})
	if errors.Is(err, errLost) {
		return false, nil
	}
	return err == nil, err
}

// LockLiveRefresh locks, on PostgreSQL, the family's live refresh tokens
// (neither revoked nor expired) in id order, in tx, and reports whether
// there is one. A reissue and a revocation of the family both take these
// locks first, so they serialize: a revocation that waited for a reissue
// runs its UPDATE after the reissued pair is committed and so revokes it
// too, and a reissue that waited for a revocation finds no live token left.
// On SQLite transactions are serialized anyway.
func (s *Store) LockLiveRefresh(ctx context.Context, tx *db.Tx, family string, now time.Time) (bool, error) {
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

// RotatedAt reads, through q, when the token id was spent by a rotation
// (not Valid: not spent); ErrNotFound when it is gone.
func (s *Store) RotatedAt(ctx context.Context, q db.Querier, id string) (db.NullTime, error) {
	var rotated db.NullTime
	err := q.QueryRowContext(ctx, `SELECT rotated_at FROM oauth_tokens WHERE id = $1`, id).Scan(&rotated)
	return rotated, err
}

// RevokeFamily revokes, through q, every token of family not revoked yet
// and reports how many that were.
func (s *Store) RevokeFamily(ctx context.Context, q db.Querier, family string, now time.Time) (int64, error) {
	res, err := q.ExecContext(ctx, `UPDATE oauth_tokens SET revoked_at = $1 WHERE family_id = $2 AND revoked_at IS NULL`, db.TS(now), family)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// TokenRef names a stored token and its kin.
type TokenRef struct {
	Kind     string // access or refresh
	ClientID string
	FamilyID string
	PairID   string
}

// TokenByHash finds, through q, the token whose hash is hash; ErrNotFound
// when there is none.
func (s *Store) TokenByHash(ctx context.Context, q db.Querier, hash string) (TokenRef, error) {
	var t TokenRef
	err := q.QueryRowContext(ctx, `SELECT kind, client_id, family_id, pair_id FROM oauth_tokens WHERE token_hash = $1`, hash).
		Scan(&t.Kind, &t.ClientID, &t.FamilyID, &t.PairID)
	return t, err
}

// UserToken finds, through q, the token id of userID; ErrNotFound when
// there is none or it is another user's.
func (s *Store) UserToken(ctx context.Context, q db.Querier, id, userID string) (TokenRef, error) {
	var t TokenRef
	err := q.QueryRowContext(ctx, `SELECT kind, family_id, pair_id FROM oauth_tokens WHERE id = $1 AND user_id = $2`, id, userID).
		Scan(&t.Kind, &t.FamilyID, &t.PairID)
	return t, err
}

// RevokeWithKin revokes, through q, the token t with the tokens that stand
// or fall with it: a refresh token takes its whole family (every token of
// the authorization, RFC 7009 §2.1), an access token the refresh token
// issued with it.
func (s *Store) RevokeWithKin(ctx context.Context, q db.Querier, t TokenRef, now time.Time) error {
	if t.Kind == "refresh" {
		_, err := s.RevokeFamily(ctx, q, t.FamilyID, now)
		return err
	}
	_, err := q.ExecContext(ctx, `UPDATE oauth_tokens SET revoked_at = $1 WHERE pair_id = $2 AND revoked_at IS NULL`, db.TS(now), t.PairID)
	return err
}

// EndUserTokens revokes, through q, every OAuth token of a user, offline
// ones included, with their open authorization codes and pending
// authorizations, and denies the device authorizations they approved but
// did not redeem yet (RFC 8628: a grant made with the same credential). It
// is a function, not a method, because the areas that end a user's
// credentials call it in their own transactions.
func EndUserTokens(ctx context.Context, q db.Querier, userID string, at time.Time) error {
	now := db.TS(at)
	if _, err := q.ExecContext(ctx, `UPDATE oauth_tokens SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL`, now, userID); err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, `UPDATE oauth_codes SET used_at = $1 WHERE user_id = $2 AND used_at IS NULL`, now, userID); err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, `UPDATE oauth_pending_authorizations SET decided_at = $1 WHERE user_id = $2 AND decided_at IS NULL`, now, userID); err != nil {
		return err
	}
	_, err := q.ExecContext(ctx, `UPDATE oauth_device_authorizations SET status = 'denied' WHERE user_id = $1 AND status = 'approved'`, userID)
	return err
}

// TokenInfo is one active token of a user (spec 1, token record).
type TokenInfo struct {
	ID         string    `json:"id"`
	Kind       string    `json:"kind"` // access or refresh
	ClientID   string    `json:"client_id"`
	ClientName string    `json:"client_name"`
	Scopes     []string  `json:"scopes"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// UserTokens returns the user's access and refresh tokens that are neither
// expired nor revoked at now, newest first.
func (s *Store) UserTokens(ctx context.Context, userID string, now time.Time) ([]TokenInfo, error) {
	return db.All(ctx, s.db, scanTokenInfo, `SELECT t.id, t.kind, c.id, c.name, t.scopes, t.created_at, t.expires_at
		FROM oauth_tokens t JOIN oauth_clients c ON c.id = t.client_id
		WHERE t.user_id = $1 AND t.revoked_at IS NULL AND t.expires_at > $2 ORDER BY t.created_at DESC, t.id`, userID, db.TS(now))
}

func scanTokenInfo(row db.Scanner) (TokenInfo, error) {
	var ti TokenInfo
	var scopes db.Strings
	var c, e int64
	if err := row.Scan(&ti.ID, &ti.Kind, &ti.ClientID, &ti.ClientName, &scopes, &c, &e); err != nil {
		return ti, err
	}
	ti.Scopes, ti.CreatedAt, ti.ExpiresAt = scopes, db.FromTS(c), db.FromTS(e)
	return ti, nil
}
