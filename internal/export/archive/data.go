// Package archive renders a user's personal-data export as a ZIP archive
// holding data.json (machine-readable), report.pdf (a readable, localized
// report of the same data) and README.txt (what the files and keys mean).
//
// The package only renders: the caller gathers the data into a [Data] value
// and passes it to [Write]. Rendering is kept apart from the database so the
// archive layout, which users and their tools depend on, can be tested in
// isolation and cannot leak anything the Data type does not model. Secrets
// (passwords, full API keys, client secrets, TOTP secrets, backup codes) have
// no field at all, and session IP addresses are masked by their type,
// [IPAddress], whenever they are written.
package archive

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// ExportFormat is the value of exportInfo.format: the container the export is
// delivered in, matching the format recorded in the export history.
const ExportFormat = "zip"

// FormatVersion is the value of exportInfo.version. It versions the layout of
// data.json so tools reading old and new exports can tell them apart; raise it
// whenever a key is removed or changes meaning.
const FormatVersion = "1.0"

// maxKeyPrefixRunes bounds apiKeys[].keyPrefix. A prefix only has to let the
// user recognise a key; capping it means a caller that passes a full key by
// mistake still cannot put a usable credential into the archive.
const maxKeyPrefixRunes = 12

// Data is everything a personal-data export contains. Its JSON encoding is
// exactly the data.json layout: camelCase keys, times in RFC 3339 UTC to the
// second, absent times as null and absent lists as [] (never null), and session
// IP addresses masked. Those guarantees come from [Data.MarshalJSON], so they
// also hold when a Data value is marshalled outside [Write].
//
// The caller fills every field except ExportInfo.Format and
// ExportInfo.Version, which this package sets because it defines the layout.
type Data struct {
	// ExportInfo describes the export itself; ExportedAt is required.
	ExportInfo ExportInfo `json:"exportInfo"`
	// User is the account the export belongs to.
	User User `json:"user"`
	// PlatformAccounts are the login platforms linked to the account.
	PlatformAccounts []PlatformAccount `json:"platformAccounts"`
	// ConnectedApps are the OAuth clients the user has consented to.
	ConnectedApps []ConnectedApp `json:"connectedApps"`
	// OwnedApps are the OAuth clients the user registered.
	OwnedApps []OwnedApp `json:"ownedApps"`
	// APIKeys are the user's API keys, described without their secret part.
	APIKeys []APIKey `json:"apiKeys"`
	// Roles are the names of the roles assigned to the user.
	Roles []string `json:"roles"`
	// TwoFactorAuth is the state of TOTP two-factor authentication.
	TwoFactorAuth TwoFactorAuth `json:"twoFactorAuth"`
	// DeletionStatus tells whether the account is scheduled for deletion or deleted.
	DeletionStatus DeletionStatus `json:"deletionStatus"`
	// ExportLogs are the user's earlier exports, from the export history.
	ExportLogs []ExportLog `json:"exportLogs"`
	// Sessions are the user's login sessions.
	Sessions []Session `json:"sessions"`
	// Passkeys are the user's passkeys: names and dates, never key material.
	Passkeys []Passkey `json:"passkeys"`
}

// Passkey is one entry of data.json's passkeys array (issue 20). The
// credential id and public key are deliberately absent.
type Passkey struct {
	// Name is the name the user gave it, or the authenticator's model.
	Name string `json:"name"`
	// Synced reports a passkey that may live on several devices (backup
	// eligible); false is one bound to its device.
	Synced bool `json:"synced"`
	// CreatedAt is when it was added.
	CreatedAt time.Time `json:"createdAt"`
	// LastUsedAt is when it last signed the user in, nil when never.
	LastUsedAt *time.Time `json:"lastUsedAt"`
}

// normalized returns p with its times in UTC (see utc).
func (p Passkey) normalized() Passkey {
	p.CreatedAt, p.LastUsedAt = utc(p.CreatedAt), utcPtr(p.LastUsedAt)
	return p
}

