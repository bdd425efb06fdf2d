package oauth

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/httpx"
)

// The REST twins of GraphQL myOauthConsents and revokeOauthConsent (spec 1
// lists them for GraphQL only; these are extensions): the same service
// methods, the same rule (any credential of a user; a system key acting for
// no user has no consents).

// consentList is the answer of GET /v1/users/me/consents.
type consentList struct {
	Consents []ConsentInfo `json:"consents"`
}

// consentResult is the answer of DELETE /v1/users/me/consents/{client_id}.
type consentResult struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// consentUser is the user whose consents the caller of r reads or changes.
func consentUser(r *http.Request) (string, error) {
	p := authn.From(r.Context())
	if p == nil || p.UserID == "" {
		return "", apperr.Forbiddenf("this operation needs a user: a system API key has no OAuth consents")
	}
	return p.UserID, nil
}

// ListMyConsents serves GET /v1/users/me/consents: the clients the caller
// consented to, newest first.
func (h *Handler) ListMyConsents(w http.ResponseWriter, r *http.Request) {
	uid, err := consentUser(r)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	list, err := h.S.ListUserConsents(r.Context(), uid)
	httpx.RespondJSON(w, r, http.StatusOK, consentList{Consents: list}, err)
}

// RevokeMyConsent serves DELETE /v1/users/me/consents/{client_id}: the
// consent is deleted and every token the client holds for the caller revoked
// (spec 1, states: consent deleted); 404 without a consent to that client.
func (h *Handler) RevokeMyConsent(w http.ResponseWriter, r *http.Request) {
	uid, err := consentUser(r)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	err = h.S.RevokeConsent(r.Context(), uid, chi.URLParam(r, "client_id"), MetaFrom(r))
	httpx.RespondJSON(w, r, http.StatusOK, consentResult{Success: true, Message: "Consent revoked; the app's access to your account has ended"}, err)
}
