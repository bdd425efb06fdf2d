package oauth

import (
	"context"
	"errors"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authflow"
	"hmid/internal/cache"
	"hmid/internal/db"
	"hmid/internal/oauth/store"
	"hmid/internal/token"
)

var _ authflow.Devices = (*Service)(nil)

// errNoDevice is the one answer for a user code that is wrong, expired,
// already decided or of an inactive client: telling them apart would help
// whoever guesses codes.
var errNoDevice = apperr.NotFoundf("this code is not valid: it may be mistyped, expired or already used")

// deviceRow is a pending device authorization found by its user code.
type deviceRow struct {
	store.PendingDevice
	userCode string
	client   Client
}

// guessLimit is the allowance of failed user code lookups per key.
var guessLimit = map[string]cache.Limit{
	"user": cache.PerPeriod(userCodeGuessesPerUser, userCodeGuessWindow),
	"ip":   cache.PerPeriod(userCodeGuessesPerIP, userCodeGuessWindow),
}

// takeGuess counts a user code lookup against the person and their address
// (RFC 8628 §5.1: user codes are short, so guessing must be throttled). It
// returns the keys it took from, to give back when the code matched.
func (s *Service) takeGuess(ctx context.Context, userID, ip string) (map[string]string, error) {
	keys := map[string]string{"user": "device:guess:user:" + userID, "ip": "device:guess:ip:" + ip}
	if s.Limiter == nil {
		return nil, nil
	}
	for kind, key := range keys {
		d, err := cache.Allow(ctx, s.Limiter, key, guessLimit[kind])
		if err != nil {
			return nil, err
		}
		if !d.Allowed {
			return nil, apperr.RateLimited(d.RetryAfter, "too many wrong codes; try again later")
		}
	}
	return keys, nil
}

// giveBackGuess returns a lookup that found its code to the allowances.
func (s *Service) giveBackGuess(ctx context.Context, keys map[string]string) {
	for kind, key := range keys {
		_, _ = s.Limiter.Refund(ctx, key, guessLimit[kind], 1)
	}
}

// findDevice looks a pending device authorization up by its user code,
// throttled.
func (s *Service) findDevice(ctx context.Context, who authflow.Approver, userCode, ip string) (deviceRow, error) {
	keys, err := s.takeGuess(ctx, who.UserID, ip)
	if err != nil {
		return deviceRow{}, err
	}
	code, ok := normalizeUserCode(userCode)
	if !ok {
		return deviceRow{}, errNoDevice
	}
	pending, err := s.Store.PendingDevice(ctx, token.Hash(code), s.Clock.Now())
	if errors.Is(err, store.ErrNotFound) {
		return deviceRow{}, errNoDevice
	}
	if err != nil {
		return deviceRow{}, err
	}
	d := deviceRow{PendingDevice: pending}
	if d.client, err = s.loadClient(ctx, s.DB, pending.ClientID); err != nil {
		return deviceRow{}, err
	}
	if !d.client.IsActive {
		return deviceRow{}, errNoDevice
	}
	s.giveBackGuess(ctx, keys)
	d.userCode = FormatUserCode(code)
	return d, nil
}

// request is what the verification page shows of d to the person.
func (s *Service) request(ctx context.Context, who authflow.Approver, d deviceRow) (authflow.DeviceRequest, error) {
	out := authflow.DeviceRequest{UserCode: d.userCode, ClientID: d.client.ID, ClientName: d.client.Name, ExpiresAt: d.Expires}
	if d.client.LogoURL != nil {
		out.LogoURL = *d.client.LogoURL
	}
	for _, sc := range d.Scopes {
		desc, _ := knownScope(sc)
		out.Scopes = append(out.Scopes, desc)
	}
	if !d.client.IsFirstParty {
		covered, err := s.consentCovers(ctx, who.UserID, d.client.ID, d.Scopes)
		if err != nil {
			return out, err
		}
		out.NeedsConsent = !covered
	}
	return out, nil
}

// FindDevice returns the pending device authorization of a user code for
// the verification page (authflow.Devices).
func (s *Service) FindDevice(ctx context.Context, who authflow.Approver, userCode, ip string) (authflow.DeviceRequest, error) {
	d, err := s.findDevice(ctx, who, userCode, ip)
	if err != nil {
		return authflow.DeviceRequest{}, err
	}
	return s.request(ctx, who, d)
}

// DecideDevice approves or denies the device authorization of a user code,
// once (authflow.Devices). Approval binds it to the person and records
// their consent for a client that is not first party (consent_granted),
// as the consent page does; the device's next poll gets the tokens.
func (s *Service) DecideDevice(ctx context.Context, who authflow.Approver, userCode string, approved bool, ip, userAgent string) (authflow.DeviceRequest, error) {
	d, err := s.findDevice(ctx, who, userCode, ip)
	if err != nil {
		return authflow.DeviceRequest{}, err
	}
	req, err := s.request(ctx, who, d)
	if err != nil {
		return req, err
	}
	now := s.Clock.Now()
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if approved {
			usable, err := s.Store.UserUsable(ctx, tx, who.UserID, now)
			if err != nil {
				return err
			}
			if !usable {
				return apperr.Forbiddenf("your account cannot authorize apps")
			}
		}
		won, err := s.Store.DecideDevice(ctx, tx, store.DeviceDecision{ID: d.ID, Approved: approved, UserID: who.UserID, AuthTime: who.AuthTime,
			Context: db.JSON(approverContext(who, d.Resources)), Now: now})
		if err != nil {
			return err
		}
		if !won {
			return errNoDevice // decided meanwhile, or expired
		}
		if !approved || d.client.IsFirstParty {
			return nil
		}
		return s.grantConsent(ctx, tx, who.UserID, d.client, d.Scopes, Meta{IP: ip, UserAgent: userAgent}, now)
	})
	return req, err
}

// approverContext is the authentication context the device's tokens carry:
// that of the session the person approved in, and the resources the
// device's request named (RFC 8707 §2.1), which bound their audience as an
// authorization request's do.
func approverContext(who authflow.Approver, resources []string) authContext {
	ac := authContext{ACR: ACRSingleFactor, AMR: who.AMR, Resources: resources}
	for _, m := range who.AMR {
		if m == "otp" {
			ac.ACR = ACRTwoFactor
		}
	}
	return ac
}

// grantConsent adds scopes to the person's stored consent for c and
// audits it, as the consent page's approval does.
func (s *Service) grantConsent(ctx context.Context, tx *db.Tx, userID string, c Client, scopes []string, m Meta, now time.Time) error {
	if err := s.Store.SaveConsent(ctx, tx, userID, c.ID, scopes, now); err != nil {
		return err
	}
	_, err := s.Audit.Record(ctx, tx, m.event(auditEvent(userID, audit.ConsentGranted, c,
		"consent granted to "+c.Name+" on a device", map[string]any{"client_name": c.Name, "scopes": scopes, "grant_type": GrantDeviceCode})))
	return err
}
