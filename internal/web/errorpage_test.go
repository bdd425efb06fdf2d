package web

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"hmid/internal/httpx"
)

func TestNavigation(t *testing.T) {
	cases := []struct {
		hdr  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"Accept": "*/*"}, false},
		{map[string]string{"Accept": "application/json"}, false},
		{map[string]string{"Accept": "application/json, text/plain, */*"}, false},
		{map[string]string{"Accept": "text/html"}, true},
		{map[string]string{"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}, true},
		{map[string]string{"Accept": "text/html;q=0.5, application/json"}, false},
		{map[string]string{"Accept": "text/*, application/json;q=0.9"}, true},
		{map[string]string{"Accept": "text/html, application/json"}, false},    // a tie is not a preference
		{map[string]string{"Accept": "text/html;q=bogus, */*"}, false},         // a malformed weight drops its range
		{map[string]string{"Accept": "application/json;q=0, text/html"}, true}, // q=0: not acceptable at all
		{map[string]string{"Accept": "*/*", "Sec-Fetch-Mode": "navigate"}, true},
		{map[string]string{"Sec-Fetch-Dest": "document"}, true},
		{map[string]string{"Accept": "*/*", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}, false},
		{map[string]string{"Sec-Fetch-Mode": "websocket"}, false},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		for k, v := range c.hdr {
			r.Header.Set(k, v)
		}
		if got := Navigation(r); got != c.want {
			t.Errorf("Navigation(%v) = %v, want %v", c.hdr, got, c.want)
		}
	}
}

// serve runs h behind ErrorPages and the panic recovery of httpx.Base, as
// the server stacks them, for a browser's navigation.
func serve(t *testing.T, h http.HandlerFunc) *http.Response {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pages := &Handler{Log: log}
	srv := pages.ErrorPages(httpx.Base(httpx.BaseConfig{Logger: log}, h))
	r := httptest.NewRequest("GET", "/x", nil)
	r.Header.Set("Accept", "text/html")
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	return w.Result()
}

func body(res *http.Response) string {
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

func TestErrorPagesPanic(t *testing.T) {
	res := serve(t, func(w http.ResponseWriter, r *http.Request) {
		panic("secret detail of the failure")
	})
	b := body(res)
	if res.StatusCode != http.StatusInternalServerError || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("panic: %d %q %s", res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	if strings.Contains(b, "secret detail") || strings.Contains(b, "goroutine") || strings.Contains(b, "InternalError") {
		t.Errorf("the page shows the panic: %s", b)
	}
	if id := res.Header.Get("X-Request-ID"); id == "" || !strings.Contains(b, id) {
		t.Errorf("the page lacks the request id %q: %s", id, b)
	}
}

func TestErrorPagesPassThrough(t *testing.T) {
	// A page that is already HTML keeps its own body, even as an error.
	res := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, "<p>own page</p>")
	})
	if b := body(res); res.StatusCode != http.StatusForbidden || b != "<p>own page</p>" {
		t.Errorf("HTML error: %d %s", res.StatusCode, b)
	}
	// Successes and redirects go through as written, JSON included.
	res = serve(t, func(w http.ResponseWriter, r *http.Request) { httpx.JSON(w, http.StatusOK, map[string]int{"n": 1}) })
	if b := body(res); res.StatusCode != http.StatusOK || b != "{\"n\":1}\n" {
		t.Errorf("JSON success: %d %s", res.StatusCode, b)
	}
	res = serve(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/y", http.StatusFound) })
	if res.StatusCode != http.StatusFound || res.Header.Get("Location") != "/y" {
		t.Errorf("redirect: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	// A plain-text error becomes a page; its Content-Length is dropped.
	res = serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "5")
		http.Error(w, "oops", http.StatusTeapot)
	})
	if b := body(res); res.StatusCode != http.StatusTeapot || !strings.Contains(b, "Error 418") || strings.Contains(b, "oops") {
		t.Errorf("text error: %d %s", res.StatusCode, b)
	}
}
