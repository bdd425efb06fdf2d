package useradmin

import (
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/httpx"
)

// Source is the audit source_service of the operators' changes, through
// the API and the admin console alike: spec 2 (Events) names the
// operators' dashboard "backend".
const Source = "backend"

// Handler serves the REST routes of the operators' user management, under
// /v1/admin/users (extensions, in api/openapi.yaml).
type Handler struct {
	S *Service
}

// event is the audit event of a request.
func event(r *http.Request) audit.Event {
	return audit.FromRequest(r, audit.Event{SourceService: Source})
}

// Done is the answer of an action without a resource to show.
type Done struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// SignedOut is the answer of DELETE /v1/admin/users/{id}/sessions.
type SignedOut struct {
	Success      bool   `json:"success"`
	RevokedCount int64  `json:"revoked_count"`
	Message      string `json:"message"`
}

// Create is POST /v1/admin/users: 201 with the new user.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) {
	var in NewUser
	if !httpx.Bind(w, r, &in) {
		return
	}
	u, err := h.S.Create(r.Context(), authn.From(r.Context()), in, event(r))
	httpx.RespondAt(w, r, http.StatusCreated, u, "/v1/users/"+url.PathEscape(u.ID), err)
}

// Update is PATCH /v1/admin/users/{id}: username, email, locale.
func (h *Handler) Update(w http.ResponseWriter, r *http.Request) {
	var in Profile
	if !httpx.Bind(w, r, &in) {
		return
	}
	id := chi.URLParam(r, "id")
	u, err := h.S.SetProfile(r.Context(), authn.From(r.Context()), id, in, event(r))
	httpx.RespondAt(w, r, http.StatusOK, u, "/v1/users/"+url.PathEscape(id), err)
}

// SetPassword is POST /v1/admin/users/{id}/password with {password}.
func (h *Handler) SetPassword(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Password string `json:"password"`
	}
	if !httpx.Bind(w, r, &in) {
		return
	}
	err := h.S.SetPassword(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"), in.Password, event(r))
	httpx.RespondJSON(w, r, http.StatusOK, Done{Success: true, Message: "The password was set; the user was signed out everywhere."}, err)
}

// SendReset is POST /v1/admin/users/{id}/password-reset.
func (h *Handler) SendReset(w http.ResponseWriter, r *http.Request) {
	sent, err := h.S.SendReset(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"), event(r))
	httpx.RespondJSON(w, r, http.StatusOK, sent, err)
}

// MarkVerified is POST /v1/admin/users/{id}/email/verified.
func (h *Handler) MarkVerified(w http.ResponseWriter, r *http.Request) {
	err := h.S.MarkVerified(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"), event(r))
	httpx.RespondJSON(w, r, http.StatusOK, Done{Success: true, Message: "The email address is marked verified."}, err)
}

// ResendVerification is POST /v1/admin/users/{id}/email/verification.
func (h *Handler) ResendVerification(w http.ResponseWriter, r *http.Request) {
	sent, err := h.S.ResendVerification(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"), event(r))
	httpx.RespondJSON(w, r, http.StatusOK, sent, err)
}

// SignOut is DELETE /v1/admin/users/{id}/sessions.
func (h *Handler) SignOut(w http.ResponseWriter, r *http.Request) {
	n, err := h.S.SignOut(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"), event(r))
	httpx.RespondJSON(w, r, http.StatusOK, SignedOut{Success: true, RevokedCount: n, Message: "The user was signed out everywhere."}, err)
}
