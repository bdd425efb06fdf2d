package oauth

import (
	"time"

	"hmid/internal/apperr"
	"hmid/internal/httpx"
	"hmid/internal/policy"
)

// ClientLifetime is a lifetime field of ClientInput: absent, null (the
// server's default) or a number of seconds.
type ClientLifetime = httpx.Opt[int64]

// Token lifetimes: the server-wide policies oauth.access_token_lifetime_seconds
// and oauth.refresh_token_lifetime_seconds (package policy), which a client
// may override with its own access_token_lifetime_seconds and
// refresh_token_lifetime_seconds (null: the server's). A change applies to
// tokens issued after it; tokens already issued keep their expiry, which is
// stored with them.

// lifetimes returns the access and refresh token lifetimes of client c,
// read from the policy snapshot (no statement).
func (s *Service) lifetimes(c Client) (access, refresh time.Duration) {
	p := s.Policy.Current()
	return p.AccessTTL(deref(c.AccessTokenLifetimeSeconds)), p.RefreshTTL(deref(c.RefreshTokenLifetimeSeconds))
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// applyLifetimeInput validates and applies the lifetime fields of in: a
// whole number of seconds within the bounds of the server-wide policies,
// or null for the server's.
func applyLifetimeInput(c *Client, in ClientInput) error {
	for _, f := range []struct {
		name     string
		in       *ClientLifetime
		dst      **int64
		min, max int64
	}{
		{"access_token_lifetime_seconds", &in.AccessTokenLifetimeSeconds, &c.AccessTokenLifetimeSeconds, policy.MinAccessSeconds, policy.MaxAccessSeconds},
		{"refresh_token_lifetime_seconds", &in.RefreshTokenLifetimeSeconds, &c.RefreshTokenLifetimeSeconds, policy.MinRefreshSeconds, policy.MaxRefreshSeconds},
	} {
		if !f.in.Set {
			continue
		}
		v := f.in.Ptr()
		if v != nil && (*v < f.min || *v > f.max) {
			return apperr.OnField(f.name, apperr.Invalid("%s must be a whole number of seconds from %d to %d, or null for the server's default", f.name, f.min, f.max))
		}
		*f.dst = v
	}
	return nil
}

// DefaultLifetimes are the server-wide token lifetimes in force, in seconds
// (the client form shows them beside its empty fields).
func (s *Service) DefaultLifetimes() (access, refresh int64) {
	p := s.Policy.Current()
	return int64(p.AccessTokenTTL / time.Second), int64(p.RefreshTokenTTL / time.Second)
}

// lifetimesSet reports whether in sets a lifetime field.
func lifetimesSet(in ClientInput) bool {
	return in.AccessTokenLifetimeSeconds.Set || in.RefreshTokenLifetimeSeconds.Set
}
