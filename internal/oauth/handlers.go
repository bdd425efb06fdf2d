package oauth

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"hmid/internal/authn"
	"hmid/internal/httpx"
)

// Handler serves the OAuth endpoints.
type Handler struct {
	S *Service
}

// ListClients serves GET /v1/oauth/clients: the caller's own clients, paginated.
func (h *Handler) ListClients(w http.ResponseWriter, r *http.Request) {
	h.list(w, r, false)
}

// ListAllClients serves GET /v1/oauth/clients/all (oauth_clients:read).
func (h *Handler) ListAllClients(w http.ResponseWriter, r *http.Request) {
	h.list(w, r, true)
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request, all bool) {
	pg := httpx.ParsePage(r, 20)
	out, total, err := h.S.ListClients(r.Context(), authn.From(r.Context()), all, pg)
	httpx.RespondList(w, r, out, pg, total, err)
}

// GetClient serves GET /v1/oauth/clients/{id} (owner or oauth_clients:read).
func (h *Handler) GetClient(w http.ResponseWriter, r *http.Request) {
	c, err := h.S.GetClient(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"))
	httpx.Respond(w, r, http.StatusOK, c, err)
}

// CreateClient serves POST /v1/oauth/clients: 201 {data: client with
// client_secret, _links: {self}} (DECISIONS: Tokens and secrets).
func (h *Handler) CreateClient(w http.ResponseWriter, r *http.Request) {
	var in ClientInput
	if !httpx.Bind(w, r, &in) {
		return
	}
	c, err := h.S.CreateClient(r.Context(), authn.From(r.Context()), in, MetaFrom(r))
	httpx.RespondAt(w, r, http.StatusCreated, c, "/v1/oauth/clients/"+c.ID, err)
}

// UpdateClient serves PATCH /v1/oauth/clients/{id} (owner or oauth_clients:update).
func (h *Handler) UpdateClient(w http.ResponseWriter, r *http.Request) {
	var in ClientInput
	if !httpx.Bind(w, r, &in) {
		return
	}
	c, err := h.S.UpdateClient(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"), in, MetaFrom(r))
	httpx.Respond(w, r, http.StatusOK, c, err)
}

// RegenerateSecret serves POST /v1/oauth/clients/{id}/regenerate-secret:
// {data: {client_id, client_secret, message}, _links: {self}}.
func (h *Handler) RegenerateSecret(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	secret, err := h.S.RegenerateSecret(r.Context(), authn.From(r.Context()), id, MetaFrom(r))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResourceAt(w, r, http.StatusOK, map[string]string{
		"client_id":     id,
		"client_secret": secret,
		"message":       "The new client secret is shown only this once; the previous secret no longer works.",
	}, "/v1/oauth/clients/"+id)
}

// DeleteClient serves DELETE /v1/oauth/clients/{id} (owner or oauth_clients:delete).
func (h *Handler) DeleteClient(w http.ResponseWriter, r *http.Request) {
	httpx.RespondEmpty(w, r, h.S.DeleteClient(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"), MetaFrom(r)))
}
