package authn

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/policy"
	"hmid/internal/token"
)

// OAuthTokens resolves OAuth access tokens (hm_at_); the oauth area implements it.
type OAuthTokens interface {
	ResolveAccessToken(ctx context.Context, tok string) (*Principal, error)
}

// Resolver turns bearer tokens into principals.
type Resolver struct {
	DB    *db.DB
	Clock clock.Clock
	Epoch Epoch
	OAuth OAuthTokens // nil until the OAuth area is wired
	// Policy gives the session idle timeout (nil: none).
	Policy *policy.Store

	mu    sync.Mutex
	cache map[string]*cached // by token hash
	// gen advances each time the epoch becomes unknown: principals cached
	// before may have been revoked meanwhile without the epoch showing it.
	gen       uint64
	epochLost bool // the last epoch read failed
}

type cached struct {
	p         *Principal
	gen       uint64
	epoch     int64 // noEpoch when loaded while the epoch was unknown
	loadedAt  time.Time
	touchedAt time.Time // last write of last_used_at / last_activity_at
	// lastActivity is a session's last_activity_at as last read or
	// written by this instance, for the idle timeout.
	lastActivity time.Time
}

// cacheTTL bounds how long a principal is reused even without an epoch change,
// so time-based state (timed bans ending) is picked up.
const cacheTTL = 30 * time.Second

// touchEvery is how often last_used_at and last_activity_at are written.
const touchEvery = time.Minute

// maxCached bounds the principal cache; on overflow it is emptied.
const maxCached = 100_000

// noEpoch marks a principal loaded while the epoch was unknown: it is never
// served from the cache (epochs are never negative).
const noEpoch = -1

// errInvalid is the one answer for a missing, unknown, expired or revoked
// token: telling them apart would help an attacker.
var errInvalid = apperr.Unauthorizedf("missing, invalid, expired or revoked bearer token")

// ErrInvalidToken is the Unauthorized error resolvers return for a bad token.
var ErrInvalidToken = errInvalid

// Resolve returns the principal for tok, or an Unauthorized error.
func (r *Resolver) Resolve(ctx context.Context, tok string) (*Principal, error) {
	if strings.HasPrefix(tok, token.PrefixAccessToken) || LooksLikeJWT(tok) {
		if r.OAuth == nil {
			return nil, errInvalid
		}
		return r.OAuth.ResolveAccessToken(ctx, tok)
	}
	isSession := token.HasShape(tok, token.PrefixSession)
	if !isSession && !token.IsAPIKey(tok) {
		return nil, errInvalid
	}
	now := r.Clock.Now()
	epoch, gen := r.epoch(ctx)
	h := token.Hash(tok)
	r.mu.Lock()
	c := r.cache[h]
	r.mu.Unlock()
	// A session that looks idle here is read again: another instance may
	// have seen it used meanwhile (its touch is in the database).
	if c != nil && epoch != noEpoch && c.epoch == epoch && c.gen == gen && now.Sub(c.loadedAt) < cacheTTL && !r.idle(c.p, c.lastActivity, now) {
		if !c.p.ExpiresAt.IsZero() && !now.Before(c.p.ExpiresAt) {
			return nil, errInvalid
		}
		r.touch(ctx, c, now)
		return c.p, nil
	}
	var (
		p            *Principal
		lastActivity time.Time
		err          error
	)
	if isSession {
		p, lastActivity, err = r.loadSession(ctx, h, now)
	} else {
		p, err = r.loadAPIKey(ctx, h, now)
	}
	if err != nil {
		return nil, err
	}
	nc := &cached{p: p, gen: gen, epoch: epoch, loadedAt: now, lastActivity: lastActivity}
	if c != nil {
		nc.touchedAt = c.touchedAt
	}
	r.mu.Lock()
	if r.cache == nil || len(r.cache) >= maxCached {
		r.cache = map[string]*cached{}
	}
	r.cache[h] = nc
	r.mu.Unlock()
	r.touch(ctx, nc, now)
	return p, nil
}

// epoch reads the authentication epoch and the cache generation. When the
// epoch cannot be read (Redis unreachable) it returns noEpoch: the
// principal is then read from the database, which holds every revocation,
// instead of failing the request; the generation advances once per outage
// so that nothing cached before it is trusted after it.
func (r *Resolver) epoch(ctx context.Context) (epoch int64, gen uint64) {
	n, err := r.Epoch.Current(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if !r.epochLost {
			r.epochLost = true
			r.gen++
		}
		return noEpoch, r.gen
	}
	r.epochLost = false
	return n, r.gen
}

// touch records use of the credential at most once a minute per instance, with
// a conditional UPDATE so several instances do not all write.
func (r *Resolver) touch(ctx context.Context, c *cached, now time.Time) {
	r.mu.Lock()
	due := now.Sub(c.touchedAt) >= touchEvery
	if due {
		c.touchedAt = now
		c.lastActivity = now
	}
	r.mu.Unlock()
	if !due {
		return
	}
	cutoff := db.TS(now.Add(-touchEvery))
	switch {
	case c.p.APIKeyID != "":
		_, _ = r.DB.ExecContext(ctx, `UPDATE api_keys SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $3)`, db.TS(now), c.p.APIKeyID, cutoff)
	case c.p.SessionID != "":
		_, _ = r.DB.ExecContext(ctx, `UPDATE sessions SET last_activity_at = $1 WHERE id = $2 AND last_activity_at < $3`, db.TS(now), c.p.SessionID, cutoff)
	}
}

