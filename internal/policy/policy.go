// Package policy holds the operator's policies: session lifetimes, OAuth
// token lifetimes, the password rules and the login throttle's numbers. Each
// is a typed system-config entry (session.*, oauth.*, password.*, login.*),
// changed through PATCH /v1/system-config/{key} or /admin/config and read
// by the areas from an in-memory snapshot (Store), so a hot path reads a
// policy without a SQL statement and a change applies without a restart.
package policy

import (
	"encoding/json"
	"fmt"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/password"
)

// The policy keys of system config (names fixed in DECISIONS.md, "Names
// fixed for the turn-3 work").
const (
	KeySessionAbsolute   = "session.absolute_timeout_seconds"
	KeySessionIdle       = "session.idle_timeout_seconds"
	KeyAccessToken       = "oauth.access_token_lifetime_seconds"
	KeyRefreshToken      = "oauth.refresh_token_lifetime_seconds"
	KeyPasswordMinLength = "password.min_length"
	KeyRefuseCommon      = "password.refuse_common"
	KeyLoginWindow       = "login.fail_window_seconds"
	KeyLoginPerAccount   = "login.fail_per_account"
	KeyLoginPerIP        = "login.fail_per_ip"
	KeyLoginPerAcctDay   = "login.fail_per_account_day"
	KeyLoginPerDevice    = "login.fail_per_device"
	KeyLoginPerDeviceDay = "login.fail_per_device_day"
)

// Login is the login throttle's numbers (package auth explains each).
type Login struct {
	FailWindow        time.Duration
	FailPerAccount    int
	FailPerIP         int
	FailPerAccountDay int
	FailPerDevice     int
	FailPerDeviceDay  int
}

// Policy is one consistent snapshot of every policy.
type Policy struct {
	// SessionAbsolute is the lifetime of a session created by a sign-in.
	SessionAbsolute time.Duration
	// SessionIdle ends a session unused this long; 0 is off.
	SessionIdle time.Duration
	// IdleSince is when the idle timeout was last changed: a session is
	// idle counted from its last activity or from then, whichever is later,
	// so turning the timeout on does not end at once every session that
	// was idle before (an idle timeout applies to sessions from then on).
	IdleSince time.Time
	// AccessTokenTTL and RefreshTokenTTL are the server-wide lifetimes of
	// OAuth tokens; a client may set its own.
	AccessTokenTTL  time.Duration
	RefreshTokenTTL time.Duration
	Password        password.Rules
	Login           Login
}

// Default is the policy of a fresh installation: the spec's values.
var Default = Policy{
	SessionAbsolute: 30 * 24 * time.Hour,
	AccessTokenTTL:  time.Hour,
	RefreshTokenTTL: 30 * 24 * time.Hour,
	Password:        password.DefaultRules,
	Login: Login{
		FailWindow: 15 * time.Minute, FailPerAccount: 5, FailPerIP: 20, FailPerAccountDay: 100,
		FailPerDevice: 10, FailPerDeviceDay: 100,
	},
}

// Bounds of the lifetimes, in seconds. A session of under 5 minutes could
// not finish a sign-in with two factors; a year is the longest session the
// system-key session endpoint creates (sessions.MaxTTL). An access token
// lives at least a minute and at most a day (RFC 9700 §2.2.2 asks for short
// lifetimes); a refresh token at least an hour and at most a year.
const (
	Day               = 86400
	Year              = 365 * Day
	MinSessionSeconds = 300
	MinAccessSeconds  = 60
	MaxAccessSeconds  = Day
	MinRefreshSeconds = 3600
	MaxRefreshSeconds = Year
)

// Entry describes one policy entry of system config.
type Entry struct {
	Key         string
	Description string
	Default     any   // int64 or bool
	Min, Max    int64 // bounds of a number
	// ZeroOff: 0 is allowed besides [Min, Max] and means off.
	ZeroOff bool
	set     func(p *Policy, n int64, b bool)
}

func seconds(n int64) time.Duration { return time.Duration(n) * time.Second }

