// Package webhooks tells other systems what happened in hmid: operators
// register endpoints (a URL and the audit event types it wants), and every
// matching audit event is POSTed to them as a signed message following the
// Standard Webhooks specification (https://www.standardwebhooks.com/), so
// receivers verify it with that specification's libraries.
//
// The message is queued in the transaction that writes the audit event
// (audit.Writer calls Forward), one delivery row per endpoint, so it exists
// exactly when the event committed and survives a crash. A Worker sends
// the deliveries after commit through package outbox, the mechanism
// back-channel logout uses too: claimed by one instance, retried with
// exponential backoff and jitter for about a day, after which the endpoint
// is turned off and the console says so.
//
// Which event types some enabled endpoint wants is kept in memory
// (subscriptions), so writing an event nobody subscribed to costs no
// statement. The set is reloaded when this process changes an endpoint and,
// on PostgreSQL, when the shared counter webhook_state.version moved
// (another instance changed one), which Watch polls every second.
//
// The URLs are the operators' choice, but a webhook is still a request to a
// URL someone typed: it goes through package outbound (internal addresses
// refused unless HMID_OUTBOUND_ALLOW_CIDRS allows them, no redirects, short
// timeouts), and plain http only with HMID_WEBHOOKS_ALLOW_HTTP.
package webhooks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/outbound"
	"hmid/internal/secretbox"
)

// Limits of an endpoint's fields.
const (
	MaxDescription = 500
	// RotationOverlap is how long the previous secret signs alongside the
	// new one after a rotation, so receivers can switch without losing a
	// message.
	RotationOverlap = 24 * time.Hour
)

// TestEventType is the type of the message "send a test event" sends; it
// is no audit event and goes only to the endpoint it was asked for.
const TestEventType = "webhook_test"

// Service manages endpoints and queues messages.
type Service struct {
	DB    *db.DB
	Clock clock.Clock
	Box   *secretbox.Box
	Audit *audit.Writer
	Log   *slog.Logger
	// Outbound checks URLs when they are registered (the worker's client
	// checks them again when it dials).
	Outbound outbound.Policy
	// AllowHTTP lets endpoints use plain http (HMID_WEBHOOKS_ALLOW_HTTP);
	// otherwise only https is accepted.
	AllowHTTP bool
	// Kick asks the worker for a pass (set by Worker); nil before a worker runs.
	Kick func()

	subs subscriptions
}

// Endpoint is a registered receiver as the API shows it.
type Endpoint struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Description string   `json:"description"`
	EventTypes  []string `json:"event_types"`
	Enabled     bool     `json:"enabled"`
	// DisabledReason says why hmid turned the endpoint off, "" otherwise.
	DisabledReason string     `json:"disabled_reason"`
	DisabledAt     *time.Time `json:"disabled_at"`
	// PreviousSecretExpiresAt is when the secret replaced by the last
	// rotation stops signing; nil when none signs alongside.
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at"`
	CreatedAt               time.Time  `json:"created_at"`
	UpdatedAt               time.Time  `json:"updated_at"`
	// Secret is set only in the answer that created it (creation, rotation).
	Secret string `json:"secret,omitempty"`
}

// Input is a creation or a change (PATCH: absent fields stay).
type Input struct {
	URL         httpx.Opt[string]   `json:"url"`
	Description httpx.Opt[string]   `json:"description"`
	EventTypes  httpx.Opt[[]string] `json:"event_types"`
	Enabled     httpx.Opt[bool]     `json:"enabled"`
}

// EventTypes are the types an endpoint may subscribe to: every audit event
// type.
func EventTypes() []string { return audit.EventTypes }

const endpointCols = `id, url, description, event_types, enabled, disabled_reason, disabled_at, previous_secret_expires_at, created_at, updated_at`

func scanEndpoint(row db.Scanner) (Endpoint, error) {
	var (
		e                  Endpoint
		types              string
		disabled, prevExp  sql.NullInt64
		created, updatedAt int64
	)
	err := row.Scan(&e.ID, &e.URL, &e.Description, &types, &e.Enabled, &e.DisabledReason, &disabled, &prevExp, &created, &updatedAt)
	if err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(types), &e.EventTypes); err != nil {
		return e, err
	}
	e.DisabledAt, e.PreviousSecretExpiresAt = tsPtr(disabled), tsPtr(prevExp)
	e.CreatedAt, e.UpdatedAt = db.FromTS(created), db.FromTS(updatedAt)
	return e, nil
}

func tsPtr(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := db.FromTS(n.Int64)
	return &t
}

// sealAD binds a sealed secret to its endpoint, so a sealed value copied to
// another row does not open.
func sealAD(id string) []byte { return []byte("webhook:" + id) }

