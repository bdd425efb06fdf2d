package app_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"hmid/internal/apptest"
)

// rawBoundary sends a request the contract router cannot match (a NUL or invalid
// UTF-8 in the path, a non-API page) and returns status and body.
func rawBoundary(t *testing.T, e *apptest.Env, method, path, ctype, body string) (int, string) {
	t.Helper()
	hdr := map[string]string{}
	if ctype != "" {
		hdr["Content-Type"] = ctype
	}
	r := e.Raw(t, method, path, "", strings.NewReader(body), hdr)
	return r.Status, string(r.Body)
}

// wantBad asserts a 400 {error: kind, message} answer.
func wantBad(t *testing.T, what string, r *apptest.Resp, kind string) {
	t.Helper()
	if m := r.JSON(); r.Status != http.StatusBadRequest || m["error"] != kind || m["message"] == "" {
		t.Fatalf("%s: %d %.300s, want 400 %s", what, r.Status, r.Body, kind)
	}
}

// TestBoundaryRefusesNULAndInvalidUTF8 is finding 6 of the hardening issue:
// the same hostile text gets the same 400 on both engines (PostgreSQL
// answered 500), before login and in every part of a request.
func TestBoundaryRefusesNULAndInvalidUTF8(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		// Unauthenticated, as found.
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/login", Body: `{"email":"a\u0000b@example.com","password":"password123"}`})
		wantBad(t, "login with \\u0000 in the email", r, "BadRequest")
		for _, p := range []string{"/v1/platforms/a%00b", "/v1/platforms/a%ffb"} {
			if st, body := rawBoundary(t, e, "GET", p, "", ""); st != http.StatusBadRequest || !strings.Contains(body, `"error":"BadRequest"`) {
				t.Fatalf("GET %s: %d %s", p, st, body)
			}
		}
		admin := e.Admin(t)
		// Query parameters.
		wantBad(t, "NUL in a query parameter", e.Do(t, apptest.Req{Method: "GET", Path: "/v1/users?search=a%00", Token: admin.Token}), "BadRequest")
		wantBad(t, "invalid UTF-8 in a query parameter", e.Do(t, apptest.Req{Method: "GET", Path: "/v1/users?search=%c3%28", Token: admin.Token}), "BadRequest")
		// JSON strings: the \u0000 escape, raw invalid UTF-8, a lone surrogate.
		for name, body := range map[string]string{
			"\\u0000":           `{"key":"k1","value":"a\u0000b"}`,
			"raw invalid UTF-8": "{\"key\":\"k2\",\"value\":\"a\xffb\"}",
			"lone surrogate":    `{"key":"k3","value":{"x":"\udc00"}}`,
			"NUL in a key":      `{"key":"k4","value":{"a\u0000":1}}`,
		} {
			wantBad(t, name, e.Do(t, apptest.Req{Method: "POST", Path: "/v1/settings", Token: admin.Token, Body: body}), "BadRequest")
		}
		if n := len(e.Call(t, "GET", "/v1/settings", admin.Token, nil, http.StatusOK).JSON()["data"].([]any)); n != 0 {
			t.Fatalf("%d settings stored from refused bodies", n)
		}
		// A well-formed pair of surrogates is a character and passes.
		e.Call(t, "POST", "/v1/settings", admin.Token, `{"key":"emoji","value":"\ud83d\ude00"}`, http.StatusCreated)
		// Headers that reach the database: refused, except User-Agent, which is cleaned and cut.
		wantBad(t, "invalid UTF-8 in X-Source-Service", e.Do(t, apptest.Req{Method: "GET", Path: "/v1/users", Token: admin.Token,
			Header: map[string]string{"X-Source-Service": "web\xff"}}), "BadRequest")
		info := e.Do(t, apptest.Req{Method: "GET", Path: "/v1", Header: map[string]string{"User-Agent": "curl\xff/8" + strings.Repeat("x", 5000)}}).JSON()
		if ua := info["client"].(map[string]any)["userAgent"].(string); !utf8.ValidString(ua) || len(ua) > 512 || !strings.HasPrefix(ua, "curl\uFFFD/8") {
			t.Fatalf("user agent %q (%d bytes) was not cleaned", ua[:min(len(ua), 40)], len(ua))
		}
	})
}

// TestBoundaryGraphQLLiteral: a GraphQL string literal decodes \u0000 only
// after the body was checked; the endpoint refuses it (PostgreSQL answered
// an internal error, SQLite stored the NUL).
func TestBoundaryGraphQLLiteral(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		g := gqlPost(t, e, u.Token, `mutation { createOauthClient(input: {name: "a\u0000b", redirectUris: ["https://x.example/cb"], allowedScopes: ["openid"]}) { client { id } } }`, nil, http.StatusBadRequest)
		if g.code() != "BAD_REQUEST" {
			t.Fatalf("NUL in a GraphQL literal: %+v", g)
		}
		// An escaped backslash followed by u0000 is plain text.
		gqlData(t, e, u.Token, `mutation { createOauthClient(input: {name: "a\\u0000b", redirectUris: ["https://x.example/cb"], allowedScopes: ["openid"]}) { client { id } } }`, nil)
	})
}

