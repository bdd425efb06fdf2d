// Package audit records and serves the audit log (spec 2, Audit log).
//
// Writer is the one place events are stored; every area calls it where the
// operation happens, inside the same transaction when there is one, so an
// event exists exactly when its operation committed.
package audit

import (
	"context"
	"fmt"
	"net/http"

	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// Event types of spec 2 (Events).
const (
	Login                   = "login"
	LoginFailed             = "login_failed"
	Logout                  = "logout"
	SessionCreated          = "session_created"
	SessionRevoked          = "session_revoked"
	TwoFAEnabled            = "2fa_enabled"
	TwoFADisabled           = "2fa_disabled"
	TwoFAVerified           = "2fa_verified"
	TwoFABackupRegenerated  = "2fa_backup_codes_regenerated"
	PasswordChanged         = "password_changed"
	PasswordResetRequested  = "password_reset_requested"
	UserCreated             = "user_created"
	UserUpdated             = "user_updated"
	UserDeleted             = "user_deleted"
	AccountLinked           = "account_linked"
	AccountUnlinked         = "account_unlinked"
	AccountReconnected      = "account_reconnected"
	DataExported            = "data_exported"
	ClientCreated           = "client_created"
	ClientUpdated           = "client_updated"
	ClientSecretRegenerated = "client_secret_regenerated"
	ClientDeleted           = "client_deleted"
	ConsentGranted          = "consent_granted"
	ConsentRevoked          = "consent_revoked"
	APIKeyCreated           = "api_key_created"
	APIKeyRevoked           = "api_key_revoked"
	BotCommandExecuted      = "bot_command_executed"
	BotGuildConfigured      = "bot_guild_configured"
)

// Event types hmid writes beyond the spec's list, which names none for bans
// or platform settings.
const (
	UserBanned      = "user_banned"
	UserUnbanned    = "user_unbanned"
	PlatformUpdated = "platform_updated"
	// RefreshTokenReused: a spent refresh token was presented again; a
	// success when the reuse interval let it through, a failure when its
	// family was revoked.
	RefreshTokenReused = "refresh_token_reused"
	// Webhook endpoints (package webhooks): created, changed, deleted, their
	// signing secret rotated, and turned off by hmid after failing for a day.
	WebhookCreated       = "webhook_created"
	WebhookUpdated       = "webhook_updated"
	WebhookDeleted       = "webhook_deleted"
	WebhookSecretRotated = "webhook_secret_rotated"
	WebhookDisabled      = "webhook_disabled"
	// PasskeyAdded, PasskeyRemoved and PasskeyLogin record passkeys
	// (issue 20): registered, removed (by the user or an operator), and a
	// sign-in or second factor with one (a failure for a refused assertion).
	PasskeyAdded   = "passkey_added"
	PasskeyRemoved = "passkey_removed"
	PasskeyLogin   = "passkey_login"
	// SystemConfigUpdated: an operator changed a system-config entry (a
	// policy among them); metadata holds key, old_value and new_value.
	SystemConfigUpdated = "system_config_updated"
	// TwoFABackupCodeUsed: a backup code was checked instead of a TOTP code
	// (2fa_verified is the TOTP's), so the owner can tell that a code from
	// their printed list was used; status failure for a rejected one.
	TwoFABackupCodeUsed = "2fa_backup_code_used"
)

// Event is one audit record to write.
type Event struct {
	UserID        string // "" for none
	EventType     string
	ResourceType  string
	ResourceID    string
	ActorID       string // when someone else acted on the user
	IPAddress     string
	UserAgent     string
	Description   string
	Metadata      map[string]any
	Failed        bool // status "failure" instead of "success"
	ErrorMessage  string
	SourceService string // default "api"
}

// sourceKey is the context key of the audit source of a request.
type sourceKey struct{}

// WithSource returns ctx carrying source as the source_service of the
// events recorded in it that name none: the pages set it ("id" for the
// website, "backend" for the admin console), so an area called from a page
// records where the person acted without every call passing it.
func WithSource(ctx context.Context, source string) context.Context {
	return context.WithValue(ctx, sourceKey{}, source)
}

// SourceFrom is the source_service ctx carries, "api" when none.
func SourceFrom(ctx context.Context) string {
	if s, ok := ctx.Value(sourceKey{}).(string); ok && s != "" {
		return s
	}
	return "api"
}

// Locator resolves an IP address to a place (geoip.Resolver implements it).
type Locator interface {
	Lookup(ip string) (countryCode, countryName, city, region string)
}

// Notifier is told about each stored event (the real-time channel's audit.me topic).
type Notifier interface {
	AuditRecorded(ctx context.Context, userID string, event map[string]any)
}

// Forwarder hands stored events on to systems outside hmid (package
// webhooks). Subscribed must cost no statement (it answers from memory), so
// an event nobody subscribed to is written as it was before webhooks;
// Forward queues the event in the transaction that stores it.
type Forwarder interface {
	Subscribed(ctx context.Context, eventType string) bool
	Forward(ctx context.Context, q db.Querier, e Entry) error
}

// Writer stores audit events.
type Writer struct {
	DB      *db.DB
	Clock   clock.Clock
	Locate  func(ip string) (countryCode, countryName, city, region string) // optional
	Notify  Notifier                                                        // optional
	Forward Forwarder                                                       // optional
}

// FromRequest fills IP address and user agent of e from the request.
func FromRequest(r *http.Request, e Event) Event {
	if e.IPAddress == "" {
		e.IPAddress = httpx.ClientIP(r.Context())
	}
	if e.UserAgent == "" {
		e.UserAgent = r.UserAgent()
	}
	return e
}

// Record stores e through q (the DB, or the transaction of the operation).
// It returns the new event id. The event and its daily count (see
// audit_event_counts) are written together: in q's transaction, or in one of
// their own when q is the DB itself.
func (w *Writer) Record(ctx context.Context, q db.Querier, e Event) (string, error) {
	// EventTypes is the one list of types: what the event_type filter and the
	// internal endpoint accept is exactly what can be stored, so a new type
	// must be added there before any operation can write it.
	if !IsEventType(e.EventType) {
		return "", fmt.Errorf("audit: event type %q is not in audit.EventTypes", e.EventType)
	}
	if d, ok := q.(*db.DB); ok {
		var id string
		err := d.Tx(ctx, func(tx *db.Tx) error {
			var err error
			id, err = w.Record(ctx, tx, e)
			return err
		})
		return id, err
	}
	id := db.NewID()
	status := "success"
	if e.Failed {
		status = "failure"
	}
	source := e.SourceService
	if source == "" {
		source = SourceFrom(ctx)
	}
	meta := e.Metadata
	if meta == nil {
		meta = map[string]any{}
	}
	var cc, cn, city, region string
	if w.Locate != nil && e.IPAddress != "" {
		cc, cn, city, region = w.Locate(e.IPAddress)
	}
	now := w.Clock.Now()
	_, err := q.ExecContext(ctx, `INSERT INTO audit_events (id, user_id, event_type, resource_type, resource_id, actor_id,
		ip_address, user_agent, description, metadata, status, error_message, country_code, country_name, city, region,
		source_service, created_at, is_reported)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, FALSE)`,
		id, nullable(e.UserID), e.EventType, nullable(e.ResourceType), nullable(e.ResourceID), nullable(e.ActorID),
		nullable(e.IPAddress), nullable(e.UserAgent), nullable(e.Description), db.JSON(meta), status, nullable(e.ErrorMessage),
		nullable(cc), nullable(cn), nullable(city), nullable(region), source, db.TS(now))
	if err != nil {
		return "", err
	}
	if err := countDelta(ctx, q, db.TS(now), e.EventType, status, source, e.ResourceType, false, 1); err != nil {
		return "", err
	}
	if w.Forward != nil && w.Forward.Subscribed(ctx, e.EventType) {
		entry := Entry{ID: id, UserID: optional(e.UserID), EventType: e.EventType, ResourceType: optional(e.ResourceType),
			ResourceID: optional(e.ResourceID), ActorID: optional(e.ActorID), IPAddress: optional(e.IPAddress),
			UserAgent: optional(e.UserAgent), Description: optional(e.Description), Metadata: meta, Status: status,
			ErrorMessage: optional(e.ErrorMessage), CountryCode: optional(cc), CountryName: optional(cn), City: optional(city),
			Region: optional(region), SourceService: source, CreatedAt: db.FromTS(db.TS(now))}
		if err := w.Forward.Forward(ctx, q, entry); err != nil {
			return "", fmt.Errorf("audit: queue webhooks: %w", err)
		}
	}
	if w.Notify != nil && e.UserID != "" {
		notify := func() {
			w.Notify.AuditRecorded(ctx, e.UserID, map[string]any{
				"id": id, "event_type": e.EventType, "resource_type": e.ResourceType, "resource_id": e.ResourceID,
				"status": status, "created_at": now, "metadata": meta,
			})
		}
		// Inside a transaction the event exists only once it commits: tell
		// subscribers then, and never about an operation that rolled back.
		if tx, ok := q.(*db.Tx); ok && w.DB != nil {
			tx.AfterCommit(notify)
		} else {
			notify()
		}
	}
	return id, nil
}

// optional is s as an Entry's optional text: nil when empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
