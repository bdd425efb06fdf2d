package deletion

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/httpx"
)

// Handler serves the admin deletion endpoints.
type Handler struct {
	S *Service
}

type resultBody struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// Status serves GET /v1/admin/users/{id}/deletion-status.
func (h *Handler) Status(w http.ResponseWriter, r *http.Request) {
	st, err := h.S.GetStatus(r.Context(), h.S.DB, chi.URLParam(r, "id"))
	httpx.RespondJSON(w, r, http.StatusOK, st, err)
}

// ForceDelete serves POST /v1/admin/users/{id}/force-delete with an optional
// {reason}: the user is purged at once, irreversibly (Service.ForceDelete).
func (h *Handler) ForceDelete(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Reason httpx.Opt[string] `json:"reason"`
	}
	if err := httpx.DecodeOptional(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	err := h.S.ForceDelete(r.Context(), authn.From(r.Context()), audit.FromRequest(r, audit.Event{}), chi.URLParam(r, "id"), b.Reason.Value)
	httpx.RespondJSON(w, r, http.StatusOK, resultBody{Success: true, Message: "User permanently deleted"}, err)
}

// CancelDeletion serves POST /v1/admin/users/{id}/cancel-deletion.
func (h *Handler) CancelDeletion(w http.ResponseWriter, r *http.Request) {
	p := authn.From(r.Context())
	err := h.S.Cancel(r.Context(), audit.FromRequest(r, audit.Event{ActorID: p.UserID}), chi.URLParam(r, "id"))
	httpx.RespondJSON(w, r, http.StatusOK, resultBody{Success: true, Message: "Scheduled deletion cancelled; the account is active again"}, err)
}
