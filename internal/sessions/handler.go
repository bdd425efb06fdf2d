package sessions

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/token"
)

// MaxTTL bounds the lifetime a system caller may give a session.
const MaxTTL = 365 * 24 * time.Hour

// LogoutReasons are the reasons DELETE /v1/sessions/{token} accepts (spec 2, Sessions).
var LogoutReasons = []string{"user_initiated", "token_deleted", "session_expired", "revoked", "no_access"}

// Handler serves the session endpoints (spec 2, Sessions).
type Handler struct {
	S *Service
}

// Session is a session as its owner sees it.
type Session struct {
	ID             string    `json:"id"`
	IPAddress      string    `json:"ip_address"`
	UserAgent      string    `json:"user_agent"`
	DeviceType     string    `json:"device_type"`
	BrowserName    string    `json:"browser_name"`
	OSName         string    `json:"os_name"`
	Provider       string    `json:"provider"`
	ProviderName   string    `json:"provider_name"`
	LastActivityAt time.Time `json:"last_activity_at"`
	CreatedAt      time.Time `json:"created_at"`
	ExpiresAt      time.Time `json:"expires_at"`
	IsCurrent      bool      `json:"is_current"`
}

// List serves GET /v1/users/me/sessions: the caller's active (neither
// revoked nor expired) sessions, most recently used first.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) {
	p := authn.From(r.Context())
	out, err := h.S.List(r.Context(), p)
	httpx.RespondJSON(w, r, http.StatusOK, map[string]any{
		"sessions":           out,
		"current_session_id": p.SessionID,
		"_links":             httpx.Links{Self: httpx.SelfURL(r)},
	}, err)
}

// result is the {success, message} body of the self-service revocations.
type result struct {
	Success      bool   `json:"success"`
	RevokedCount *int64 `json:"revoked_count,omitempty"`
	Message      string `json:"message"`
}

// Revoke serves DELETE /v1/users/me/sessions/{session_id}. The current
// session cannot be revoked here (400 {success: false, message}: log out
// instead); another user's or an unknown session answers 404.
func (h *Handler) Revoke(w http.ResponseWriter, r *http.Request) {
	p := authn.From(r.Context())
	err := h.S.Revoke(r.Context(), p, chi.URLParam(r, "session_id"), audit.FromRequest(r, audit.Event{}))
	if errors.Is(err, ErrCurrent) {
		httpx.JSON(w, http.StatusBadRequest, result{Success: false, Message: err.Error()})
		return
	}
	httpx.RespondJSON(w, r, http.StatusOK, result{Success: true, Message: "session revoked"}, err)
}

// RevokeOthers serves DELETE /v1/users/me/sessions: every active session of
// the caller except the current one is revoked.
func (h *Handler) RevokeOthers(w http.ResponseWriter, r *http.Request) {
	n, err := h.S.RevokeOthers(r.Context(), authn.From(r.Context()), audit.FromRequest(r, audit.Event{}))
	httpx.RespondJSON(w, r, http.StatusOK, result{Success: true, RevokedCount: &n, Message: revokedMessage(n)}, err)
}

func revokedMessage(n int64) string {
	switch n {
	case 0:
		return "no other sessions were active"
	case 1:
		return "1 other session revoked"
	}
	return strconv.FormatInt(n, 10) + " other sessions revoked"
}

// Record is the internal session record of the system-key endpoints.
type Record struct {
	ID           string    `json:"id"`
	SessionToken string    `json:"sessionToken"`
	UserID       string    `json:"userId"`
	Expires      time.Time `json:"expires"`
	CreatedAt    time.Time `json:"created_at"`
}