// TestBoundaryForms: form fields of the OAuth endpoints answer invalid_request
// (RFC 6749 §5.2), those of the pages BadRequest; both before any handler runs.
func TestBoundaryForms(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		for _, p := range []string{"/v1/oauth/token", "/v1/oauth/revoke"} {
			r := e.Do(t, apptest.Req{Method: "POST", Path: p, Body: url.Values{"grant_type": {"authorization_code"}, "client_id": {"a\x00b"}, "token": {"x"}}})
			oauthErr(t, r, http.StatusBadRequest, "invalid_request")
		}
		r := e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/authorize?client_id=%ff&response_type=code"})
		oauthErr(t, r, http.StatusBadRequest, "invalid_request")
		st, body := rawBoundary(t, e, "POST", "/login", "application/x-www-form-urlencoded", "email=a%00b%40example.com&password=password123")
		if st != http.StatusBadRequest || !strings.Contains(body, `"BadRequest"`) {
			t.Fatalf("login page with NUL: %d %s", st, body)
		}
	})
}

// nested returns a JSON value nested depth levels deep.
func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + `[1]` + strings.Repeat(`}`, depth-1)
}

// TestBoundaryJSONDepth: a setting 10 levels deep is stored; one 9,990
// levels deep (which encoding/json alone accepts) is a 400 and not stored.
func TestBoundaryJSONDepth(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		e.Call(t, "POST", "/v1/settings", admin.Token, `{"key":"shallow","value":`+nested(10)+`}`, http.StatusCreated)
		wantBad(t, "9,990 levels", e.Do(t, apptest.Req{Method: "POST", Path: "/v1/settings", Token: admin.Token, Body: `{"key":"deep","value":` + nested(9990) + `}`}), "BadRequest")
		e.Call(t, "GET", "/v1/settings/deep", admin.Token, nil, http.StatusNotFound)
		wantBad(t, "33 levels in system config", e.Do(t, apptest.Req{Method: "PATCH", Path: "/v1/system-config/email.supported_locales", Token: admin.Token,
			Body: `{"value":[` + nested(32) + `]}`}), "BadRequest")
	})
}

// TestBoundaryQueryParamCount: Go's net/url drops every parameter of a query
// over 10,000 silently; hmid answers 400 above MaxQueryParams (1,000).
func TestBoundaryQueryParamCount(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		for _, n := range []int{1001, 10001} {
			q := strings.TrimSuffix(strings.Repeat("a=1&", n), "&")
			wantBad(t, "query parameters", e.Do(t, apptest.Req{Method: "GET", Path: "/v1/users?" + q, Token: admin.Token}), "BadRequest")
		}
		e.Call(t, "GET", "/v1/users?"+strings.TrimSuffix(strings.Repeat("a=1&", 1000), "&"), admin.Token, nil, http.StatusOK)
	})
}

