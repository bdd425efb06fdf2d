package graphql

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/platforms"
)

func serve(t *testing.T, h http.Handler, method, body string, p ...*authn.Principal) (int, response, string) {
	t.Helper()
	w := httptest.NewRecorder()
	req := httptest.NewRequest(method, "/v1/graphql", strings.NewReader(body))
	if len(p) > 0 {
		req = req.WithContext(authn.WithPrincipal(req.Context(), p[0]))
	}
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(w, req)
	var out response
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatalf("body %s: %v", w.Body, err)
	}
	return w.Code, out, w.Body.String()
}

func code(r response) string {
	if len(r.Errors) == 0 {
		return ""
	}
	c, _ := r.Errors[0].Extensions["code"].(string)
	return c
}

func TestOtherMethodsRefused(t *testing.T) {
	h, err := New(Deps{})
	if err != nil {
		t.Fatal(err)
	}
	status, out, _ := serve(t, h, "PUT", `{"query": "{ oauthScopes { name } }"}`)
	if status != http.StatusMethodNotAllowed || code(out) != CodeMethodNotAllowed {
		t.Fatalf("PUT: %d %+v", status, out)
	}
}

// Internal failures are logged with their detail and answered without it;
// a panicking resolver is an internal error too.
func TestInternalErrorsHideDetail(t *testing.T) {
	d, err := db.OpenWith(context.Background(), "memory", db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.Close() // every query now fails with "sql: database is closed"
	var logs bytes.Buffer
	h, err := New(Deps{Platforms: &platforms.Service{DB: d}, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	status, out, raw := serve(t, h, "POST", `{"query": "{ platforms { id } oauthScopes { name } }"}`)
	if status != http.StatusOK || code(out) != CodeInternal || out.Errors[0].Message != "internal server error" || strings.Contains(raw, "closed") {
		t.Fatalf("closed database: %d %s", status, raw)
	}
	// Roles without an access service panics inside the resolver.
	admin := authn.NewPrincipal(authn.Principal{Kind: authn.KindSession, UserID: "u1", SuperAdmin: true}, nil)
	status, out, raw = serve(t, h, "POST", `{"query": "{ roles { id } }"}`, admin)
	if status != http.StatusOK || code(out) != CodeInternal || strings.Contains(raw, "nil pointer") {
		t.Fatalf("panic: %d %s", status, raw)
	}
	if !strings.Contains(logs.String(), "panicked") {
		t.Fatalf("panic not logged: %s", logs.String())
	}
}

func TestCodes(t *testing.T) {
	for k, want := range map[apperr.Kind]string{
		apperr.Unauthorized: "UNAUTHENTICATED", apperr.Forbidden: "FORBIDDEN", apperr.NotFound: "NOT_FOUND",
		apperr.Validation: "BAD_USER_INPUT", apperr.BadRequest: "BAD_USER_INPUT", apperr.Conflict: "CONFLICT",
		apperr.TooManyRequests: "TOO_MANY_REQUESTS", apperr.ServiceUnavailable: "SERVICE_UNAVAILABLE",
	} {
		if got := codes[k]; got != want {
			t.Errorf("codes[%s] = %s, want %s", k, got, want)
		}
	}
	if got := codes[apperr.KindOf(io.EOF)]; got != CodeInternal {
		t.Errorf("code of io.EOF = %s", got)
	}
}
