package oauth

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/oauth/store"
	"hmid/internal/token"
)

// InitialAccessToken is an initial access token (RFC 7591 §3) as listed:
// Token is set only in the answer of its creation.
type InitialAccessToken = store.InitialAccessToken

// InitialTokenInput is the body of an initial access token's creation.
type InitialTokenInput struct {
	Name          string   `json:"name"`
	MaxClients    int      `json:"max_clients"`
	AllowedScopes []string `json:"allowed_scopes"`
	// ExpiresInHours bounds its life (0: it does not expire).
	ExpiresInHours int `json:"expires_in_hours"`
}

// Bounds of an initial access token.
const (
	maxInitialTokenClients = 10000
	maxInitialTokenHours   = 24 * 366
)

// CreateInitialToken makes an initial access token (the route admits super
// admins and system keys only). It may register up to MaxClients clients
// (default 1) with scopes within AllowedScopes (empty: any of the catalogue).
func (s *Service) CreateInitialToken(ctx context.Context, p *authn.Principal, in InitialTokenInput) (InitialAccessToken, error) {
	name := strings.TrimSpace(in.Name)
	if name == "" || len(name) > 100 {
		return InitialAccessToken{}, apperr.OnField("name", apperr.Invalid("name is required and at most 100 characters"))
	}
	if in.MaxClients == 0 {
		in.MaxClients = 1
	}
	if in.MaxClients < 1 || in.MaxClients > maxInitialTokenClients {
		return InitialAccessToken{}, apperr.OnField("max_clients", apperr.Invalid("max_clients must be 1 to %d", maxInitialTokenClients))
	}
	if in.ExpiresInHours < 0 || in.ExpiresInHours > maxInitialTokenHours {
		return InitialAccessToken{}, apperr.OnField("expires_in_hours", apperr.Invalid("expires_in_hours must be 0 (no expiry) to %d", maxInitialTokenHours))
	}
	scopes := []string{}
	for _, sc := range in.AllowedScopes {
		if _, ok := knownScope(sc); !ok {
			return InitialAccessToken{}, apperr.OnField("allowed_scopes", apperr.Invalid("scope %q is not known; known scopes are %s", sc, strings.Join(ScopeNames(), ", ")))
		}
		scopes = union(scopes, []string{sc})
	}
	now := s.Clock.Now()
	t := InitialAccessToken{ID: uuid.NewString(), Name: name, Token: token.New(PrefixInitialAccessToken), MaxClients: in.MaxClients,
		AllowedScopes: scopes, CreatedAt: now}
	if in.ExpiresInHours > 0 {
		e := now.Add(time.Duration(in.ExpiresInHours) * time.Hour)
		t.ExpiresAt = &e
	}
	if by := cmp.Or(p.UserID, p.APIKeyID); by != "" {
		t.CreatedBy = &by
	}
	err := s.Store.CreateInitialToken(ctx, t, token.Hash(t.Token))
	t.CreatedAt = db.FromTS(db.TS(now))
	return t, err
}

// ListInitialTokens returns a page of the initial access tokens, newest first.
func (s *Service) ListInitialTokens(ctx context.Context, pg httpx.Page) ([]InitialAccessToken, int, error) {
	return s.Store.InitialTokens(ctx, pg.Limit, pg.Offset())
}

// RevokeInitialToken stops an initial access token from registering more
// clients; those it registered stay. An unknown one is NotFound.
func (s *Service) RevokeInitialToken(ctx context.Context, id string) error {
	if _, err := uuid.Parse(id); err != nil {
		return apperr.NotFoundf("initial access token not found")
	}
	err := s.Store.RevokeInitialToken(ctx, id, s.Clock.Now())
	if errors.Is(err, store.ErrNotFound) {
		return apperr.NotFoundf("initial access token not found")
	}
	return err
}

// spendInitialToken counts a registration against the initial access token
// iat, in tx, with one conditional UPDATE (so of racing registrations no
// more than max_clients succeed, on any instance), and checks c's scopes
// against it. A missing, unknown, revoked, expired or used-up token is
// invalid_token (RFC 6750 §3.1, 401).
func (s *Service) spendInitialToken(ctx context.Context, tx *db.Tx, iat string, c *Client, now time.Time) *Error {
	bad := &Error{Code: ErrInvalidToken, Description: "an initial access token with room for another client is required (Authorization: Bearer)", Status: 401}
	if !token.HasShape(iat, PrefixInitialAccessToken) {
		return bad
	}
	id, allowed, err := s.Store.SpendInitialToken(ctx, tx, token.Hash(iat), now)
	if errors.Is(err, store.ErrNotFound) {
		return bad
	}
	if err != nil {
		return asOAuthErr(err)
	}
	if oe := scopesWithin(c.AllowedScopes, allowed); oe != nil {
		return oe
	}
	c.InitialTokenID = id
	return nil
}
