package httpx

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"hmid/internal/apperr"
)

// TestErrorLogsCauses: an answered error's cause reaches the request's log
// (a 500's as an error, a 503's as a warning, whether the area said
// Unavailable with its cause or the error is an unreachable dependency),
// while the body says only the kind and the message.
func TestErrorLogsCauses(t *testing.T) {
	cause := errors.New("pq: relation sessions is locked by pid 4711")
	for _, tc := range []struct {
		name   string
		err    error
		status int
		level  string
		logged bool
	}{
		{"an area's 503 with its cause", apperr.Unavailable(cause, "database unavailable"), http.StatusServiceUnavailable, "WARN", true},
		{"an internal error", cause, http.StatusInternalServerError, "ERROR", true},
		{"a refusal", apperr.Invalid("name is required"), http.StatusBadRequest, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := Base(BaseConfig{Logger: slog.New(slog.NewTextHandler(&buf, nil))}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				Error(w, r, tc.err)
			}))
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/users/me", nil))
			if rec.Code != tc.status || strings.Contains(rec.Body.String(), "4711") {
				t.Fatalf("answer %d %s", rec.Code, rec.Body)
			}
			log := buf.String()
			if got := strings.Contains(log, "pid 4711"); got != tc.logged || (tc.logged && !strings.Contains(log, "level="+tc.level)) {
				t.Errorf("log %q: cause logged %v, want %v at %s", log, got, tc.logged, tc.level)
			}
		})
	}
}