// ExportInfo is data.json's exportInfo object.
type ExportInfo struct {
	// ExportedAt is when the export was produced; it is also the date shown in
	// the report, the README and the archive's file times.
	ExportedAt time.Time `json:"exportedAt"`
	// Format is always [ExportFormat]; Write overwrites whatever the caller set.
	Format string `json:"format"`
	// Version is always [FormatVersion]; Write overwrites whatever the caller set.
	Version string `json:"version"`
}

// User is data.json's user object.
type User struct {
	// ID is the user id.
	ID string `json:"id"`
	// Username is the unique user name.
	Username string `json:"username"`
	// PrivacyMode reports whether privacy mode is on.
	PrivacyMode bool `json:"privacyMode"`
	// AvatarsEnabled reports whether avatars from login providers are stored.
	AvatarsEnabled bool `json:"avatarsEnabled"`
	// CreatedAt is when the account was created.
	CreatedAt time.Time `json:"createdAt"`
	// LastLoginAt is the last login, nil if the user never logged in.
	LastLoginAt *time.Time `json:"lastLoginAt"`
}

// PlatformAccount is one element of data.json's platformAccounts.
type PlatformAccount struct {
	// Platform is the display name of the login platform, such as "Discord" or "Email".
	Platform string `json:"platform"`
	// Username is the user's name on that platform.
	Username string `json:"username"`
	// Email is the address the platform reported, empty when it gave none.
	Email string `json:"email"`
	// IsPrimary marks the account's primary login.
	IsPrimary bool `json:"isPrimary"`
	// ConnectedAt is when the platform account was linked.
	ConnectedAt time.Time `json:"connectedAt"`
}

// normalized returns a with its time in UTC (see utc).
func (a PlatformAccount) normalized() PlatformAccount {
	a.ConnectedAt = utc(a.ConnectedAt)
	return a
}

// ConnectedApp is one element of data.json's connectedApps: an OAuth client
// the user granted access to.
type ConnectedApp struct {
	// Name is the client's display name.
	Name string `json:"name"`
	// Scopes are the scopes the user consented to.
	Scopes []string `json:"scopes"`
	// IsFirstParty marks clients operated by the service itself, which skip consent.
	IsFirstParty bool `json:"isFirstParty"`
	// ConsentedAt is when consent was given.
	ConsentedAt time.Time `json:"consentedAt"`
}

// normalized returns a with its time in UTC and an empty scope list for none.
func (a ConnectedApp) normalized() ConnectedApp {
	a.Scopes, a.ConsentedAt = nonNil(a.Scopes), utc(a.ConsentedAt)
	return a
}

// OwnedApp is one element of data.json's ownedApps: an OAuth client the user
// registered. The client secret has no field so it cannot be exported.
type OwnedApp struct {
	// ID is the client id.
	ID string `json:"id"`
	// Name is the client's display name.
	Name string `json:"name"`
	// ClientType is "confidential" or "public".
	ClientType string `json:"clientType"`
	// RedirectURIs are the registered redirect URIs.
	RedirectURIs []string `json:"redirectUris"`
	// AllowedScopes are the scopes the client may request.
	AllowedScopes []string `json:"allowedScopes"`
	// IsActive reports whether the client can be used.
	IsActive bool `json:"isActive"`
	// CreatedAt is when the client was registered.
	CreatedAt time.Time `json:"createdAt"`
}

// normalized returns a with its time in UTC and empty lists for none.
func (a OwnedApp) normalized() OwnedApp {
	a.RedirectURIs, a.AllowedScopes, a.CreatedAt = nonNil(a.RedirectURIs), nonNil(a.AllowedScopes), utc(a.CreatedAt)
	return a
}

