package audit

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/token"
)

// AppKeyHeader carries a system API key on the internal audit endpoint
// (spec 1, Authentication 8).
const AppKeyHeader = "X-ID-App-Key"

// internalBody is the body of POST /v1/internal/audit.
type internalBody struct {
	UserID        *string        `json:"user_id"`
	EventType     string         `json:"event_type"`
	ResourceType  string         `json:"resource_type"`
	ResourceID    string         `json:"resource_id"`
	Status        string         `json:"status"`
	SourceService string         `json:"source_service"`
	Metadata      map[string]any `json:"metadata"`
	ActorID       string         `json:"actor_id"`
	Description   string         `json:"description"`
	ErrorMessage  string         `json:"error_message"`
	IPAddress     string         `json:"ip_address"`
	UserAgent     string         `json:"user_agent"`
}

// Internal serves POST /v1/internal/audit: other services of the platform
// (the identity web app, the dashboards, the bots) record events. The caller
// is a system API key sent in X-ID-App-Key, or a bearer principal holding
// audit:write; anything else is 401, as the spec states for this endpoint.
//
// user_id must name an existing user when source_service is api; the other
// sources may send an external id (a chat-platform user) or null. actor_id is
// always checked when given. ip_address and user_agent are those of the end
// user as the calling service saw them; the calling service's own address is
// never recorded in their place.
func (h *Handler) Internal(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := h.authorizeInternal(ctx, r); err != nil {
		httpx.Error(w, r, err)
		return
	}
	var b internalBody
	if !httpx.Bind(w, r, &b) {
		return
	}
	e, err := h.validateInternal(ctx, b)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	var entry Entry
	err = h.DB.Tx(ctx, func(tx *db.Tx) error {
		id, err := h.Writer.Record(ctx, tx, e)
		if err != nil {
			return err
		}
		entry, err = Get(ctx, tx, id)
		return err
	})
	httpx.RespondJSON(w, r, http.StatusCreated, entry, err)
}

func (h *Handler) authorizeInternal(ctx context.Context, r *http.Request) error {
	if key := r.Header.Get(AppKeyHeader); key != "" {
		var n int
		err := h.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_keys WHERE key_hash = $1 AND is_system = TRUE AND is_active = TRUE
			AND (expires_at IS NULL OR expires_at > $2)`, token.Hash(key), db.TS(h.Clock.Now())).Scan(&n)
		if err != nil {
			return err
		}
		if n == 0 {
			return apperr.Unauthorizedf("the %s header does not hold an active system API key", AppKeyHeader)
		}
		return nil
	}
	if p := authn.From(ctx); p != nil && p.Can("audit:write") {
		return nil
	}
	return apperr.Unauthorizedf("send a system API key in %s, or a bearer token with the audit:write permission", AppKeyHeader)
}

func (h *Handler) validateInternal(ctx context.Context, b internalBody) (Event, error) {
	e := Event{
		EventType: b.EventType, ResourceType: strings.TrimSpace(b.ResourceType), ResourceID: b.ResourceID,
		ActorID: b.ActorID, Description: b.Description, Metadata: b.Metadata, ErrorMessage: b.ErrorMessage,
		IPAddress: b.IPAddress, UserAgent: b.UserAgent, SourceService: b.SourceService,
	}
	if !IsEventType(b.EventType) {
		return e, apperr.Invalid("event_type is required and must be a known event type")
	}
	switch b.Status {
	case StatusSuccess:
	case StatusFailure:
		e.Failed = true
	default:
		return e, apperr.Invalid("status is required and must be success or failure")
	}
	if !slices.Contains(SourceServices, b.SourceService) {
		return e, apperr.Invalid("source_service is required and must be one of %s", strings.Join(SourceServices, ", "))
	}
	if b.IPAddress != "" {
		a, err := netip.ParseAddr(b.IPAddress)
		if err != nil {
			return e, apperr.Invalid("ip_address is not an IP address")
		}
		e.IPAddress = a.Unmap().String()
	}
	if b.UserID != nil {
		e.UserID = *b.UserID
	}
	if b.SourceService == "api" {
		if e.UserID == "" {
			return e, apperr.Invalid("user_id is required when source_service is api")
		}
		if err := userExists(ctx, h.DB, e.UserID, "user_id"); err != nil {
			return e, err
		}
	}
	if e.ActorID != "" {
		if err := userExists(ctx, h.DB, e.ActorID, "actor_id"); err != nil {
			return e, err
		}
	}
	return e, nil
}

func userExists(ctx context.Context, q db.Querier, id, field string) error {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM users WHERE id = $1`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return apperr.Invalid("%s %q is not a known user", field, id)
	}
	return err
}
