package oauth

import (
	"context"
	"errors"
	"net/url"
	"time"

	"hmid/internal/audit"
	"hmid/internal/db"
	"hmid/internal/oauth/claims"
	"hmid/internal/oauth/store"
	"hmid/internal/token"
)

// refreshGrant is the refresh token grant (RFC 6749 §6). The token rotates:
// the presented one is spent by a conditional UPDATE, so of racing requests
// exactly one wins; presenting a spent token again revokes its whole family
// (RFC 9700 §4.14.2), unless its own client presents it within
// reuseInterval of its rotation (see reissue). A scope parameter may only
// narrow the access token.
type refreshGrant struct {
	db    *db.DB
	store *store.Store
	audit *audit.Writer
	// reuseInterval (HMID_REFRESH_REUSE_INTERVAL) is how long after its
	// rotation a refresh token presented again by its own client gets a new
	// pair instead of revoking its family; 0 = strict reuse detection.
	reuseInterval time.Duration
}

// ready requires refresh_token (RFC 6749 §6).
func (g *refreshGrant) ready(tr *tokenRequest) *Error {
	if tr.form.Get("refresh_token") == "" {
		return oerr(ErrInvalidRequest, "refresh_token is required")
	}
	return nil
}

// redeem rotates the refresh token. The token and its user are read first,
// on the readers; only the rotation writes, and the conditional UPDATE at
// its start is what decides a race, so a token spent or revoked between the
// read and the write still counts as reused.
func (g *refreshGrant) redeem(ctx context.Context, tr *tokenRequest) (*issuance, *Error) {
	var row claims.Row
	old, err := g.store.RefreshToken(ctx, token.Hash(tr.form.Get("refresh_token")), tr.now, &row)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, oerr(ErrInvalidGrant, "invalid refresh token")
	case err != nil:
		return nil, asOAuthErr(err)
	case old.Family.ClientID != tr.client.ID:
		return nil, oerr(ErrInvalidGrant, "the refresh token was issued to another client")
	case old.Rotated.Valid && !g.inReuseInterval(old.Rotated.Time, tr.now):
		return nil, g.revokeFamily(ctx, tr, old)
	case (old.Revoked.Valid && !old.Rotated.Valid) || !tr.now.Before(old.Expires):
		return nil, oerr(ErrInvalidGrant, "the refresh token is expired or revoked")
	}
	scopes, oe := narrowScope(old.Family.Scopes, tr.form)
	if oe != nil {
		return nil, oe
	}
	if !old.Usable {
		return nil, oerr(ErrInvalidGrant, "the user can no longer authorize this client")
	}
	// OpenID Connect Core §12.2: the refreshed ID token carries no nonce.
	a := &authorization{family: old.Successor(), scopes: scopes, ac: decodeContext(old.Family.Context), claims: &row}
	t, oe := tr.issue(a)
	if oe != nil {
		return nil, oe
	}
	won := false
	if !old.Rotated.Valid {
		if won, err = g.store.RotateRefresh(ctx, old, t.pair(a.family, tr.now), tr.now); err != nil {
			return nil, asOAuthErr(err)
		}
	}
	if !won {
		// Spent before (old.Rotated.Valid) or meanwhile, by a racing request.
		if g.reuseInterval <= 0 {
			return nil, g.revokeFamily(ctx, tr, old)
		}
		ok, err := g.reissue(ctx, tr, old, t)
		if err != nil {
			return nil, asOAuthErr(err)
		}
		if !ok {
			return nil, g.revokeFamily(ctx, tr, old)
		}
	}
	return &issuance{tokens: t, user: a}, nil
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

// inReuseInterval reports whether a refresh token rotated at rotatedAt is,
// at now, still within reuseInterval of its rotation.
func (g *refreshGrant) inReuseInterval(rotatedAt, now time.Time) bool {
	return g.reuseInterval > 0 && now.Sub(rotatedAt) < g.reuseInterval
}

// reissue answers a spent refresh token presented again by its own client
// within reuseInterval of its rotation: typically a client that lost the
// answer to its refresh and retries, or two requests of one client that
// raced. Only hashes are stored, so the pair issued at the rotation cannot
// be handed out again; a new pair t is stored in the same family instead, as
// a sibling, and nothing is revoked: the pair of the rotation stays valid
// too. It reports false, writing nothing, when the token is not rotated
// within the interval (revoked otherwise) or when its family has no live
// refresh token left (revoked or expired meanwhile); the caller then revokes
// the family. A reissue is audited as refresh_token_reused.
func (g *refreshGrant) reissue(ctx context.Context, tr *tokenRequest, old store.RefreshToken, t issuedTokens) (bool, error) {
	ok := false
	err := g.db.Tx(ctx, func(tx *db.Tx) error {
		live, err := g.store.LockLiveRefresh(ctx, tx, old.Family.ID, tr.now)
		if err != nil || !live {
			return err
		}
		// Read again on the writer: the caller's read may predate a racing rotation.
		rotated, err := g.store.RotatedAt(ctx, tx, old.ID)
		if err != nil {
			return err
		}
		if !rotated.Valid || !g.inReuseInterval(rotated.Time, tr.now) {
			return nil
		}
		if err := g.store.StoreTokens(ctx, tx, t.pair(old.Successor(), tr.now), tr.now); err != nil {
			return err
		}
		ok = true
		return g.auditReuse(ctx, tx, tr, old, false, tr.now.Sub(rotated.Time))
	})
	return ok && err == nil, err
}

// revokeFamily revokes every token of an authorization whose refresh token
// was presented twice (RFC 9700 §4.14.2), audits it as a failed
// refresh_token_reused, and returns the answer to that presentation. It
// takes the family's locks first (store.LockLiveRefresh), so it serializes
// with a reissue of the same family.
func (g *refreshGrant) revokeFamily(ctx context.Context, tr *tokenRequest, old store.RefreshToken) *Error {
	err := g.db.Tx(ctx, func(tx *db.Tx) error {
		if _, err := g.store.LockLiveRefresh(ctx, tx, old.Family.ID, tr.now); err != nil {
			return err
		}
		n, err := g.store.RevokeFamily(ctx, tx, old.Family.ID, tr.now)
		if err != nil || n == 0 {
			return err // none: already revoked, reported once, when it happened
		}
		return g.auditReuse(ctx, tx, tr, old, true, -1)
	})
	if err != nil {
		return asOAuthErr(err)
	}
	return oerr(ErrInvalidGrant, "the refresh token was already used; every token of this authorization is revoked")
}

// auditReuse records the presentation of a spent refresh token:
// refresh_token_reused, a failure when the family was revoked for it.
func (g *refreshGrant) auditReuse(ctx context.Context, q db.Querier, tr *tokenRequest, old store.RefreshToken, revoked bool, since time.Duration) error {
	e := audit.Event{
		UserID: old.Family.UserID, EventType: audit.RefreshTokenReused, ResourceType: "oauth_client", ResourceID: old.Family.ClientID,
		Description: "a spent refresh token was presented again within the reuse interval; a new token pair was issued",
		Metadata:    map[string]any{"family_id": old.Family.ID, "reuse_interval_seconds": g.reuseInterval.Seconds()},
	}
	if since >= 0 {
		e.Metadata["seconds_since_rotation"] = since.Seconds()
	}
	if revoked {
		e.Failed = true
		e.Description = "a spent refresh token was presented again; every token of its authorization was revoked"
		e.ErrorMessage = "refresh token reuse detected (RFC 9700 §4.14.2)"
	}
	_, err := g.audit.Record(ctx, q, MetaFrom(tr.r).event(e))
	return err
}
