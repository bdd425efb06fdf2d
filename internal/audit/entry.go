package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"time"

	"hmid/internal/db"
)

// Statuses of an audit event.
const (
	StatusSuccess = "success"
	StatusFailure = "failure"
)

// EventTypes lists every event type hmid stores: those of spec 2 (Events)
// and the ones hmid writes beyond them. It is the one list the event_type
// filter, the internal endpoint and Writer.Record accept.
var EventTypes = []string{
	Login, LoginFailed, Logout, SessionCreated, SessionRevoked,
	TwoFAEnabled, TwoFADisabled, TwoFAVerified, TwoFABackupRegenerated,
	PasswordChanged, PasswordResetRequested,
	UserCreated, UserUpdated, UserDeleted,
	AccountLinked, AccountUnlinked, AccountReconnected,
	DataExported,
	ClientCreated, ClientUpdated, ClientSecretRegenerated, ClientDeleted,
	ConsentGranted, ConsentRevoked,
	APIKeyCreated, APIKeyRevoked,
	BotCommandExecuted, BotGuildConfigured,
	UserBanned, UserUnbanned, PlatformUpdated,
	RefreshTokenReused, SystemConfigUpdated, TwoFABackupCodeUsed,
	WebhookCreated, WebhookUpdated, WebhookDeleted, WebhookSecretRotated, WebhookDisabled,
	PasskeyAdded, PasskeyRemoved, PasskeyLogin,
}

// SourceServices lists the source_service values of spec 2 (Events).
var SourceServices = []string{"api", "id", "backend", "policies", "chat_platform_bot", "stream_platform_bot"}

// IsEventType reports whether s is in EventTypes.
func IsEventType(s string) bool { return slices.Contains(EventTypes, s) }

// Entry is a stored audit event as the API shows it (spec 2, Audit event).
// Optional text fields are null when unknown rather than "".
type Entry struct {
	ID            string         `json:"id"`
	UserID        *string        `json:"user_id"`
	EventType     string         `json:"event_type"`
	ResourceType  *string        `json:"resource_type"`
	ResourceID    *string        `json:"resource_id"`
	ActorID       *string        `json:"actor_id"`
	IPAddress     *string        `json:"ip_address"`
	UserAgent     *string        `json:"user_agent"`
	Description   *string        `json:"description"`
	Metadata      map[string]any `json:"metadata"`
	Status        string         `json:"status"`
	ErrorMessage  *string        `json:"error_message"`
	CountryCode   *string        `json:"country_code"`
	CountryName   *string        `json:"country_name"`
	City          *string        `json:"city"`
	Region        *string        `json:"region"`
	SourceService string         `json:"source_service"`
	CreatedAt     time.Time      `json:"created_at"`
	IsReported    bool           `json:"is_reported"`
}

const entryCols = `id, user_id, event_type, resource_type, resource_id, actor_id, ip_address, user_agent, description,
	metadata, status, error_message, country_code, country_name, city, region, source_service, created_at, is_reported`

func scanEntry(row db.Scanner) (Entry, error) {
	var (
		e                                  Entry
		user, rtype, rid, actor, ip, ua    sql.NullString
		desc, errMsg, cc, cn, city, region sql.NullString
		meta                               string
		created                            int64
	)
	err := row.Scan(&e.ID, &user, &e.EventType, &rtype, &rid, &actor, &ip, &ua, &desc,
		&meta, &e.Status, &errMsg, &cc, &cn, &city, &region, &e.SourceService, &created, &e.IsReported)
	if err != nil {
		return e, err
	}
	e.UserID, e.ResourceType, e.ResourceID, e.ActorID = db.StringPtr(user), db.StringPtr(rtype), db.StringPtr(rid), db.StringPtr(actor)
	e.IPAddress, e.UserAgent, e.Description, e.ErrorMessage = db.StringPtr(ip), db.StringPtr(ua), db.StringPtr(desc), db.StringPtr(errMsg)
	e.CountryCode, e.CountryName, e.City, e.Region = db.StringPtr(cc), db.StringPtr(cn), db.StringPtr(city), db.StringPtr(region)
	e.CreatedAt = db.FromTS(created)
	// Metadata is written only by Record as a JSON object; anything else
	// (a hand-edited row) is shown as an empty object rather than failing the list.
	if json.Unmarshal([]byte(meta), &e.Metadata) != nil || e.Metadata == nil {
		e.Metadata = map[string]any{}
	}
	return e, nil
}

// Get loads one event by id; apperr NotFound when there is none.
func Get(ctx context.Context, q db.Querier, id string) (Entry, error) {
	e, err := scanEntry(q.QueryRowContext(ctx, `SELECT `+entryCols+` FROM audit_events WHERE id = $1`, id))
	return e, db.NotFoundOr(err, "audit event")
}