// Entries are the policy entries, in the order the console lists them.
var Entries = []Entry{
	{KeySessionAbsolute, "How long a session lasts after signing in, in seconds (30 days = 2592000)", int64(30 * Day), MinSessionSeconds, Year, false,
		func(p *Policy, n int64, _ bool) { p.SessionAbsolute = seconds(n) }},
	{KeySessionIdle, "A session unused this long ends, in seconds; 0 is off", int64(0), MinSessionSeconds, Year, true,
		func(p *Policy, n int64, _ bool) { p.SessionIdle = seconds(n) }},
	{KeyAccessToken, "Lifetime of OAuth access tokens, in seconds, for clients without their own", int64(3600), MinAccessSeconds, MaxAccessSeconds, false,
		func(p *Policy, n int64, _ bool) { p.AccessTokenTTL = seconds(n) }},
	{KeyRefreshToken, "Lifetime of OAuth refresh tokens, in seconds, for clients without their own", int64(30 * Day), MinRefreshSeconds, MaxRefreshSeconds, false,
		func(p *Policy, n int64, _ bool) { p.RefreshTokenTTL = seconds(n) }},
	{KeyPasswordMinLength, "Shortest password accepted, in characters", int64(password.DefaultRules.MinLength), password.MinLengthFloor, password.MinLengthCeiling, false,
		func(p *Policy, n int64, _ bool) { p.Password.MinLength = int(n) }},
	{KeyRefuseCommon, "Refuse the 100,000 most common passwords", true, 0, 0, false,
		func(p *Policy, _ int64, b bool) { p.Password.RefuseCommon = b }},
	{KeyLoginWindow, "Window of the failed-login limits, in seconds", int64(900), 60, Day, false,
		func(p *Policy, n int64, _ bool) { p.Login.FailWindow = seconds(n) }},
	{KeyLoginPerAccount, "Failed logins per account and address in the window", int64(5), 1, 1000, false,
		func(p *Policy, n int64, _ bool) { p.Login.FailPerAccount = int(n) }},
	{KeyLoginPerIP, "Failed logins per address in the window", int64(20), 1, 10000, false,
		func(p *Policy, n int64, _ bool) { p.Login.FailPerIP = int(n) }},
	{KeyLoginPerAcctDay, "Failed logins per account in any 24 hours, from all addresses", int64(100), 2, 10000, false,
		func(p *Policy, n int64, _ bool) { p.Login.FailPerAccountDay = int(n) }},
	{KeyLoginPerDevice, "Failed logins per known device in the window", int64(10), 1, 1000, false,
		func(p *Policy, n int64, _ bool) { p.Login.FailPerDevice = int(n) }},
	{KeyLoginPerDeviceDay, "Failed logins per known device in any 24 hours", int64(100), 2, 10000, false,
		func(p *Policy, n int64, _ bool) { p.Login.FailPerDeviceDay = int(n) }},
}

// Lookup returns the policy entry of key.
func Lookup(key string) (Entry, bool) {
	for _, e := range Entries {
		if e.Key == key {
			return e, true
		}
	}
	return Entry{}, false
}

// IsBool reports whether the entry is on or off rather than a number.
func (e Entry) IsBool() bool {
	_, ok := e.Default.(bool)
	return ok
}

// Check validates raw as a value of the policy entry key; ok is false when
// key is no policy. A refusal is a ValidationError naming the key and its
// bounds.
func Check(key string, raw json.RawMessage) (ok bool, err error) {
	e, ok := Lookup(key)
	if !ok {
		return false, nil
	}
	_, _, err = e.parse(raw)
	return true, err
}

// parse reads raw as the entry's value.
func (e Entry) parse(raw json.RawMessage) (int64, bool, error) {
	if e.IsBool() {
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return 0, false, apperr.OnField("value", apperr.Invalid("%s must be true or false", e.Key))
		}
		return 0, b, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err != nil || !e.allowed(n) {
		return 0, false, apperr.OnField("value", apperr.Invalid("%s", e.Bounds()))
	}
	return n, false, nil
}

func (e Entry) allowed(n int64) bool {
	return (e.ZeroOff && n == 0) || (n >= e.Min && n <= e.Max)
}

// Bounds says in words which values the entry takes.
func (e Entry) Bounds() string {
	if e.IsBool() {
		return e.Key + " must be true or false"
	}
	s := fmt.Sprintf("%s must be a whole number from %d to %d", e.Key, e.Min, e.Max)
	if e.ZeroOff {
		s += ", or 0 for off"
	}
	return s
}

// Row is a stored policy entry: its JSON value and when it was last changed.
type Row struct {
	Value     json.RawMessage
	UpdatedAt time.Time
}

// Build returns the policy of the stored rows (by key); a missing or
// unreadable row keeps its default, so a database written by hand cannot
// stop sign-ins.
func Build(rows map[string]Row) *Policy {
	p := Default
	for _, e := range Entries {
		r, ok := rows[e.Key]
		if !ok {
			continue
		}
		n, b, err := e.parse(r.Value)
		if err != nil {
			continue
		}
		e.set(&p, n, b)
		if e.Key == KeySessionIdle {
			p.IdleSince = r.UpdatedAt
		}
	}
	return &p
}

// AccessTTL is the access-token lifetime of a client whose own setting is
// own (0 for none, the server-wide policy).
func (p *Policy) AccessTTL(own int64) time.Duration {
	if own > 0 {
		return seconds(own)
	}
	return p.AccessTokenTTL
}

// RefreshTTL is the refresh-token lifetime of a client whose own setting is
// own (0 for none).
func (p *Policy) RefreshTTL(own int64) time.Duration {
	if own > 0 {
		return seconds(own)
	}
	return p.RefreshTokenTTL
}

// IdleCutoff is the last activity before which a session is idle past the
// timeout at now; the zero time when none is (timeout off, or turned on less
// than a timeout ago).
func (p *Policy) IdleCutoff(now time.Time) time.Time {
	if p.SessionIdle <= 0 {
		return time.Time{}
	}
	cut := now.Add(-p.SessionIdle)
	if !p.IdleSince.Before(cut) {
		return time.Time{}
	}
	return cut
}

// IdleExpired reports whether a session last active at lastActivity has
// been idle too long at now. Idleness counts from lastActivity or from
// IdleSince, whichever is later.
func (p *Policy) IdleExpired(lastActivity, now time.Time) bool {
	if p.SessionIdle <= 0 {
		return false
	}
	from := lastActivity
	if p.IdleSince.After(from) {
		from = p.IdleSince
	}
	return now.Sub(from) >= p.SessionIdle
}
