package oauth

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hmid/internal/db"
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

// originCache is the cached set of allowed origins; the zero value is empty
// and stale.
type originCache struct {
	cur atomic.Pointer[originSet]
	gen atomic.Uint64 // advanced by every client change on this instance
	mu  sync.Mutex    // one load at a time
}

// originSet is one loaded set of origins.
type originSet struct {
	origins  map[string]struct{}
	loadedAt time.Time
	gen      uint64 // originCache.gen when the load began
}

// clientsChanged marks the set of origins stale after a client was created,
// changed or deleted, so the next cross-origin request reads it again.
func (s *Service) clientsChanged() { s.origins.gen.Add(1) }

// AllowedOrigin reports whether origin (a request's Origin header) is the
// web origin of an active client's redirect URI.
func (s *Service) AllowedOrigin(ctx context.Context, origin string) bool {
	_, ok := s.originSet(ctx).origins[origin]
	return ok
}

// originSet returns the current set, reading it again when a client changed
// or OriginTTL passed. While one request reloads an expired set, the others
// keep using it rather than wait; after a local client change they wait, so
// a client registered a moment ago is allowed at once.
func (s *Service) originSet(ctx context.Context) *originSet {
	c := &s.origins
	now := s.Clock.Now()
	cur, gen := c.cur.Load(), c.gen.Load()
	fresh := func(set *originSet) bool {
		return set != nil && set.gen == gen && now.Sub(set.loadedAt) < OriginTTL && !now.Before(set.loadedAt)
	}
	if fresh(cur) {
		return cur
	}
	if cur != nil && cur.gen == gen {
		if !c.mu.TryLock() {
			return cur // only aged: another request is reading the new set
		}
	} else {
		c.mu.Lock()
	}
	defer c.mu.Unlock()
	cur, gen = c.cur.Load(), c.gen.Load()
	if fresh(cur) {
		return cur
	}
	next := &originSet{loadedAt: now, gen: gen}
	origins, err := s.loadOrigins(ctx)
	if err != nil {
		// Keep the last set (or none: fail closed) and try again after OriginTTL.
		httpx.Logger(ctx).Warn("oauth: reading client origins failed", "err", err)
		if cur != nil {
			origins = cur.origins
		}
	}
	next.origins = origins
	c.cur.Store(next)
	return next
}

// loadOrigins reads the web origins of the active clients' redirect URIs.
func (s *Service) loadOrigins(ctx context.Context) (map[string]struct{}, error) {
	rows, err := s.DB.QueryContext(ctx, `SELECT redirect_uris FROM oauth_clients WHERE is_active = TRUE`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]struct{}{}
	for rows.Next() {
		var uris db.Strings
		if err := rows.Scan(&uris); err != nil {
			return nil, err
		}
		for _, u := range uris {
			if o, ok := WebOrigin(u); ok {
				out[o] = struct{}{}
			}
		}
	}
	return out, rows.Err()
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

// ClientOrigins lets browser apps on the web origins of active clients call
// h across origins: the answer to an allowed Origin names it exactly in
// Access-Control-Allow-Origin, never "*"; any other Origin gets no CORS
// header, so the browser withholds the answer from the page.
func (h *Handler) ClientOrigins(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		varyOrigin(hdr)
		if origin := r.Header.Get("Origin"); origin != "" && h.S.AllowedOrigin(r.Context(), origin) {
			hdr.Set("Access-Control-Allow-Origin", origin)
			hdr.Set("Access-Control-Expose-Headers", "WWW-Authenticate")
		}
		next(w, r)
	}
}

// vary is the Vary value of the ClientOrigins answers, shared: a later Add
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

// ClientOriginsPreflight answers the CORS preflight (OPTIONS) of an endpoint
// wrapped in ClientOrigins that serves methods (such as "POST").
func (h *Handler) ClientOriginsPreflight(methods string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		varyOrigin(w.Header())
		allow := ""
		if origin := r.Header.Get("Origin"); origin != "" && h.S.AllowedOrigin(r.Context(), origin) {
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