// TestInputBounds is finding 7: each input found unbounded now has a bound,
// enforced with a 400 ValidationError naming the field.
func TestInputBounds(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		sys := e.SystemKey
		invalid := func(what, method, path, tok string, body any, field string) {
			t.Helper()
			r := e.Do(t, apptest.Req{Method: method, Path: path, Token: tok, Body: body})
			wantBad(t, what, r, "ValidationError")
			if msg, _ := r.JSON()["message"].(string); !strings.Contains(msg, field) {
				t.Fatalf("%s: message %q does not name %s", what, msg, field)
			}
		}

		// Login email: a long one is refused before it becomes a throttle key.
		invalid("1 MB login email", "POST", "/v1/auth/login", "", map[string]any{"email": strings.Repeat("a", 1<<20-100) + "@x.io", "password": "password123"}, "email")
		invalid("255-byte login email", "POST", "/v1/auth/login", "", map[string]any{"email": strings.Repeat("a", 250) + "@x.io", "password": "password123"}, "email")

		// API-key scopes: bounded, and repeats stored once.
		invalid("10,000 scopes", "POST", "/v1/api-keys", admin.Token, map[string]any{"name": "k", "scopes": repeat("users:read", 10000)}, "scopes")
		k := e.Call(t, "POST", "/v1/api-keys", admin.Token, map[string]any{"name": "k", "scopes": []string{"users:read", "users:read", "roles:read", "users:read"}}, http.StatusCreated).JSON()
		if s := k["scopes"].([]any); len(s) != 2 || s[0] != "users:read" || s[1] != "roles:read" {
			t.Fatalf("scopes stored as %v", s)
		}
		e.Call(t, "PATCH", "/v1/api-keys/"+k["id"].(string), admin.Token, map[string]any{"scopes": repeat("roles:read", 201)}, http.StatusBadRequest)

		// Geofences: radius and metadata.
		fence := map[string]any{"name": "f", "latitude": 52.5, "longitude": 13.4, "radius_km": 1e308}
		invalid("radius 1e308", "POST", "/v1/geofences", sys, fence, "radius_km")
		fence["radius_km"] = 20037.6
		invalid("radius over half the equator", "POST", "/v1/geofences", sys, fence, "radius_km")
		fence["radius_km"] = 20037.5
		meta := map[string]any{}
		for i := range 929 {
			meta["k"+strings.Repeat("0", 3)+string(rune('a'+i%26))+itoa(i)] = strings.Repeat("m", 1000)
		}
		fence["metadata"] = meta
		invalid("929 KB metadata", "POST", "/v1/geofences", sys, fence, "metadata")
		fence["metadata"] = map[string]any{"zone": "depot"}
		e.Call(t, "POST", "/v1/geofences", sys, fence, http.StatusCreated)

		// Trips: tags and notes.
		invalid("20,000 tags", "POST", "/v1/trips", sys, map[string]any{"name": "t", "tags": repeat("x", 20000)}, "tags")
		invalid("a 65-character tag", "POST", "/v1/trips", sys, map[string]any{"name": "t", "tags": []string{strings.Repeat("x", 65)}}, "tags")
		invalid("500 KB notes", "POST", "/v1/trips", sys, map[string]any{"name": "t", "notes": strings.Repeat("n", 500_000)}, "notes")
		invalid("10,001-character notes", "POST", "/v1/trips", sys, map[string]any{"name": "t", "notes": strings.Repeat("é", 10001)}, "notes")
		trip := e.Call(t, "POST", "/v1/trips", sys, map[string]any{"name": "t", "notes": strings.Repeat("é", 10000), "tags": repeat("x", 50)}, http.StatusCreated).JSON()["data"].(map[string]any)
		if tags := trip["tags"].([]any); len(tags) != 1 {
			t.Fatalf("tags = %v", tags)
		}
		invalid("51 tags on PATCH", "PATCH", "/v1/trips/"+trip["id"].(string), sys, map[string]any{"tags": repeat("y", 51)}, "tags")

		// GPS timestamps: from 2000-01-01 to a day past the clock, so one
		// far-future point cannot become everybody's current position.
		gps := func(ts int64) map[string]any {
			return map[string]any{"latitude": 52.5, "longitude": 13.4, "altitude": 30, "heading": 90, "timestamp": ts,
				"speed_kmh": 0, "speed_mps": 0, "speed_mph": 0, "speed_knots": 0}
		}
		now := e.Clock.Now().Unix()
		e.Call(t, "POST", "/v1/gps", sys, gps(now), http.StatusCreated)
		for _, ts := range []int64{0, 946684799, now + 86401, 253402300799} {
			invalid("GPS timestamp "+itoa(int(ts)), "POST", "/v1/gps", sys, gps(ts), "timestamp")
		}
		if cur := e.Call(t, "GET", "/v1/gps/current", sys, nil, http.StatusOK).JSON()["data"].(map[string]any); cur["timestamp"] != e.Clock.Now().UTC().Format("2006-01-02T15:04:05Z") {
			t.Fatalf("current point = %v", cur["timestamp"])
		}

		// pegel.cache_ttl_seconds: a whole number of seconds from 1 to 86400.
		for _, v := range []string{"-1", "0", "1.5", "86401", "1e308"} {
			invalid("cache TTL "+v, "PATCH", "/v1/system-config/pegel.cache_ttl_seconds", admin.Token, `{"value":`+v+`}`, "pegel.cache_ttl_seconds")
		}
		e.Call(t, "PATCH", "/v1/system-config/pegel.cache_ttl_seconds", admin.Token, `{"value":600}`, http.StatusOK)

		// Settings: free-form values are bounded in bytes and properties.
		invalid("a 17 KB setting", "POST", "/v1/settings", admin.Token, map[string]any{"key": "big", "value": []string{strings.Repeat("v", 9000), strings.Repeat("v", 9000)}}, "value")
		wide := map[string]int{}
		for i := range 101 {
			wide["p"+itoa(i)] = i
		}
		invalid("101 properties", "POST", "/v1/settings", admin.Token, map[string]any{"key": "wide", "value": wide}, "value")

		// The JSON string backstop names the field it found.
		invalid("a 65,537-character string anywhere", "POST", "/v1/devices", sys, map[string]any{"name": "d", "extra": strings.Repeat("s", 65537)}, "extra")
	})
}

// TestAuthorizeLongStateNotEchoed: a state over 1,024 bytes is refused and
// the error redirect does not carry it back.
func TestAuthorizeLongStateNotEchoed(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, u.Token, nil)
		long := strings.Repeat("s", 1025)
		loc := location(t, authorize(t, e, u.Token, authzParams(c.ID, "state", long), nil))
		if q := loc.Query(); q.Get("error") != "invalid_request" || q.Has("state") || strings.Contains(loc.String(), long) {
			t.Fatalf("redirect %.200s echoes the state or lacks the error", loc)
		}
		// 1,024 bytes is still echoed as given.
		ok := strings.Repeat("s", 1024)
		loc = location(t, authorize(t, e, u.Token, authzParams(c.ID, "state", ok, "prompt", "bogus"), nil))
		if loc.Query().Get("state") != ok {
			t.Fatalf("a 1,024-byte state was not echoed")
		}
	})
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

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
	t.Parallel()
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
