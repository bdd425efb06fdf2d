package app_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"hmid/internal/apptest"
)

// The error pages: a browser navigating into an error anywhere in hmid gets
// an HTML page with the status; an API client gets the JSON it always got.

// browserAccept is the Accept header a browser sends on a navigation.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// raw sends a request with the given headers and reads the answer whole,
// without the contract check (an HTML error page is not the API's answer).
func raw(t *testing.T, e *apptest.Env, method, path string, hdr map[string]string) *apptest.Resp {
	t.Helper()
	return e.Raw(t, method, path, "", nil, hdr)
}

// wantPage checks that r is an error page of status in the hmid style,
// holding every one of texts.
func wantPage(t *testing.T, r *apptest.Resp, status int, texts ...string) {
	t.Helper()
	body := string(r.Body)
	if r.Status != status || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("status %d %q, want %d text/html; body %s", r.Status, r.Header.Get("Content-Type"), status, body)
	}
	if !strings.Contains(body, `<link rel="stylesheet" href="/assets/hmid.css">`) || strings.Count(body, "<h1") != 1 {
		t.Errorf("not a page in the hmid style: %s", body)
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("page headers: CSP %q, Cache-Control %q", csp, r.Header.Get("Cache-Control"))
	}
	if !strings.Contains(r.Header.Get("Vary"), "Accept") {
		t.Errorf("Vary %q does not name Accept", r.Header.Get("Vary"))
	}
	for _, s := range texts {
		if !strings.Contains(body, s) {
			t.Errorf("page lacks %q: %s", s, body)
		}
	}
}

// wantJSON checks that r is exactly the JSON answer want.
func wantJSON(t *testing.T, r *apptest.Resp, status int, want string) {
	t.Helper()
	if r.Status != status || r.Header.Get("Content-Type") != "application/json; charset=utf-8" || string(r.Body) != want+"\n" {
		t.Errorf("got %d %q %s, want %d JSON %s", r.Status, r.Header.Get("Content-Type"), r.Body, status, want)
	}
}

func TestErrorPages(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		nav := map[string]string{"Accept": browserAccept}
		// An unknown address: a page for the browser, the JSON for API clients.
		r := raw(t, e, "GET", "/no/such/page", nav)
		wantPage(t, r, http.StatusNotFound, "Page not found", "Error 404", `href="/"`)
		if strings.Contains(string(r.Body), "no route") {
			t.Errorf("the 404 page shows the API's words: %s", r.Body)
		}
		const notFound = `{"error":"NotFound","message":"no route for GET /no/such/page"}`
		for _, accept := range []string{"application/json", "*/*", "", "application/json, text/html;q=0.5", "text/html;q=0.5, */*"} {
			wantJSON(t, raw(t, e, "GET", "/no/such/page", map[string]string{"Accept": accept}), http.StatusNotFound, notFound)
		}
		// Fetch metadata marks a navigation whatever Accept says.
		wantPage(t, raw(t, e, "GET", "/no/such/page", map[string]string{"Accept": "*/*", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}), http.StatusNotFound)
		// A script's fetch() is not a navigation.
		wantJSON(t, raw(t, e, "GET", "/no/such/page", map[string]string{"Accept": "*/*", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}), http.StatusNotFound, notFound)
		// In the reader's language.
		wantPage(t, raw(t, e, "GET", "/no/such/page", map[string]string{"Accept": browserAccept, "Accept-Language": "de"}), http.StatusNotFound, "Seite nicht gefunden", "Fehler 404", `lang="de"`)

		// The wrong method.
		wantPage(t, raw(t, e, "DELETE", "/v1/health", nav), http.StatusMethodNotAllowed, "Error 405")
		wantJSON(t, raw(t, e, "DELETE", "/v1/health", nil), http.StatusMethodNotAllowed, `{"error":"MethodNotAllowed","message":"method DELETE is not allowed on /v1/health"}`)

		// An API route that needs a sign-in: the page offers it, and the
		// status and its WWW-Authenticate stay.
		r = raw(t, e, "GET", "/v1/users/me", nav)
		wantPage(t, r, http.StatusUnauthorized, "Please log in", `href="/login"`)
		if r.Header.Get("WWW-Authenticate") == "" {
			t.Error("the 401 page lost WWW-Authenticate")
		}

		// Text no area can store is refused before routing (httpx.Boundary).
		wantPage(t, raw(t, e, "GET", "/v1/platforms?q=%00", nav), http.StatusBadRequest, "Error 400", "NUL")

		// A bad authorization request before its client is known is a page
		// naming what is wrong (RFC 6749 §4.1.2.1: never redirected).
		q := url.Values{"response_type": {"code"}, "client_id": {"no-such-client"}, "redirect_uri": {"https://app.example/cb"}, "scope": {"openid"}}
		r = raw(t, e, "GET", "/v1/oauth/authorize?"+q.Encode(), nav)
		wantPage(t, r, http.StatusBadRequest, "The sign-in request is not valid", "unknown client_id")
		wantJSON(t, e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/authorize?" + q.Encode()}), http.StatusBadRequest,
			`{"error":"invalid_request","error_description":"unknown client_id"}`)
		// Once the client and redirect URI are verified, errors still go back
		// to the client.
		admin := e.Admin(t)
		c := mkClient(t, e, admin.Token, nil)
		u := location(t, authorize(t, e, "", authzParams(c.ID, "scope", "openid nonsense"), nav))
		if u.Query().Get("error") != "invalid_scope" || u.Query().Get("state") != "st4te" {
			t.Errorf("error after the client is known: %s", u)
		}
		// An unregistered redirect URI of a known client is not followed.
		r = raw(t, e, "GET", "/v1/oauth/authorize?"+authzParams(c.ID, "redirect_uri", "https://evil.example/cb").Encode(), nav)
		wantPage(t, r, http.StatusBadRequest, "redirect_uri is not registered for this client")

		// Success answers are untouched, JSON included.
		if ok := raw(t, e, "GET", "/v1/health", nav); ok.Status != http.StatusOK || !strings.HasPrefix(ok.Header.Get("Content-Type"), "application/json") {
			t.Errorf("health for a browser: %d %q", ok.Status, ok.Header.Get("Content-Type"))
		}

		// A server error: the page says so without any detail of it, with
		// the request id to quote; the API answer is the usual bare 500.
		execSQL(t, e, "ALTER TABLE platforms RENAME TO platforms_gone")
		r = raw(t, e, "GET", "/v1/platforms", nav)
		wantPage(t, r, http.StatusInternalServerError, "Something went wrong", "Error 500", r.Header.Get("X-Request-ID"))
		for _, leak := range []string{"platforms", "table", "relation", "goroutine", ".go:", "internal error occurred"} {
			if strings.Contains(string(r.Body), leak) {
				t.Errorf("the 500 page shows %q: %s", leak, r.Body)
			}
		}
		wantJSON(t, raw(t, e, "GET", "/v1/platforms", map[string]string{"Accept": "application/json"}), http.StatusInternalServerError,
			`{"error":"InternalError","message":"an internal error occurred"}`)
	})
}