// CreateInternal serves POST /v1/sessions (system key) with {userId,
// expires}: a session for an active user. expires is an RFC 3339 time in the
// future, at most MaxTTL ahead; without it the session lasts as the policy
// session.absolute_timeout_seconds says (DefaultTTL by default). A
// banned user gets no session (403), as login refuses them: a session that
// authentication would refuse anyway must not be handed out.
func (h *Handler) CreateInternal(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var b struct {
		UserID  string  `json:"userId"`
		Expires *string `json:"expires"`
	}
	if !httpx.Bind(w, r, &b) {
		return
	}
	if strings.TrimSpace(b.UserID) == "" {
		httpx.Error(w, r, apperr.Invalid("userId is required"))
		return
	}
	now := h.S.Clock.Now()
	expires := now.Add(h.S.Policy.Current().SessionAbsolute)
	if b.Expires != nil {
		t, err := time.Parse(time.RFC3339Nano, *b.Expires)
		if err != nil {
			httpx.Error(w, r, apperr.Invalid("expires must be an ISO 8601 date-time such as 2026-12-01T12:00:00Z"))
			return
		}
		if !t.After(now) || t.Sub(now) > MaxTTL {
			httpx.Error(w, r, apperr.Invalid("expires must be in the future and at most 365 days ahead"))
			return
		}
		expires = t.UTC()
	}
	var rec Record
	err := h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		var provider sql.NullString
		var banned bool
		err := tx.QueryRowContext(ctx, `SELECT u.last_login_provider, `+db.UserBannedSQL+`
			FROM users u WHERE u.id = $1 AND u.deleted_at IS NULL`, b.UserID, db.TS(now)).Scan(&provider, &banned)
		if errors.Is(err, sql.ErrNoRows) {
			return apperr.NotFoundf("user not found")
		}
		if err != nil {
			return err
		}
		if banned {
			return apperr.Forbiddenf("this user is banned")
		}
		c, err := Create(ctx, tx, now, New{UserID: b.UserID, Provider: provider.String, IPAddress: httpx.ClientIP(ctx),
			UserAgent: r.UserAgent(), ExpiresAt: expires})
		if err != nil {
			return err
		}
		rec = Record{ID: c.ID, SessionToken: c.Token, UserID: b.UserID, Expires: c.ExpiresAt, CreatedAt: c.CreatedAt}
		_, err = h.S.Audit.Record(ctx, tx, audit.FromRequest(r, audit.Event{
			UserID: b.UserID, EventType: audit.SessionCreated, ResourceType: "session", ResourceID: c.ID,
			SourceService: sourceOf(r), Description: "session created by a service",
			Metadata: map[string]any{"session_id": c.ID, "expires_at": c.ExpiresAt},
		}))
		return err
	})
	httpx.RespondJSON(w, r, http.StatusCreated, rec, err)
}

// lookup finds the active session of a token; the token in the answer is the
// one the caller sent (only its hash is stored).
func (h *Handler) lookup(ctx context.Context, q db.Querier, tok string) (Record, error) {
	if !token.HasShape(tok, token.PrefixSession) {
		return Record{}, apperr.NotFoundf("session not found")
	}
	var rec Record
	var exp, created int64
	err := q.QueryRowContext(ctx, `SELECT id, user_id, expires_at, created_at FROM sessions
		WHERE token_hash = $1 AND revoked_at IS NULL AND expires_at > $2`, token.Hash(tok), db.TS(h.S.Clock.Now())).
		Scan(&rec.ID, &rec.UserID, &exp, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Record{}, apperr.NotFoundf("session not found")
	}
	rec.SessionToken, rec.Expires, rec.CreatedAt = tok, db.FromTS(exp), db.FromTS(created)
	return rec, err
}

// GetInternal serves GET /v1/sessions/{token} (system key): the record of an
// active session; revoked, expired and unknown tokens answer 404.
func (h *Handler) GetInternal(w http.ResponseWriter, r *http.Request) {
	rec, err := h.lookup(r.Context(), h.S.DB, chi.URLParam(r, "token"))
	httpx.RespondJSON(w, r, http.StatusOK, rec, err)
}

// DeleteInternal serves DELETE /v1/sessions/{token}?reason=… (system key):
// the session is revoked and a logout audit event records the reason, the
// session id and the calling app (X-Source-Service).
func (h *Handler) DeleteInternal(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	reason := r.URL.Query().Get("reason")
	if reason == "" {
		reason = "user_initiated"
	}
	if !validReason(reason) {
		httpx.Error(w, r, apperr.Invalid("reason must be one of %s", strings.Join(LogoutReasons, ", ")))
		return
	}
	var app any
	if a := strings.TrimSpace(r.Header.Get("X-Source-Service")); a != "" {
		app = a
	}
	now := h.S.Clock.Now()
	err := h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		rec, err := h.lookup(ctx, tx, chi.URLParam(r, "token"))
		if err != nil {
			return err
		}
		if err := endOne(ctx, tx, h.S.Epoch, rec.UserID, rec.ID, now); err != nil {
			return err
		}
		_, err = h.S.Audit.Record(ctx, tx, audit.FromRequest(r, audit.Event{
			UserID: rec.UserID, EventType: audit.Logout, ResourceType: "session", ResourceID: rec.ID,
			SourceService: sourceOf(r), Description: "logged out (" + reason + ")",
			Metadata: map[string]any{"reason": reason, "session_id": rec.ID, "app": app},
		}))
		return err
	})
	httpx.RespondEmpty(w, r, err)
}

func validReason(s string) bool {
	for _, r := range LogoutReasons {
		if r == s {
			return true
		}
	}
	return false
}

// sourceOf maps X-Source-Service to a source_service value of spec 2
// (Events), "api" for anything else.
func sourceOf(r *http.Request) string {
	switch s := r.Header.Get("X-Source-Service"); s {
	case "api", "id", "backend", "policies", "chat_platform_bot", "stream_platform_bot":
		return s
	}
	return "api"
}