// APIKey is one element of data.json's apiKeys. It has no field for the key
// itself; KeyPrefix is cut to its first 12 characters when written.
type APIKey struct {
	// Name is the label the user gave the key.
	Name string `json:"name"`
	// KeyPrefix is the short, non-secret start of the key that identifies it.
	KeyPrefix string `json:"keyPrefix"`
	// Scopes are the scopes granted to the key.
	Scopes []string `json:"scopes"`
	// IsActive reports whether the key is usable.
	IsActive bool `json:"isActive"`
	// ExpiresAt is when the key expires, nil if never.
	ExpiresAt *time.Time `json:"expiresAt"`
	// LastUsedAt is the key's last use, nil if never used.
	LastUsedAt *time.Time `json:"lastUsedAt"`
	// CreatedAt is when the key was created.
	CreatedAt time.Time `json:"createdAt"`
}

// normalized returns k with its prefix capped, its times in UTC and an
// empty scope list for none.
func (k APIKey) normalized() APIKey {
	k.KeyPrefix, k.Scopes = capPrefix(k.KeyPrefix), nonNil(k.Scopes)
	k.ExpiresAt, k.LastUsedAt, k.CreatedAt = utcPtr(k.ExpiresAt), utcPtr(k.LastUsedAt), utc(k.CreatedAt)
	return k
}

// TwoFactorAuth is data.json's twoFactorAuth object. The TOTP secret and the
// backup codes are deliberately absent.
type TwoFactorAuth struct {
	// Enabled reports whether two-factor authentication is on.
	Enabled bool `json:"enabled"`
	// EnabledAt is when it was enabled, nil when it is off.
	EnabledAt *time.Time `json:"enabledAt"`
	// BackupCodesRemaining counts the unused backup codes.
	BackupCodesRemaining int `json:"backupCodesRemaining"`
}

// DeletionStatus is data.json's deletionStatus object, the same facts the
// admin deletion-status endpoint reports.
type DeletionStatus struct {
	// IsScheduledForDeletion reports a pending deletion within the grace period.
	IsScheduledForDeletion bool `json:"isScheduledForDeletion"`
	// ScheduledDeletionAt is when the pending deletion takes effect, nil if none.
	ScheduledDeletionAt *time.Time `json:"scheduledDeletionAt"`
	// IsDeleted reports a soft-deleted account.
	IsDeleted bool `json:"isDeleted"`
	// DeletedAt is when the account was deleted, nil if it is not.
	DeletedAt *time.Time `json:"deletedAt"`
}

// ExportLog is one element of data.json's exportLogs: an earlier export.
type ExportLog struct {
	// ExportedAt is when that export was made.
	ExportedAt time.Time `json:"exportedAt"`
	// Format is the export format recorded for it, such as "zip".
	Format string `json:"format"`
}

// normalized returns l with its time in UTC (see utc).
func (l ExportLog) normalized() ExportLog {
	l.ExportedAt = utc(l.ExportedAt)
	return l
}

// Session is one element of data.json's sessions.
type Session struct {
	// ID is the session id (not the session token, which is a secret).
	ID string `json:"id"`
	// IPAddress is the raw address the session was created from; it is masked
	// whenever it is marshalled or printed.
	IPAddress IPAddress `json:"ipAddress"`
	// DeviceType is desktop, mobile or tablet.
	DeviceType string `json:"deviceType"`
	// BrowserName is the browser detected from the user agent.
	BrowserName string `json:"browserName"`
	// OSName is the operating system detected from the user agent.
	OSName string `json:"osName"`
	// Provider is the slug of the platform used to log in.
	Provider string `json:"provider"`
	// ProviderName is that platform's display name.
	ProviderName string `json:"providerName"`
	// CreatedAt is when the session started.
	CreatedAt time.Time `json:"createdAt"`
	// ExpiresAt is when the session ends.
	ExpiresAt time.Time `json:"expiresAt"`
	// LastActivityAt is the session's last request.
	LastActivityAt time.Time `json:"lastActivityAt"`
}

