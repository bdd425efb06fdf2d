package oauth

import (
	"context"
	"errors"
	"slices"

	"hmid/internal/db"
	"hmid/internal/oauth/store"
	"hmid/internal/token"
)

// codeGrant is the authorization code grant (RFC 6749 §4.1.3): a code the
// authorization endpoint issued, redeemed once, by the client it was issued
// to, with the redirect URI and PKCE verifier it was bound to.
type codeGrant struct {
	db    *db.DB
	store *store.Store
}

// ready requires code and redirect_uri (RFC 6749 §4.1.3).
func (g *codeGrant) ready(tr *tokenRequest) *Error {
	switch {
	case tr.form.Get("code") == "":
		return oerr(ErrInvalidRequest, "code is required")
	case tr.form.Get("redirect_uri") == "":
		return oerr(ErrInvalidRequest, "redirect_uri is required")
	}
	return nil
}

// redeem burns the code, whatever the outcome of the request: a code is
// good for one attempt, and presenting a used one revokes every token
// issued from it (RFC 9700 §4.3.1). The tokens are stored in the
// transaction that burns the code, with the note of the browser session
// that granted it (Back-Channel Logout 1.0 §2.5).
func (g *codeGrant) redeem(ctx context.Context, tr *tokenRequest) (*issuance, *Error) {
	var (
		fail *Error
		is   *issuance
	)
	err := g.db.Tx(ctx, func(tx *db.Tx) error {
		code, err := g.store.RedeemCode(ctx, tx, token.Hash(tr.form.Get("code")), tr.now)
		switch {
		case errors.Is(err, store.ErrNotFound):
			fail = oerr(ErrInvalidGrant, "invalid authorization code")
			return nil
		case errors.Is(err, store.ErrCodeReplayed):
			fail = oerr(ErrInvalidGrant, "the authorization code was already used; tokens issued from it are revoked")
			return nil // commit: the tokens it bought stay revoked
		case err != nil:
			return err
		}
		if fail = checkCode(code, tr); fail != nil {
			return nil // commit: the code stays burnt
		}
		a := &authorization{scopes: code.Scopes, ac: decodeContext(code.Context), nonce: code.Nonce, family: store.Family{
			ID: code.FamilyID, ClientID: code.ClientID, UserID: code.UserID, Scopes: code.Scopes, AuthTime: code.AuthTime,
			SessionID: code.SessionID, Context: code.Context, OfflineRefresh: slices.Contains(code.Scopes, "offline_access"),
		}}
		t, oe := tr.issue(a)
		if fail = oe; fail != nil {
			return nil // commit: the code stays burnt
		}
		if err := g.store.StoreTokens(ctx, tx, t.pair(a.family, tr.now), tr.now); err != nil {
			return err
		}
		is = &issuance{tokens: t, user: a}
		if code.SessionID == "" {
			return nil
		}
		return g.store.RecordSessionGrant(ctx, tx, a.family, tr.now)
	})
	if err != nil {
		return nil, asOAuthErr(err)
	}
	return is, fail
}

// checkCode verifies the binding of a code to its client, redirect URI and
// PKCE challenge (RFC 6749 §4.1.3, RFC 7636 §4.6, RFC 9700 §2.1.1), and
// that its user may still authorize clients.
func checkCode(code store.RedeemedCode, tr *tokenRequest) *Error {
	verifier := tr.form.Get("code_verifier")
	switch {
	case !tr.now.Before(code.Expires):
		return oerr(ErrInvalidGrant, "the authorization code has expired")
	case code.ClientID != tr.client.ID:
		return oerr(ErrInvalidGrant, "the authorization code was issued to another client")
	case code.RedirectURI != tr.form.Get("redirect_uri"):
		return oerr(ErrInvalidGrant, "redirect_uri does not match the authorization request")
	case code.Challenge == "" && verifier != "":
		// A verifier without a challenge is a PKCE downgrade attempt.
		return oerr(ErrInvalidGrant, "code_verifier sent but the authorization request had no code_challenge")
	case code.Challenge != "" && verifier == "":
		return oerr(ErrInvalidGrant, "code_verifier is required: the authorization request had a code_challenge")
	case code.Challenge != "" && !validVerifier(verifier):
		return oerr(ErrInvalidRequest, "code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~")
	case code.Challenge != "" && !token.Equal(s256(verifier), code.Challenge):
		return oerr(ErrInvalidGrant, "code_verifier does not match the code_challenge")
	case !code.Usable:
		return oerr(ErrInvalidGrant, "the user can no longer authorize this client")
	}
	return nil
}