// userState is what every credential of a user needs from the user row.
type userState struct {
	superAdmin bool
	deleted    bool
	banned     bool
}

const userStateSQL = `SELECT u.is_super_admin, u.deleted_at IS NOT NULL,
	` + db.UserBannedSQL + `
	FROM users u WHERE u.id = $1`

// idle reports whether the session principal p, last active at
// lastActivity, has outlived the idle timeout in force (never for API keys).
func (r *Resolver) idle(p *Principal, lastActivity time.Time, now time.Time) bool {
	return p.Kind == KindSession && r.Policy.Current().IdleExpired(lastActivity, now)
}

// loadSession reads a session with its user's state and permissions, and
// returns it with its last activity. An expired session, or one idle past
// the policy's timeout, is invalid; like an expired one it is not revoked
// (its tokens do not end, see migration 0860), just no longer accepted.
func (r *Resolver) loadSession(ctx context.Context, hash string, now time.Time) (*Principal, time.Time, error) {
	var (
		p                           Principal
		expires, authTime, activity int64
		st                          userState
	)
	var amr db.Strings
	err := r.DB.QueryRowContext(ctx, `SELECT s.id, s.user_id, s.expires_at, s.auth_time, s.provider, s.amr,
		u.is_super_admin, u.deleted_at IS NOT NULL,
		`+db.UserBannedSQL+`, s.last_activity_at
		FROM sessions s JOIN users u ON u.id = s.user_id
		WHERE s.token_hash = $1 AND s.revoked_at IS NULL`, hash, db.TS(now)).
		Scan(&p.SessionID, &p.UserID, &expires, &authTime, &p.Provider, &amr, &st.superAdmin, &st.deleted, &st.banned, &activity)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, time.Time{}, errInvalid
	}
	if err != nil {
		return nil, time.Time{}, apperr.Unavailable(err, "database unavailable")
	}
	p.Kind = KindSession
	p.AMR = amr
	p.ExpiresAt = db.FromTS(expires)
	p.AuthTime = db.FromTS(authTime)
	p.SuperAdmin = st.superAdmin
	lastActivity := db.FromTS(activity)
	if st.deleted || st.banned || !now.Before(p.ExpiresAt) || r.idle(&p, lastActivity, now) {
		return nil, time.Time{}, errInvalid
	}
	if p.perms, err = UserPermissions(ctx, r.DB, p.UserID); err != nil {
		return nil, time.Time{}, apperr.Unavailable(err, "database unavailable")
	}
	return &p, lastActivity, nil
}

func (r *Resolver) loadAPIKey(ctx context.Context, hash string, now time.Time) (*Principal, error) {
	var (
		p       Principal
		owner   sql.NullString
		scopes  db.Strings
		active  bool
		expires db.NullTime
	)
	err := r.DB.QueryRowContext(ctx, `SELECT id, user_id, scopes, is_active, is_system, expires_at FROM api_keys WHERE key_hash = $1`, hash).
		Scan(&p.APIKeyID, &owner, &scopes, &active, &p.SystemKey, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errInvalid
	}
	if err != nil {
		return nil, apperr.Unavailable(err, "database unavailable")
	}
	p.Kind = KindAPIKey
	p.UserID = owner.String
	if expires.Valid {
		p.ExpiresAt = expires.Time
	}
	if !active || (expires.Valid && !now.Before(expires.Time)) {
		return nil, errInvalid
	}
	perms := NewPermSet(scopes...)
	if err := AddPerms(ctx, r.DB, perms, `SELECT p.resource, p.action FROM api_key_roles kr
		JOIN role_permissions rp ON rp.role_id = kr.role_id
		JOIN permissions p ON p.id = rp.permission_id WHERE kr.api_key_id = $1`, p.APIKeyID); err != nil {
		return nil, apperr.Unavailable(err, "database unavailable")
	}
	p.perms = perms
	if p.UserID != "" {
		var st userState
		err := r.DB.QueryRowContext(ctx, userStateSQL, p.UserID, db.TS(now)).Scan(&st.superAdmin, &st.deleted, &st.banned)
		if err != nil || st.deleted || st.banned {
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return nil, apperr.Unavailable(err, "database unavailable")
			}
			return nil, errInvalid
		}
		// A super admin's key is still limited to its scopes; a normal user's
		// key is limited to its scopes and to what the owner holds today.
		if !st.superAdmin && !p.SystemKey {
			if p.ceiling, err = UserPermissions(ctx, r.DB, p.UserID); err != nil {
				return nil, apperr.Unavailable(err, "database unavailable")
			}
		}
	}
	return &p, nil
}

// UserPermissions returns the permissions a user holds through their roles.
func UserPermissions(ctx context.Context, q db.Querier, userID string) (PermSet, error) {
	s := PermSet{}
	if err := AddPerms(ctx, q, s, `SELECT p.resource, p.action FROM user_roles ur
		JOIN role_permissions rp ON rp.role_id = ur.role_id
		JOIN permissions p ON p.id = rp.permission_id WHERE ur.user_id = $1`, userID); err != nil {
		return nil, err
	}
	return s, nil
}

// AddPerms runs query, which selects (resource, action) pairs of the
// permissions table, and adds them to into.
func AddPerms(ctx context.Context, q db.Querier, into PermSet, query string, args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var res, act string
		if err := rows.Scan(&res, &act); err != nil {
			return err
		}
		into[res+":"+act] = struct{}{}
	}
	return rows.Err()
}
