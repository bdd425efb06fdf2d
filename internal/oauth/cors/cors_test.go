package cors

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"hmid/internal/clock/clocktest"
)

func TestWebOrigin(t *testing.T) {
	for raw, want := range map[string]string{
		"https://app.example/cb":         "https://app.example",
		"https://App.Example:443/cb?x=1": "https://app.example",
		"http://app.example:80/cb":       "http://app.example",
		"http://localhost:5173/callback": "http://localhost:5173",
		"https://app.example:8443/cb":    "https://app.example:8443",
		"http://127.0.0.1:8080/cb":       "http://127.0.0.1:8080",
		"http://[::1]:8000/cb":           "http://[::1]:8000",
		"com.example.app://callback":     "",
		"app://path":                     "",
		"https://user@app.example/cb":    "",
		"https:///nohost":                "",
		"::not a url":                    "",
		"ftp://files.example/cb":         "",
	} {
		got, ok := WebOrigin(raw)
		if got != want || ok != (want != "") {
			t.Errorf("WebOrigin(%q) = %q, %v; want %q", raw, got, ok, want)
		}
	}
}

// BenchmarkClientOrigins measures what Wrap adds to a request with
// a cached set of origins: nothing but a header without Origin (server-side
// clients), one map lookup with one.
func BenchmarkClientOrigins(b *testing.B) {
	clk := clocktest.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	o := &Origins{Clock: clk}
	set := map[string]struct{}{}
	for _, origin := range []string{"https://app.example", "http://localhost:5173", "https://spa.example"} {
		set[origin] = struct{}{}
	}
	o.cur.Store(&originSet{origins: set, loadedAt: clk.Now()})
	// Like every OAuth answer, the handler sets a header (securityHeaders).
	noop := func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Cache-Control", "no-store") }
	for _, tc := range []struct{ name, origin string }{{"bare-handler", ""}, {"no-origin", ""}, {"allowed-origin", "https://app.example"}, {"unknown-origin", "https://evil.example"}} {
		b.Run(tc.name, func(b *testing.B) {
			handler := o.Wrap(noop)
			if tc.name == "bare-handler" {
				handler = noop
			}
			req := httptest.NewRequest("POST", "/v1/oauth/token", nil)
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				handler(w, req)
			}
		})
	}
}