// checkURL accepts an absolute https URL (http only with AllowHTTP) that
// does not name an internal address the operator did not allow.
func (s *Service) checkURL(raw string) error {
	if err := s.Outbound.CheckURL(raw); err != nil {
		return apperr.Invalid("url: %s", err.Error())
	}
	if !strings.HasPrefix(strings.ToLower(raw), "https://") && !s.AllowHTTP {
		return apperr.Invalid("url must use https (plain http needs HMID_WEBHOOKS_ALLOW_HTTP)")
	}
	return nil
}

// checkTypes accepts a non-empty list of known event types, without repeats.
func checkTypes(types []string) ([]string, error) {
	if len(types) == 0 {
		return nil, apperr.Invalid("event_types must name at least one event type")
	}
	if len(types) > len(audit.EventTypes) {
		return nil, apperr.Invalid("event_types has more entries than there are event types")
	}
	out := make([]string, 0, len(types))
	for _, t := range types {
		if !audit.IsEventType(t) {
			return nil, apperr.Invalid("event_types: %q is not an event type (see GET /v1/webhooks/event-types)", t)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out, nil
}

// validate checks in and fills e with its values.
func (s *Service) validate(in Input, e *Endpoint) error {
	if in.URL.Set {
		if in.URL.Null {
			return apperr.Invalid("url must not be null")
		}
		if err := s.checkURL(in.URL.Value); err != nil {
			return apperr.OnField("url", err)
		}
		e.URL = in.URL.Value
	}
	if in.Description.Set {
		d := strings.TrimSpace(in.Description.Value)
		if err := httpx.CheckLen("description", d, MaxDescription); err != nil {
			return apperr.OnField("description", err)
		}
		e.Description = d
	}
	if in.EventTypes.Set {
		types, err := checkTypes(in.EventTypes.Value)
		if err != nil {
			return apperr.OnField("event_types", err)
		}
		e.EventTypes = types
	}
	if in.Enabled.Set {
		if in.Enabled.Null {
			return apperr.Invalid("enabled must be true or false")
		}
		e.Enabled = in.Enabled.Value
	}
	return nil
}

// Create registers an endpoint; the answer carries its secret, shown this once.
func (s *Service) Create(ctx context.Context, p *authn.Principal, from audit.Event, in Input) (Endpoint, error) {
	if !in.URL.Set {
		return Endpoint{}, apperr.OnField("url", apperr.Invalid("url is required"))
	}
	if !in.EventTypes.Set {
		return Endpoint{}, apperr.OnField("event_types", apperr.Invalid("event_types is required"))
	}
	e := Endpoint{Enabled: true}
	if err := s.validate(in, &e); err != nil {
		return Endpoint{}, err
	}
	secret, err := NewSecret()
	if err != nil {
		return Endpoint{}, err
	}
	e.ID = db.NewID()
	sealed, err := s.Box.Seal([]byte(secret), sealAD(e.ID))
	if err != nil {
		return Endpoint{}, err
	}
	now := db.FromTS(db.TS(s.Clock.Now()))
	e.CreatedAt, e.UpdatedAt = now, now
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_endpoints (id, url, description, event_types, enabled, secret, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`, e.ID, e.URL, e.Description, db.JSON(e.EventTypes), e.Enabled, sealed, db.TS(now)); err != nil {
			return err
		}
		return s.changed(ctx, tx, p, from, audit.WebhookCreated, e)
	})
	if err != nil {
		return Endpoint{}, err
	}
	e.Secret = secret
	return e, nil
}

// changed advances the shared subscription counter and writes the audit
// event of a change to e by p, in the change's transaction; from carries
// the request's address and user agent (audit.FromRequest).
func (s *Service) changed(ctx context.Context, tx *db.Tx, p *authn.Principal, from audit.Event, eventType string, e Endpoint) error {
	if _, err := tx.ExecContext(ctx, `UPDATE webhook_state SET version = version + 1 WHERE id = 1`); err != nil {
		return err
	}
	ev := from
	ev.EventType, ev.ResourceType, ev.ResourceID, ev.Description = eventType, "webhook", e.ID, "Webhook endpoint "+e.URL
	ev.Metadata = map[string]any{"url": e.URL, "event_types": e.EventTypes, "enabled": e.Enabled}
	if p != nil {
		ev.ActorID, ev.UserID = p.UserID, p.UserID
	}
	_, err := s.Audit.Record(ctx, tx, ev)
	return err
}

// List returns one page of endpoints, oldest first, and how many there are.
func (s *Service) List(ctx context.Context, pg httpx.Page) ([]Endpoint, int, error) {
	var total int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_endpoints`).Scan(&total); err != nil {
		return nil, 0, err
	}
	out, err := db.All(ctx, s.DB, scanEndpoint, `SELECT `+endpointCols+` FROM webhook_endpoints ORDER BY created_at, id LIMIT $1 OFFSET $2`, pg.Limit, pg.Offset())
	return out, total, err
}

// CountTurnedOff returns how many endpoints hmid turned off because their
// deliveries kept failing (and no operator turned on again).
func (s *Service) CountTurnedOff(ctx context.Context) (int, error) {
	var n int
	err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM webhook_endpoints WHERE NOT enabled AND disabled_reason <> ''`).Scan(&n)
	return n, err
}

// Get returns one endpoint.
func (s *Service) Get(ctx context.Context, id string) (Endpoint, error) {
	return getEndpoint(ctx, s.DB, id)
}

func getEndpoint(ctx context.Context, q db.Querier, id string) (Endpoint, error) {
	e, err := scanEndpoint(q.QueryRowContext(ctx, `SELECT `+endpointCols+` FROM webhook_endpoints WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return e, apperr.NotFoundf("webhook endpoint not found")
	}
	return e, err
}

// Update changes the fields in sets. Turning an endpoint on clears the
// reason hmid turned it off.
func (s *Service) Update(ctx context.Context, p *authn.Principal, from audit.Event, id string, in Input) (Endpoint, error) {
	if !in.URL.Set && !in.Description.Set && !in.EventTypes.Set && !in.Enabled.Set {
		return Endpoint{}, apperr.Invalid("give at least one of url, description, event_types, enabled")
	}
	var e Endpoint
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		var err error
		if e, err = getEndpoint(ctx, tx, id); err != nil {
			return err
		}
		if err := s.validate(in, &e); err != nil {
			return err
		}
		now := db.FromTS(db.TS(s.Clock.Now()))
		e.UpdatedAt = now
		if e.Enabled {
			e.DisabledReason, e.DisabledAt = "", nil
		}
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_endpoints SET url = $1, description = $2, event_types = $3, enabled = $4,
			disabled_reason = $5, disabled_at = $6, updated_at = $7 WHERE id = $8`,
			e.URL, e.Description, db.JSON(e.EventTypes), e.Enabled, e.DisabledReason, db.NullTS(e.DisabledAt), db.TS(now), id); err != nil {
			return err
		}
		return s.changed(ctx, tx, p, from, audit.WebhookUpdated, e)
	})
	return e, err
}

// Delete removes an endpoint with its deliveries.
func (s *Service) Delete(ctx context.Context, p *authn.Principal, from audit.Event, id string) error {
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		e, err := getEndpoint(ctx, tx, id)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_endpoints WHERE id = $1`, id); err != nil {
			return err
		}
		return s.changed(ctx, tx, p, from, audit.WebhookDeleted, e)
	})
}

