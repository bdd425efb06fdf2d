package app_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"hmid/internal/app"
	"hmid/internal/apptest"
	"hmid/internal/config"
)

// TestMetricsNeedASystemKeyAndCountRoutes checks that /metrics on the main
// listener answers only system keys, and that a request is counted under the
// route pattern it matched.
func TestMetricsNeedASystemKeyAndCountRoutes(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "GET", "/v1/users/"+u.ID, e.SystemKey, nil, http.StatusOK)
		e.Call(t, "GET", "/metrics", "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/metrics", u.Token, nil, http.StatusForbidden)
		r := e.Call(t, "GET", "/metrics", e.SystemKey, nil, http.StatusOK)
		body := string(r.Body)
		if want := `hmid_http_requests_total{method="GET",route="/v1/users/{id}",status="200"} 1`; !strings.Contains(body, want) {
			t.Fatalf("/metrics lacks %s:\n%s", want, grepLines(body, "hmid_http_requests_total"))
		}
		if strings.Contains(body, `route="unmatched",status="200"`) {
			t.Fatalf("a matched request was counted as unmatched:\n%s", grepLines(body, "hmid_http_requests_total"))
		}
	})
}

// TestMetricsAddrTakesMetricsOffTheMainListener checks that with
// HMID_METRICS_ADDR set, the main listener does not serve /metrics at all
// (cmd/hmid serves it on the metrics listener).
func TestMetricsAddrTakesMetricsOffTheMainListener(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.Call(t, "GET", "/metrics", e.SystemKey, nil, http.StatusNotFound)
	}, func(c *config.Config) { c.MetricsAddr = "127.0.0.1:0" })
}

// TestAccessLogNamesTheRoutePattern checks the access-log line of a request
// to /v1/users/{id} carries that pattern, not "unmatched".
func TestAccessLogNamesTheRoutePattern(t *testing.T) {
	var logs apptest.SyncBuffer
	cfg := config.Config{Addr: ":0", PublicURL: "http://localhost", DatabaseURL: "memory",
		SecretKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", MailFrom: "hmid@localhost"}
	srv, err := app.New(context.Background(), cfg, app.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	req := httptest.NewRequest("GET", "/v1/users/00000000-0000-0000-0000-000000000000", nil)
	req.Header.Set("Authorization", "Bearer "+srv.SystemKey)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	line := grepLines(logs.String(), `"msg":"request"`)
	if !strings.Contains(line, `"route":"/v1/users/{id}"`) || !strings.Contains(line, `"status":404`) {
		t.Fatalf("access log: %s", line)
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
