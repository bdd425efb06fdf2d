package twofactor

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/httpx"
)

// Handler serves the REST endpoints under /v1/users/me/2fa, each
// Authenticated() in routes.go with the access rule of Service.Authorize,
// and an administrator's reset, POST /v1/users/{id}/2fa/reset, which needs
// two_factor:manage.
type Handler struct {
	S *Service
}

// codeBody is the body of verify, disable and regenerate.
type codeBody struct {
	Code   string `json:"code"`
	UserID string `json:"user_id"`
}

// ClientFrom returns the request's origin for the audit log (REST and
// GraphQL). The optional X-Source-Service header names the calling app
// (spec 2, source_service).
func ClientFrom(r *http.Request) Client {
	return Client{IPAddress: httpx.ClientIP(r.Context()), UserAgent: r.UserAgent(), SourceService: sourceService(r)}
}

// sourceServices are the source_service values of spec 2 (Events).
var sourceServices = map[string]bool{"api": true, "id": true, "backend": true, "policies": true, "chat_platform_bot": true, "stream_platform_bot": true}

func sourceService(r *http.Request) string {
	if v := r.Header.Get("X-Source-Service"); sourceServices[v] {
		return v
	}
	return ""
}

// userIDOf returns the body's user_id, else the query's.
func userIDOf(r *http.Request, body string) string {
	if body != "" {
		return body
	}
	return r.URL.Query().Get("user_id")
}

// Status serves GET /v1/users/me/2fa/status.
func (h *Handler) Status(w http.ResponseWriter, r *http.Request) {
	out, err := h.S.Status(r.Context(), authn.From(r.Context()), r.URL.Query().Get("user_id"))
	httpx.RespondJSON(w, r, http.StatusOK, out, err)
}

// Requirement serves GET /v1/users/me/2fa/requirement.
func (h *Handler) Requirement(w http.ResponseWriter, r *http.Request) {
	out, err := h.S.Requirement(r.Context(), authn.From(r.Context()), r.URL.Query().Get("user_id"))
	httpx.RespondJSON(w, r, http.StatusOK, out, err)
}

// Setup serves POST /v1/users/me/2fa/setup. The body is optional: without
// one the email platform and the caller's own user are meant.
func (h *Handler) Setup(w http.ResponseWriter, r *http.Request) {
	var in SetupInput
	body, err := io.ReadAll(io.LimitReader(r.Body, httpx.MaxBodyBytes+1))
	if err != nil {
		httpx.Error(w, r, apperr.Bad("request body could not be read"))
		return
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := httpx.DecodeBytes(body, &in); err != nil {
			httpx.Error(w, r, err)
			return
		}
	}
	in.UserID = userIDOf(r, in.UserID)
	out, err := h.S.Setup(r.Context(), authn.From(r.Context()), in)
	httpx.RespondJSON(w, r, http.StatusOK, out, err)
}

// Verify serves POST /v1/users/me/2fa/verify.
func (h *Handler) Verify(w http.ResponseWriter, r *http.Request) {
	withCode(w, r, h.S.Verify)
}

// withCode serves a two-factor step confirmed by a code: {code, user_id}
// (the signed-in user when user_id is absent), answered with call's result.
func withCode[T any](w http.ResponseWriter, r *http.Request, call func(context.Context, *authn.Principal, string, string, Client) (T, error)) {
	var b codeBody
	if !httpx.Bind(w, r, &b) {
		return
	}
	out, err := call(r.Context(), authn.From(r.Context()), userIDOf(r, b.UserID), b.Code, ClientFrom(r))
	httpx.RespondJSON(w, r, http.StatusOK, out, err)
}

// Disable serves DELETE /v1/users/me/2fa.
func (h *Handler) Disable(w http.ResponseWriter, r *http.Request) {
	withCode(w, r, h.S.Disable)
}

// RegenerateBackupCodes serves POST /v1/users/me/2fa/backup-codes/regenerate.
func (h *Handler) RegenerateBackupCodes(w http.ResponseWriter, r *http.Request) {
	withCode(w, r, h.S.RegenerateBackupCodes)
}

// resetBody is the body of an administrator's reset.
type resetBody struct {
	Reason string `json:"reason"`
}

// Reset serves POST /v1/users/{id}/2fa/reset (two_factor:manage): an
// administrator turns two-factor authentication off for a user who lost
// their authenticator (Service.Reset).
func (h *Handler) Reset(w http.ResponseWriter, r *http.Request) {
	var b resetBody
	if !httpx.Bind(w, r, &b) {
		return
	}
	out, err := h.S.Reset(r.Context(), authn.From(r.Context()), chi.URLParam(r, "id"), b.Reason, ClientFrom(r))
	httpx.RespondJSON(w, r, http.StatusOK, out, err)
}
