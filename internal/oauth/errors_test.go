package oauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestServerError covers the server_error row of the errors table: an
// internal failure is answered 500 {error: server_error} without its detail.
func TestServerError(t *testing.T) {
	r := httptest.NewRequest("POST", "/v1/oauth/token", nil)
	w := httptest.NewRecorder()
	writeOAuthError(w, asOAuth(r, errors.New("connection refused to 10.0.0.5")))
	var body map[string]string
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if w.Code != http.StatusInternalServerError || body["error"] != ErrServerError || body["error_description"] == "" {
		t.Fatalf("%d %v", w.Code, body)
	}
	if got := w.Body.String(); len(got) == 0 || strings.Contains(got, "10.0.0.5") {
		t.Fatalf("internal detail leaked: %s", got)
	}
	if w.Header().Get("Cache-Control") != "no-store" || w.Header().Get("WWW-Authenticate") != "" {
		t.Fatalf("headers %v", w.Header())
	}
}