// Rotate gives the endpoint a new secret, returned this once; the current
// one keeps signing alongside for RotationOverlap (a secret still in its
// overlap from an earlier rotation stops at once: two signatures at most).
func (s *Service) Rotate(ctx context.Context, p *authn.Principal, from audit.Event, id string) (Endpoint, error) {
	secret, err := NewSecret()
	if err != nil {
		return Endpoint{}, err
	}
	sealed, err := s.Box.Seal([]byte(secret), sealAD(id))
	if err != nil {
		return Endpoint{}, err
	}
	var e Endpoint
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if e, err = getEndpoint(ctx, tx, id); err != nil {
			return err
		}
		now := db.FromTS(db.TS(s.Clock.Now()))
		until := now.Add(RotationOverlap)
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = $1,
			secret = $2, updated_at = $3 WHERE id = $4`, db.TS(until), sealed, db.TS(now), id); err != nil {
			return err
		}
		e.PreviousSecretExpiresAt, e.UpdatedAt = &until, now
		return s.changed(ctx, tx, p, from, audit.WebhookSecretRotated, e)
	})
	if err != nil {
		return Endpoint{}, err
	}
	e.Secret = secret
	return e, nil
}

// secrets returns the secrets that sign a message to the endpoint at now:
// the current one, and the previous one during its overlap.
func (s *Service) secrets(id, sealed string, prev sql.NullString, prevUntil sql.NullInt64, now time.Time) ([]string, error) {
	cur, err := s.Box.Open(sealed, sealAD(id))
	if err != nil {
		return nil, err
	}
	out := []string{string(cur)}
	if prev.Valid && prevUntil.Valid && now.Before(db.FromTS(prevUntil.Int64)) {
		// A previous secret that does not open (the service key changed
		// before the rotation that replaced it) is left out: the current
		// one signs.
		if old, err := s.Box.Open(prev.String, sealAD(id)); err == nil {
			out = append(out, string(old))
		}
	}
	return out, nil
}
