// Package cors opens hmid's OAuth endpoints to browser apps on other
// origins (Fetch Standard, CORS protocol), and to no one else: the public
// documents to every origin, the endpoints taking client credentials and
// bearer tokens to the web origins of the active clients.
package cors

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hmid/internal/clock"
	"hmid/internal/httpx"
)

// Browser apps (single-page apps, usually public clients) call the token,
// revocation, introspection and UserInfo endpoints with fetch() from their
// own origin, which the browser allows only when the answer names that
// origin (Fetch Standard, CORS protocol). hmid allows the web origins of its
// clients: the origin scheme://host[:port] of each http(s) redirect URI of
// an active client, the rule Keycloak calls "web origins". No other route
// carries CORS headers, and hmid's session cookie is never allowed across
// origins (no Access-Control-Allow-Credentials): the endpoints opened here
// take client credentials and bearer tokens, not cookies.
//
// The set of origins is cached in memory. A client change on this instance
// marks it stale at once; OriginTTL bounds how long a change made on
// another instance takes to be seen.

// OriginTTL is how long an instance uses its set of client origins before
// reading it again.
const OriginTTL = 30 * time.Second

// corsMaxAge is how long a browser may cache a preflight answer, in seconds
// (Chromium caps it at 7200).
const corsMaxAge = "600"

// corsAllowHeaders are the request headers a cross-origin call may send
// beyond the CORS-safelisted ones: a bearer token or client credentials,
// and the form's content type.
const corsAllowHeaders = "Authorization, Content-Type"

// Origins is the cached set of allowed origins, the web origins of the
// active clients' redirect URIs. Load and Clock are required; the set
// starts empty and stale.
type Origins struct {
	// Load returns the redirect URIs of every active client, a list per
	// client.
	Load  func(context.Context) ([][]string, error)
	Clock clock.Clock

	cur atomic.Pointer[originSet]
	gen atomic.Uint64 // advanced by every client change on this instance
	mu  sync.Mutex    // one load at a time
}

// originSet is one loaded set of origins.
type originSet struct {
	origins  map[string]struct{}
	loadedAt time.Time
	gen      uint64 // Origins.gen when the load began
}

// Changed marks the set of origins stale after a client was created,
// changed or deleted, so the next cross-origin request reads it again.
func (o *Origins) Changed() { o.gen.Add(1) }

// Allowed reports whether origin (a request's Origin header) is the web
// origin of an active client's redirect URI.
func (o *Origins) Allowed(ctx context.Context, origin string) bool {
	_, ok := o.set(ctx).origins[origin]
	return ok
}

// set returns the current set, reading it again when a client changed or
// OriginTTL passed. While one request reloads an expired set, the others
// keep using it rather than wait; after a local client change they wait, so
// a client registered a moment ago is allowed at once.
func (o *Origins) set(ctx context.Context) *originSet {
	now := o.Clock.Now()
	cur, gen := o.cur.Load(), o.gen.Load()
	fresh := func(set *originSet) bool {
		return set != nil && set.gen == gen && now.Sub(set.loadedAt) < OriginTTL && !now.Before(set.loadedAt)
	}
	if fresh(cur) {
		return cur
	}
	if cur != nil && cur.gen == gen {
		if !o.mu.TryLock() {
			return cur // only aged: another request is reading the new set
		}
	} else {
		o.mu.Lock()
	}
	defer o.mu.Unlock()
	cur, gen = o.cur.Load(), o.gen.Load()
	if fresh(cur) {
		return cur
	}
	next := &originSet{loadedAt: now, gen: gen}
	origins, err := o.load(ctx)
	if err != nil {
		// Keep the last set (or none: fail closed) and try again after OriginTTL.
		httpx.Logger(ctx).Warn("cors: reading client origins failed", "err", err)
		if cur != nil {
			origins = cur.origins
		}
	}
	next.origins = origins
	o.cur.Store(next)
	return next
}

// load reads the web origins of the active clients' redirect URIs.
func (o *Origins) load(ctx context.Context) (map[string]struct{}, error) {
	lists, err := o.Load(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]struct{}{}
	for _, uris := range lists {
		for _, u := range uris {
			if origin, ok := WebOrigin(u); ok {
				out[origin] = struct{}{}
			}
		}
	}
	return out, nil
}

// WebOrigin returns the origin of an http(s) URI as a browser sends it in
// the Origin header (RFC 6454 §6.1): scheme://host, with the port only when
// it is not the scheme's default. Other schemes have no web origin.
func WebOrigin(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // an IPv6 literal keeps its brackets
	}
	if port == "" || (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		return u.Scheme + "://" + host, true
	}
	return u.Scheme + "://" + host + ":" + port, true
}

// Wrap lets browser apps on the web origins of active clients call next
// across origins: the answer to an allowed Origin names it exactly in
// Access-Control-Allow-Origin, never "*"; any other Origin gets no CORS
// header, so the browser withholds the answer from the page.
func (o *Origins) Wrap(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		varyOrigin(hdr)
		if origin := r.Header.Get("Origin"); origin != "" && o.Allowed(r.Context(), origin) {
			hdr.Set("Access-Control-Allow-Origin", origin)
			hdr.Set("Access-Control-Expose-Headers", "WWW-Authenticate")
		}
		next(w, r)
	}
}

// vary is the Vary value of the Wrap answers, shared: a later Add
// to the header appends past its capacity and so copies it.
var vary = []string{"Origin"}

// varyOrigin marks an answer as depending on the request's Origin (the CORS
// headers do), without allocating on the hot path.
func varyOrigin(h http.Header) {
	if len(h["Vary"]) == 0 {
		h["Vary"] = vary[:1:1]
		return
	}
	h.Add("Vary", "Origin")
}

// Preflight answers the CORS preflight (OPTIONS) of an endpoint wrapped in
// Wrap that serves methods (such as "POST").
func (o *Origins) Preflight(methods string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		varyOrigin(w.Header())
		allow := ""
		if origin := r.Header.Get("Origin"); origin != "" && o.Allowed(r.Context(), origin) {
			allow = origin
		}
		preflight(w, allow, methods)
	}
}

// AnyOrigin lets any origin read h: for the public documents (discovery,
// metadata, JWKS), which hold nothing a page could not fetch through a
// server and take no credentials, so "*" is safe, and their answer does not
// depend on Origin, which keeps them cacheable.
func AnyOrigin(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Origin") != "" {
			w.Header().Set("Access-Control-Allow-Origin", "*")
		}
		next(w, r)
	}
}

// AnyOriginPreflight answers the CORS preflight (OPTIONS) of an endpoint
// wrapped in AnyOrigin that serves methods (such as "GET, HEAD").
func AnyOriginPreflight(methods string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		allow := ""
		if r.Header.Get("Origin") != "" {
			allow = "*"
		}
		preflight(w, allow, methods)
	}
}

// preflight answers OPTIONS with 204 and the methods in Allow (RFC 9110
// §9.3.7); for an allowed origin it adds the CORS preflight headers.
func preflight(w http.ResponseWriter, allowOrigin, methods string) {
	h := w.Header()
	h.Set("Allow", methods+", OPTIONS")
	if allowOrigin != "" {
		h.Set("Access-Control-Allow-Origin", allowOrigin)
		h.Set("Access-Control-Allow-Methods", methods)
		h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
		h.Set("Access-Control-Max-Age", corsMaxAge)
	}
	w.WriteHeader(http.StatusNoContent)
}
