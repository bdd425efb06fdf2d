package httpx

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
)

type ctxKey int

const (
	keyBaseURL ctxKey = iota
	keyRequestID
	keyClientIP
	keyLogger
)

// BaseURL returns the public base URL stored by the Base middleware.
func BaseURL(ctx context.Context) string {
	s, _ := ctx.Value(keyBaseURL).(string)
	return s
}

// WithBaseURL returns ctx carrying the public base URL.
func WithBaseURL(ctx context.Context, base string) context.Context {
	return context.WithValue(ctx, keyBaseURL, base)
}

// RequestID returns the request id stored by the Base middleware.
func RequestID(ctx context.Context) string {
	s, _ := ctx.Value(keyRequestID).(string)
	return s
}

// ClientIP returns the client address resolved by the Base middleware.
func ClientIP(ctx context.Context) string {
	s, _ := ctx.Value(keyClientIP).(string)
	return s
}

// Logger returns the request-scoped logger (with the request id), or the default logger.
func Logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(keyLogger).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
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
