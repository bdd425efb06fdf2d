package httpx

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"

	"github.com/go-chi/chi/v5"
	"hmid/internal/telemetry"
)

type ctxKey struct{}

// reqInfo is what the Base middleware stores for a request, as one context
// value rather than four.
type reqInfo struct {
	baseURL, id, ip string
	root            *slog.Logger                // the service logger
	log             atomic.Pointer[slog.Logger] // root with the request id, made on first use
}

// requestCtx is the context the Base middleware gives a request: the request
// information and chi's routing context live in it, so a request costs one
// allocation for all three instead of one per value.
type requestCtx struct {
	context.Context
	info  reqInfo
	route chi.Context
}

// Value answers the two keys the context holds and asks its parent for the rest.
func (c *requestCtx) Value(key any) any {
	switch key {
	case ctxKey{}:
		return &c.info
	case chi.RouteCtxKey:
		return &c.route
	}
	return c.Context.Value(key)
}

func info(ctx context.Context) *reqInfo {
	i, _ := ctx.Value(ctxKey{}).(*reqInfo)
	return i
}

// BaseURL returns the public base URL stored by the Base middleware.
func BaseURL(ctx context.Context) string {
	if i := info(ctx); i != nil {
		return i.baseURL
	}
	return ""
}

// ClientIP returns the client address resolved by the Base middleware.
func ClientIP(ctx context.Context) string {
	if i := info(ctx); i != nil {
		return i.ip
	}
	return ""
}

// Logger returns the request-scoped logger (with the request id, and the
// trace and span ids when the request is traced), or the default logger. It is made on first use: most requests never log.
func Logger(ctx context.Context) *slog.Logger {
	i := info(ctx)
	if i == nil || i.root == nil {
		return slog.Default()
	}
	if l := i.log.Load(); l != nil {
		return l
	}
	l := i.root.With(slog.String("request_id", i.id))
	if ids := telemetry.LogAttrs(ctx); ids != nil {
		l = l.With(ids...) // the request's trace_id and span_id (tracing on)
	}
	if !i.log.CompareAndSwap(nil, l) {
		return i.log.Load()
	}
	return l
}

// ResolveClientIP returns the client's address. X-Forwarded-For is believed
// only when the direct peer is a trusted proxy; the list is then walked from
// the right, skipping trusted proxies, so a client cannot spoof its address by
// sending its own header.
func ResolveClientIP(r *http.Request, trusted []netip.Prefix) string {
	peer := remoteAddr(r.RemoteAddr)
	if !peer.IsValid() {
		return r.RemoteAddr
	}
	if !isTrusted(peer, trusted) {
		return peer.String()
	}
	xff := r.Header.Values("X-Forwarded-For")
	var hops []string
	for _, v := range xff {
		for _, part := range strings.Split(v, ",") {
			if p := strings.TrimSpace(part); p != "" {
				hops = append(hops, p)
			}
		}
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(hops[i])
		if err != nil {
			break
		}
		a = a.Unmap()
		if !isTrusted(a, trusted) {
			return a.String()
		}
	}
	if len(hops) > 0 {
		if a, err := netip.ParseAddr(hops[0]); err == nil {
			return a.Unmap().String()
		}
	}
	return peer.String()
}

func remoteAddr(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	a, _ := netip.ParseAddr(s)
	return a.Unmap()
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
