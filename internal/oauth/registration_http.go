package oauth

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/httpx"
)

// bearerOf returns the bearer token of r ("" for none or a malformed one).
func bearerOf(r *http.Request) string {
	tok, _ := authn.ParseBearer(r.Header.Get("Authorization"))
	return tok
}

// readMetadata decodes a registration request's JSON body; a body that is
// not JSON metadata is invalid_client_metadata (RFC 7591 §3.2.2).
func readMetadata(r *http.Request) (RegistrationMetadata, *Error) {
	var md RegistrationMetadata
	if err := httpx.Decode(r, &md); err != nil {
		msg := "the body must be a JSON object of client metadata"
		var ae *apperr.Error
		if errors.As(err, &ae) {
			msg = ae.Message
		}
		return md, registrationError(ErrInvalidClientMetadata, msg)
	}
	return md, nil
}

// writeRegistration answers a client information response (never cached:
// it may carry the secret and the registration access token).
func writeRegistration(w http.ResponseWriter, status int, res RegistrationResponse) {
	writeJSON(w, status, res)
}

// Register serves POST /v1/oauth/register (RFC 7591 §3): 201 with the
// client information, or 400 invalid_redirect_uri / invalid_client_metadata,
// 401 invalid_token for a missing or spent initial access token (token
// mode), 404 when registration is off.
func (h *Handler) Register(w http.ResponseWriter, r *http.Request) {
	md, oe := readMetadata(r)
	if oe == nil {
		var res RegistrationResponse
		if res, oe = h.S.Register(r.Context(), bearerOf(r), md, MetaFrom(r)); oe == nil {
			writeRegistration(w, http.StatusCreated, res)
			return
		}
	}
	writeRegistrationError(w, r, oe)
}

// writeRegistrationError writes oe; a 401 carries WWW-Authenticate (RFC 6750 §3).
func writeRegistrationError(w http.ResponseWriter, r *http.Request, oe *Error) {
	if oe.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="hmid", error="invalid_token"`)
	}
	writeOAuthError(w, logged(r, oe))
}

// ReadRegistration serves GET /v1/oauth/register/{id} (RFC 7592 §2.1).
func (h *Handler) ReadRegistration(w http.ResponseWriter, r *http.Request) {
	res, oe := h.S.ReadRegistration(r.Context(), chi.URLParam(r, "id"), bearerOf(r))
	if oe != nil {
		writeRegistrationError(w, r, oe)
		return
	}
	writeRegistration(w, http.StatusOK, res)
}

// UpdateRegistration serves PUT /v1/oauth/register/{id} (RFC 7592 §2.2).
func (h *Handler) UpdateRegistration(w http.ResponseWriter, r *http.Request) {
	id, rat := chi.URLParam(r, "id"), bearerOf(r)
	if _, oe := h.S.registeredClient(r.Context(), id, rat); oe != nil {
		writeRegistrationError(w, r, oe)
		return
	}
	md, oe := readMetadata(r)
	if oe == nil {
		var res RegistrationResponse
		if res, oe = h.S.UpdateRegistration(r.Context(), id, rat, md, MetaFrom(r)); oe == nil {
			writeRegistration(w, http.StatusOK, res)
			return
		}
	}
	writeRegistrationError(w, r, oe)
}

// DeleteRegistration serves DELETE /v1/oauth/register/{id} (RFC 7592 §2.3): 204.
func (h *Handler) DeleteRegistration(w http.ResponseWriter, r *http.Request) {
	if oe := h.S.DeleteRegistration(r.Context(), chi.URLParam(r, "id"), bearerOf(r), MetaFrom(r)); oe != nil {
		writeRegistrationError(w, r, oe)
		return
	}
	securityHeaders(w)
	w.WriteHeader(http.StatusNoContent)
}

// CreateInitialToken serves POST /v1/oauth/initial-access-tokens (super
// admins and system keys): 201 with the token, shown once.
func (h *Handler) CreateInitialToken(w http.ResponseWriter, r *http.Request) {
	var in InitialTokenInput
	if !httpx.Bind(w, r, &in) {
		return
	}
	t, err := h.S.CreateInitialToken(r.Context(), authn.From(r.Context()), in)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteResourceAt(w, r, http.StatusCreated, t, "/v1/oauth/initial-access-tokens")
}

// ListInitialTokens serves GET /v1/oauth/initial-access-tokens.
func (h *Handler) ListInitialTokens(w http.ResponseWriter, r *http.Request) {
	pg := httpx.ParsePage(r, 20)
	out, total, err := h.S.ListInitialTokens(r.Context(), pg)
	httpx.RespondList(w, r, out, pg, total, err)
}

// RevokeInitialToken serves DELETE /v1/oauth/initial-access-tokens/{id}: 204.
func (h *Handler) RevokeInitialToken(w http.ResponseWriter, r *http.Request) {
	httpx.RespondEmpty(w, r, h.S.RevokeInitialToken(r.Context(), chi.URLParam(r, "id")))
}
