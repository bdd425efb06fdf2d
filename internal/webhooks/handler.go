package webhooks

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/httpx"
)

// Handler serves /v1/webhooks (routes.go holds the permission of each
// route: webhooks:read to look, webhooks:write to change).
type Handler struct{ S *Service }

// List serves GET /v1/webhooks: the endpoints, paginated.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) {
	pg := httpx.ParsePage(r, 20)
	list, total, err := h.S.List(r.Context(), pg)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteList(w, r, list, pg, total)
}

// EventTypes serves GET /v1/webhooks/event-types: what an endpoint may
// subscribe to.
func (h *Handler) EventTypes(w http.ResponseWriter, r *http.Request) {
	httpx.WriteResource(w, r, http.StatusOK, EventTypes())
}

// Create serves POST /v1/webhooks: 201 with the endpoint and its secret,
// shown this once.
func (h *Handler) Create(w http.ResponseWriter, r *http.Request) {
	var in Input
	if err := httpx.Decode(r, &in); err != nil {
		httpx.Error(w, r, err)
		return
	}
	e, err := h.S.Create(r.Context(), authn.From(r.Context()), audit.FromRequest(r, audit.Event{}), in)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteResourceAt(w, r, http.StatusCreated, e, "/v1/webhooks/"+e.ID)
}

// Get serves GET /v1/webhooks/{id}.
func (h *Handler) Get(w http.ResponseWriter, r *http.Request) {
	e, err := h.S.Get(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResource(w, r, http.StatusOK, e)
}

// Update serves PATCH /v1/webhooks/{id}: url, description, event_types,
// enabled; absent fields stay.
func (h *Handler) Update(w http.ResponseWriter, r *http.Request) {
	var in Input
	if err := httpx.Decode(r, &in); err != nil {
		httpx.Error(w, r, err)
		return
	}
	e, err := h.S.Update(r.Context(), authn.From(r.Context()), audit.FromRequest(r, audit.Event{}), chi.URLParam(r, "id"), in)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResource(w, r, http.StatusOK, e)
}

// Delete serves DELETE /v1/webhooks/{id}: 204.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) {
	if err := h.S.Delete(r.Context(), authn.From(r.Context()), audit.FromRequest(r, audit.Event{}), chi.URLParam(r, "id")); err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.NoContent(w)
}

// Rotate serves POST /v1/webhooks/{id}/rotate: the endpoint with its new
// secret, shown this once; the old one signs alongside for 24 hours.
func (h *Handler) Rotate(w http.ResponseWriter, r *http.Request) {
	e, err := h.S.Rotate(r.Context(), authn.From(r.Context()), audit.FromRequest(r, audit.Event{}), chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteResourceAt(w, r, http.StatusOK, e, "/v1/webhooks/"+e.ID)
}

// Deliveries serves GET /v1/webhooks/{id}/deliveries: newest first, paginated.
func (h *Handler) Deliveries(w http.ResponseWriter, r *http.Request) {
	pg := httpx.ParsePage(r, 20)
	list, total, err := h.S.Deliveries(r.Context(), chi.URLParam(r, "id"), pg)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteList(w, r, list, pg, total)
}

// Resend serves POST /v1/webhooks/{id}/deliveries/{delivery_id}/resend:
// 202 with the new delivery of the same message.
func (h *Handler) Resend(w http.ResponseWriter, r *http.Request) {
	d, err := h.S.Resend(r.Context(), chi.URLParam(r, "id"), chi.URLParam(r, "delivery_id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResourceAt(w, r, http.StatusAccepted, d, "/v1/webhooks/"+d.EndpointID+"/deliveries")
}

// Test serves POST /v1/webhooks/{id}/test: 202 with the delivery of a
// webhook_test message.
func (h *Handler) Test(w http.ResponseWriter, r *http.Request) {
	d, err := h.S.Test(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResourceAt(w, r, http.StatusAccepted, d, "/v1/webhooks/"+d.EndpointID+"/deliveries")
}