// normalized returns s with its times in UTC (see utc).
func (s Session) normalized() Session {
	s.CreatedAt, s.ExpiresAt, s.LastActivityAt = utc(s.CreatedAt), utc(s.ExpiresAt), utc(s.LastActivityAt)
	return s
}

// IPAddress holds a raw IP address as stored by the service. It exists so that
// masking cannot be forgotten: its JSON, text and fmt forms are all [MaskIP]
// of the raw value, so the raw address only comes out through an explicit
// string(ip) conversion, which this package never writes to the archive.
type IPAddress string

// String returns the masked address, so printing an IPAddress (%v, %s) never
// shows the raw value.
func (ip IPAddress) String() string { return MaskIP(string(ip)) }

// MarshalText returns the masked address; encoding/json and other text-based
// encoders use it, so the raw value never reaches their output.
func (ip IPAddress) MarshalText() ([]byte, error) { return []byte(MaskIP(string(ip))), nil }

// wire is Data without its methods, so MarshalJSON can use the default
// encoding of the normalized value without recursing into itself.
type wire Data

// MarshalJSON encodes d in the data.json layout (see [Data]). It leaves HTML
// characters unescaped and so lets the calling encoder decide: json.Marshal
// escapes them, while Write keeps redirect URIs with & readable, because
// data.json is a file for people and tools, not a web page.
func (d Data) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(wire(d.normalized())); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// normalized returns a copy of d ready to render: times in UTC to the second,
// nil lists replaced by empty ones, format and version set, and key prefixes
// capped. It never modifies the caller's slices or pointed-to times.
func (d Data) normalized() Data {
	d.ExportInfo.ExportedAt = utc(d.ExportInfo.ExportedAt)
	d.ExportInfo.Format = ExportFormat
	d.ExportInfo.Version = FormatVersion

	d.User.CreatedAt = utc(d.User.CreatedAt)
	d.User.LastLoginAt = utcPtr(d.User.LastLoginAt)

	d.PlatformAccounts = mapEach(d.PlatformAccounts, PlatformAccount.normalized)
	d.ConnectedApps = mapEach(d.ConnectedApps, ConnectedApp.normalized)
	d.OwnedApps = mapEach(d.OwnedApps, OwnedApp.normalized)
	d.APIKeys = mapEach(d.APIKeys, APIKey.normalized)
	d.Roles = nonNil(d.Roles)

	d.TwoFactorAuth.EnabledAt = utcPtr(d.TwoFactorAuth.EnabledAt)
	d.DeletionStatus.ScheduledDeletionAt = utcPtr(d.DeletionStatus.ScheduledDeletionAt)
	d.DeletionStatus.DeletedAt = utcPtr(d.DeletionStatus.DeletedAt)

	d.ExportLogs = mapEach(d.ExportLogs, ExportLog.normalized)
	d.Sessions = mapEach(d.Sessions, Session.normalized)
	d.Passkeys = mapEach(d.Passkeys, Passkey.normalized)
	return d
}

// utc drops sub-second precision as well as the zone: the archive promises
// plain RFC 3339 UTC timestamps, and nobody needs nanoseconds in their export.
func utc(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// utcPtr is utc for optional times; it allocates a new value so the caller's
// time is left untouched.
func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := utc(*t)
	return &u
}

// mapEach returns f applied to every element in a new, never-nil slice.
func mapEach[T any](in []T, f func(T) T) []T {
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// nonNil turns a nil list into an empty one so it encodes as [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// capPrefix keeps at most maxKeyPrefixRunes characters and marks a cut with
// an ellipsis, the same way the API shortens key prefixes.
func capPrefix(p string) string {
	if utf8.RuneCountInString(p) <= maxKeyPrefixRunes {
		return p
	}
	return string([]rune(p)[:maxKeyPrefixRunes]) + "…"
}
