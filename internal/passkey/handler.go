package passkey

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/httpx"
)

// Handler serves the REST endpoints (extensions, issue 20):
// GET/PATCH/DELETE /v1/users/me/passkeys[/{id}] for the signed-in user, and
// GET /v1/users/{id}/passkeys and DELETE /v1/users/{id}/passkeys/{passkey_id}
// for operators (users:write in routes.go).
type Handler struct {
	S *Service
}

// list is the answer of the list endpoints.
type list struct {
	Data []Passkey `json:"data"`
}

// ClientFrom returns the request's origin for the audit log.
func ClientFrom(r *http.Request) Client {
	c := Client{IPAddress: httpx.ClientIP(r.Context()), UserAgent: r.UserAgent()}
	if v := r.Header.Get("X-Source-Service"); v != "" {
		for _, s := range []string{"api", "id", "backend", "policies"} {
			if v == s {
				c.SourceService = v
			}
		}
	}
	return c
}

// self is the user the /me routes act on: the caller's own (an ownerless
// system key has none).
func self(r *http.Request) (string, error) {
	p := authn.From(r.Context())
	if p == nil || p.UserID == "" {
		return "", apperr.Invalid("this endpoint acts on the caller's own user; a system key has none")
	}
	return p.UserID, nil
}

// ListMine serves GET /v1/users/me/passkeys.
func (h *Handler) ListMine(w http.ResponseWriter, r *http.Request) {
	uid, err := self(r)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	h.list(w, r, uid)
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request, uid string) {
	out, err := h.S.List(r.Context(), uid)
	httpx.RespondJSON(w, r, http.StatusOK, list{Data: out}, err)
}

// renameBody is the body of PATCH /v1/users/me/passkeys/{id}.
type renameBody struct {
	Name *string `json:"name"`
}

// RenameMine serves PATCH /v1/users/me/passkeys/{id}.
func (h *Handler) RenameMine(w http.ResponseWriter, r *http.Request) {
	uid, err := self(r)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	var in renameBody
	if !httpx.Bind(w, r, &in) {
		return
	}
	if in.Name == nil {
		httpx.Error(w, r, apperr.OnField("name", apperr.Invalid("name is required")))
		return
	}
	pk, err := h.S.Rename(r.Context(), uid, chi.URLParam(r, "id"), *in.Name)
	httpx.RespondJSON(w, r, http.StatusOK, map[string]any{"data": pk}, err)
}

// RemoveMine serves DELETE /v1/users/me/passkeys/{id}.
func (h *Handler) RemoveMine(w http.ResponseWriter, r *http.Request) {
	uid, err := self(r)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.RespondEmpty(w, r, h.S.Remove(r.Context(), "", uid, chi.URLParam(r, "id"), ClientFrom(r)))
}

// ListUser serves GET /v1/users/{id}/passkeys (operators).
func (h *Handler) ListUser(w http.ResponseWriter, r *http.Request) {
	uid := chi.URLParam(r, "id")
	if err := h.S.userExists(r, uid); err != nil {
		httpx.Error(w, r, err)
		return
	}
	h.list(w, r, uid)
}

// RemoveUser serves DELETE /v1/users/{id}/passkeys/{passkey_id} (operators).
func (h *Handler) RemoveUser(w http.ResponseWriter, r *http.Request) {
	p := authn.From(r.Context())
	httpx.RespondEmpty(w, r, h.S.Remove(r.Context(), p.UserID, chi.URLParam(r, "id"), chi.URLParam(r, "passkey_id"), ClientFrom(r)))
}

// userExists answers 404 for an unknown user.
func (s *Service) userExists(r *http.Request, userID string) error {
	var n int
	if err := s.DB.QueryRowContext(r.Context(), `SELECT COUNT(*) FROM users WHERE id = $1`, userID).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return apperr.NotFoundf("user not found")
	}
	return nil
}
