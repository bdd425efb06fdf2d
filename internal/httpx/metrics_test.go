package httpx

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// TestMetricsAndAccessLogLabelTheRoutePattern checks that a request is
// counted and logged under the chi pattern it matched (read after the router
// returned), that URL parameters still reach the handler, and that a request
// no route matched is "unmatched".
func TestMetricsAndAccessLogLabelTheRoutePattern(t *testing.T) {
	r := chi.NewRouter()
	r.Get("/v1/users/{id}", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(chi.URLParam(r, "id")))
	})
	r.Route("/v1/trips", func(sr chi.Router) {
		sr.Post("/{id}/start", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	})
	var logs bytes.Buffer
	m := NewMetrics()
	h := Base(BaseConfig{PublicURL: "http://x", Logger: slog.New(slog.NewJSONHandler(&logs, nil)), AccessLog: true, Metrics: m}, r)

	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/users/42", "42"},
		{"POST", "/v1/trips/7/start", ""},
		{"GET", "/nope", ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if c.body != "" && rec.Body.String() != c.body {
			t.Fatalf("%s %s: handler got URL parameter %q, want %q", c.method, c.path, rec.Body.String(), c.body)
		}
	}

	var routes []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct{ Msg, Route string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Msg == "request" {
			routes = append(routes, rec.Route)
		}
	}
	if want := []string{"/v1/users/{id}", "/v1/trips/{id}/start", "unmatched"}; strings.Join(routes, " ") != strings.Join(want, " ") {
		t.Fatalf("access-log routes %q, want %q", routes, want)
	}

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`hmid_http_requests_total{method="GET",route="/v1/users/{id}",status="200"} 1`,
		`hmid_http_requests_total{method="POST",route="/v1/trips/{id}/start",status="202"} 1`,
		`hmid_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`hmid_http_request_duration_seconds_count{method="GET",route="/v1/users/{id}"} 1`,
		"go_goroutines", "process_start_time_seconds",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
