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
	httpx.RespondList(w, r, list, pg, total, err)
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
	if !httpx.Bind(w, r, &in) {
		return
	}
	e, err := h.S.Create(r.Context(), authn.From(r.Context()), audit.FromRequest(r, audit.Event{}), in)
	respondSecret(w, r, http.StatusCreated, e, err)
}

// respondSecret answers e, whose secret is shown this once, so no cache
// may keep the answer; or err.
func respondSecret(w http.ResponseWriter, r *http.Request, status int, e Endpoint, err error) {
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteResourceAt(w, r, status, e, "/v1/webhooks/"+e.ID)
}

// Get serves GET /v1/webhooks/{id}.
func (h *Handler) Get(w http.ResponseWriter, r *http.Request) {
	e, err := h.S.Get(r.Context(), chi.URLParam(r, "id"))
	httpx.Respond(w, r, http.StatusOK, e, err)
}

// Update serves PATCH /v1/webhooks/{id}: url, description, event_types,
// enabled; absent fields stay.
func (h *Handler) Update(w http.ResponseWriter, r *http.Request) {
	var in Input
	if !httpx.Bind(w, r, &in) {
		return
	}
	e, err := h.S.Update(r.Context(), authn.From(r.Context()), audit.FromRequest(r, audit.Event{}), chi.URLParam(r, "id"), in)
	httpx.Respond(w, r, http.StatusOK, e, err)
}

// Delete serves DELETE /v1/webhooks/{id}: 204.
func (h *Handler) Delete(w http.ResponseWriter, r *http.Request) {
	httpx.RespondEmpty(w, r, h.S.Delete(r.Context(), authn.From(r.Context()), audit.FromRequest(r, audit.Event{}), chi.URLParam(r, "id")))
}

// Rotate serves POST /v1/webhooks/{id}/rotate: the endpoint with its new
// secret, shown this once; the old one signs alongside for 24 hours.
func (h *Handler) Rotate(w http.ResponseWriter, r *http.Request) {
	e, err := h.S.Rotate(r.Context(), authn.From(r.Context()), audit.FromRequest(r, audit.Event{}), chi.URLParam(r, "id"))
	respondSecret(w, r, http.StatusOK, e, err)
}

// Deliveries serves GET /v1/webhooks/{id}/deliveries: newest first, paginated.
func (h *Handler) Deliveries(w http.ResponseWriter, r *http.Request) {
	pg := httpx.ParsePage(r, 20)
	list, total, err := h.S.Deliveries(r.Context(), chi.URLParam(r, "id"), pg)
	httpx.RespondList(w, r, list, pg, total, err)
}

// Resend serves POST /v1/webhooks/{id}/deliveries/{delivery_id}/resend:
// 202 with the new delivery of the same message.
func (h *Handler) Resend(w http.ResponseWriter, r *http.Request) {
	d, err := h.S.Resend(r.Context(), chi.URLParam(r, "id"), chi.URLParam(r, "delivery_id"))
	httpx.RespondAt(w, r, http.StatusAccepted, d, "/v1/webhooks/"+d.EndpointID+"/deliveries", err)
}

// Test serves POST /v1/webhooks/{id}/test: 202 with the delivery of a
// webhook_test message.
func (h *Handler) Test(w http.ResponseWriter, r *http.Request) {
	d, err := h.S.Test(r.Context(), chi.URLParam(r, "id"))
	httpx.RespondAt(w, r, http.StatusAccepted, d, "/v1/webhooks/"+d.EndpointID+"/deliveries", err)
}
