package oauth

import (
	"context"
	"errors"
	"slices"

	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/oauth/store"
	"hmid/internal/token"
)

// clientGrant is grant_type=client_credentials (RFC 6749 §4.4.2): a
// confidential client gets an access token for itself, a service principal
// holding permission scopes (clientcredentials.go), with no refresh token
// and no ID token, as no user is involved.
type clientGrant struct {
	db    *db.DB
	store *store.Store
}

// ready refuses a client that is not confidential (RFC 6749 §4.4:
// confidential clients only; registration refuses the grant for others).
func (g *clientGrant) ready(tr *tokenRequest) *Error {
	if tr.client.ClientType != Confidential {
		return oerr(ErrUnauthorizedClient, "the client credentials grant is for confidential clients only")
	}
	return nil
}

// redeem decides the token's scopes and stores it. Client credentials
// tokens are opaque and live in their own table, so the one-character
// longer prefix tells them apart at lookup (clientTokenMark). Their
// audience is the resources the request names (RFC 8707 §2, checked
// against the client's by the shared phase), else the client itself.
func (g *clientGrant) redeem(ctx context.Context, tr *tokenRequest) (*issuance, *Error) {
	scopes, oe := g.scopes(ctx, tr)
	if oe != nil {
		return nil, oe
	}
	t := issuedTokens{access: token.New(token.PrefixAccessToken + clientTokenMark), accessScopes: scopes, audience: tr.resources, accessTTL: tr.accessTTL}
	err := g.store.StoreClientToken(ctx, store.ClientToken{ID: db.NewID(), Hash: token.Hash(t.access), ClientID: tr.client.ID, Scopes: scopes,
		Audience: t.audience, Created: tr.now, Expires: tr.now.Add(t.accessTTL)})
	if err != nil {
		return nil, asOAuthErr(err)
	}
	return &issuance{tokens: t}, nil
}

// scopes decides the scopes of a client credentials token. A scope
// parameter must name permission scopes of the client (openid and the
// other OpenID Connect scopes need a user: invalid_scope); without one the
// token gets every permission scope of the client (RFC 6749 §3.3 lets the
// server pick a default). The token never holds more than the client's
// owner holds at issue, as a user's API key never holds more than its
// owner: a permission the owner lost is refused when asked for and left
// out of the default.
func (g *clientGrant) scopes(ctx context.Context, tr *tokenRequest) ([]string, *Error) {
	c, asked := tr.client, tr.form.Has("scope")
	scopes := parseScope(tr.form.Get("scope"))
	if !asked {
		scopes = PermissionScopes(c.AllowedScopes)
		slices.Sort(scopes)
	}
	for _, sc := range scopes {
		if _, oidc := knownScope(sc); oidc {
			return nil, oerr(ErrInvalidScope, "scope "+sc+" needs a user; the client credentials grant acts for the client itself")
		}
		if !IsPermissionScope(sc) || !slices.Contains(c.AllowedScopes, sc) {
			return nil, oerr(ErrInvalidScope, "the client may not request scope "+sc)
		}
	}
	ceiling, oe := g.ownerCeiling(ctx, tr)
	if oe != nil {
		return nil, oe
	}
	held := scopes[:0:0]
	for _, sc := range scopes {
		switch {
		case ceiling == nil || ceiling.Can(sc):
			held = append(held, sc)
		case asked:
			return nil, oerr(ErrInvalidScope, "the client's owner no longer holds "+sc)
		}
	}
	if len(held) == 0 {
		return nil, oerr(ErrInvalidScope, "no scope to grant: register permission scopes (resource:action) in the client's allowed_scopes")
	}
	return held, nil
}

// ownerCeiling returns the permissions the client's owner holds now, or nil
// for no limit (an ownerless client, registered by a system key, or a super
// admin's). An owner who is deleted or banned makes the client unusable.
func (g *clientGrant) ownerCeiling(ctx context.Context, tr *tokenRequest) (authn.PermSet, *Error) {
	owner := tr.client.OwnerID
	if owner == nil {
		return nil, nil
	}
	superAdmin, usable, err := g.store.Owner(ctx, *owner, tr.now)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && !usable):
		return nil, oerr(ErrUnauthorizedClient, "the client's owner can no longer authorize it")
	case err != nil:
		return nil, asOAuthErr(err)
	case superAdmin:
		return nil, nil
	}
	perms, err := authn.UserPermissions(ctx, g.db, *owner)
	if err != nil {
		return nil, asOAuthErr(err)
	}
	return perms, nil
}
