package oauth

import (
	"context"
	"errors"
	"slices"

	"hmid/internal/db"
	"hmid/internal/oauth/store"
	"hmid/internal/token"
)

// deviceGrant is grant_type=urn:ietf:params:oauth:grant-type:device_code
// (RFC 8628 §3.4, §3.5): a device polls with its device code while a person
// decides on the verification page (device.go, deviceverify.go).
type deviceGrant struct {
	db    *db.DB
	store *store.Store
}

// ready requires a device_code of the shape hmid issues (RFC 8628 §3.4).
func (g *deviceGrant) ready(tr *tokenRequest) *Error {
	code := tr.form.Get("device_code")
	if code == "" {
		return oerr(ErrInvalidRequest, "device_code is required")
	}
	if !token.HasShape(code, PrefixDeviceCode) {
		return oerr(ErrInvalidGrant, "invalid device_code")
	}
	return nil
}

// redeem records the poll and answers authorization_pending or slow_down
// while the person has not decided, access_denied after a denial,
// expired_token after the ten minutes, and the tokens once after an
// approval (RFC 8628 §3.5).
func (g *deviceGrant) redeem(ctx context.Context, tr *tokenRequest) (*issuance, *Error) {
	d, err := g.store.PollDevice(ctx, store.DevicePoll{DeviceCodeHash: token.Hash(tr.form.Get("device_code")), Now: tr.now,
		Grace: pollGrace, Step: slowDownStep, MaxInterval: DeviceCodeTTL})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, oerr(ErrInvalidGrant, "invalid device_code")
	case err != nil:
		return nil, asOAuthErr(err)
	case d.ClientID != tr.client.ID:
		return nil, oerr(ErrInvalidGrant, "the device_code was issued to another client")
	case !tr.now.Before(d.Expires):
		return nil, oerr(ErrExpiredToken, "the device_code has expired; start again")
	}
	switch d.Status {
	case "pending":
		if d.Slowed {
			return nil, oerr(ErrSlowDown, "polling too fast: wait 5 seconds longer between requests")
		}
		return nil, oerr(ErrAuthorizationPending, "the user has not yet approved or denied the request")
	case "denied":
		return nil, oerr(ErrAccessDenied, "the user denied the request")
	case "approved":
		return g.approved(ctx, tr, d)
	}
	return nil, oerr(ErrInvalidGrant, "the device_code was already used")
}

// approved issues the tokens of an approved device authorization, once:
// the conditional UPDATE lets exactly one of racing polls through. The
// tokens belong to no browser session: the device is not the browser the
// person approved in, and signing out there must not sign the TV out.
func (g *deviceGrant) approved(ctx context.Context, tr *tokenRequest, d store.DeviceState) (*issuance, *Error) {
	var is *issuance
	fail := oerr(ErrInvalidGrant, "the device_code was already used")
	err := g.db.Tx(ctx, func(tx *db.Tx) error {
		if won, err := g.store.RedeemDevice(ctx, tx, d.ID); err != nil || !won {
			return err
		}
		usable, err := g.store.UserUsable(ctx, tx, d.UserID, tr.now)
		if err != nil || !usable {
			fail = oerr(ErrInvalidGrant, "the user can no longer authorize this client")
			return err
		}
		a := &authorization{scopes: d.Scopes, ac: decodeContext(d.Context), family: store.Family{ID: db.NewID(), ClientID: tr.client.ID,
			UserID: d.UserID, Scopes: d.Scopes, AuthTime: d.AuthTime, Context: d.Context, OfflineRefresh: slices.Contains(d.Scopes, "offline_access")}}
		t, oe := tr.issue(a)
		if fail = oe; fail != nil {
			return errNotIssued // roll back: the device may poll again
		}
		is = &issuance{tokens: t, user: a}
		return g.store.StoreTokens(ctx, tx, t.pair(a.family, tr.now), tr.now)
	})
	if err != nil && !errors.Is(err, errNotIssued) {
		return nil, asOAuthErr(err)
	}
	return is, fail
}

// errNotIssued rolls back a redemption whose tokens could not be issued.
var errNotIssued = errors.New("oauth: the tokens could not be issued")
