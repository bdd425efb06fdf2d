// Package sessions implements user login sessions (spec 2, Sessions): the
// session tokens (hm_st_) that authenticate REST calls and the web pages,
// their listing and revocation, and the system-key session endpoints.
package sessions

import (
	"context"
	"time"

	"hmid/internal/clientinfo"
	"hmid/internal/db"
	"hmid/internal/token"
)

// DefaultTTL is the lifetime of a session created without an expiry; the
// sign-ins give theirs from the policy session.absolute_timeout_seconds.
const DefaultTTL = 30 * 24 * time.Hour

// New describes a session to create.
type New struct {
	UserID    string
	Provider  string // platform slug used to log in
	IPAddress string
	UserAgent string
	AuthTime  time.Time // when the user authenticated (OIDC auth_time); defaults to now
	AMR       []string  // how the user authenticated (OIDC amr, RFC 8176), see AMR
	ExpiresAt time.Time // defaults to now + DefaultTTL
}

// Created is a new session with its token, shown only now.
type Created struct {
	ID        string
	Token     string
	ExpiresAt time.Time
	CreatedAt time.Time
}

// Create stores a session through q (use the login's transaction when there
// is one) and returns its token; only the SHA-256 hash of the token is kept.
func Create(ctx context.Context, q db.Querier, now time.Time, n New) (Created, error) {
	if n.AuthTime.IsZero() {
		n.AuthTime = now
	}
	if n.ExpiresAt.IsZero() {
		n.ExpiresAt = now.Add(DefaultTTL)
	}
	ci := clientinfo.Parse(n.UserAgent)
	c := Created{ID: db.NewID(), Token: token.New(token.PrefixSession), ExpiresAt: n.ExpiresAt, CreatedAt: now}
	if n.AMR == nil {
		n.AMR = []string{}
	}
	_, err := q.ExecContext(ctx, `INSERT INTO sessions (id, user_id, token_hash, ip_address, user_agent, device_type, browser_name, os_name, provider, auth_time, created_at, expires_at, last_activity_at, amr)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $11, $13)`,
		c.ID, n.UserID, token.Hash(c.Token), n.IPAddress, truncate(n.UserAgent, 512), ci.DeviceType, ci.Browser, ci.OS, n.Provider,
		db.TS(n.AuthTime), db.TS(now), db.TS(n.ExpiresAt), db.JSON(n.AMR))
	if err != nil {
		return Created{}, err
	}
	return c, nil
}

// AMR is the authentication methods reference of a login (RFC 8176 §2):
// "pwd" for the password, "fed" for a sign-in at an upstream provider, and
// "otp" added when a second factor (TOTP or backup code) was verified.
func AMR(password, secondFactor bool) []string {
	out := []string{"fed"}
	if password {
		out[0] = "pwd"
	}
	if secondFactor {
		out = append(out, "otp")
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
