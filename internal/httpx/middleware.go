package httpx

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// BaseConfig configures the Base middleware.
type BaseConfig struct {
	PublicURL      string
	TrustedProxies []netip.Prefix
	Logger         *slog.Logger
	AccessLog      bool
	Metrics        *Metrics
}

// Base is the outermost middleware: it stores the public base URL, a request
// id (echoed as X-Request-ID), the client IP and a request logger in the
// context; limits the body to 1 MiB; recovers panics as 500; records metrics;
// and writes one JSON access-log line per request. Metrics and the access log
// are labelled with the chi route pattern the router matched ("unmatched"
// when none did), so a series counts a route, not each of its URLs.
func Base(cfg BaseConfig, next http.Handler) http.Handler {
	routes, _ := next.(chi.Routes)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// Canonical header keys are read and written in the map directly;
		// Get and Set would canonicalise them on every request.
		id := ""
		if v := r.Header["X-Request-Id"]; len(v) > 0 {
			id = v[0]
		}
		if !validRequestID(id) {
			id = newRequestID()
		}
		ip := ResolveClientIP(r, cfg.TrustedProxies)
		// chi creates its routing context only when it finds none, and then on
		// a request copy this middleware never sees. Handing it one here lets
		// the pattern it records be read after the router returned.
		ctx := &requestCtx{Context: r.Context(), info: reqInfo{baseURL: cfg.PublicURL, id: id, ip: ip, root: cfg.Logger}}
		rctx := &ctx.route
		rctx.Routes = routes
		r = r.WithContext(ctx)
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		}
		w.Header()["X-Request-Id"] = []string{id}
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				Logger(r.Context()).Error("panic", slog.Any("panic", fmt.Sprint(p)), slog.String("stack", string(debug.Stack())))
				if !sw.wrote {
					JSON(sw, http.StatusInternalServerError, ErrorBody{Error: "InternalError", Message: "an internal error occurred"})
				}
			}
			elapsed := time.Since(start)
			route := "unmatched"
			if p := rctx.RoutePattern(); p != "" {
				route = p
			}
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			if cfg.Metrics != nil {
				cfg.Metrics.observe(r.Method, route, status, elapsed)
			}
			if cfg.AccessLog {
				Logger(r.Context()).LogAttrs(r.Context(), slog.LevelInfo, "request",
					slog.String("method", r.Method),
					slog.String("route", route),
					slog.String("path", redactPath(r.URL.Path)),
					slog.Int("status", status),
					slog.Int64("duration_us", elapsed.Microseconds()),
					slog.String("ip", ip))
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

func validRequestID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// statusWriter records the status code written.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.status = code
		s.wrote = true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if !s.wrote {
		s.status = http.StatusOK
		s.wrote = true
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer (flush, hijack for WebSockets).
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush forwards to the underlying writer when it can flush (streamed downloads).
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Metrics holds the Prometheus request counters and latency histogram by route.
type Metrics struct {
	Registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewMetrics registers the HTTP metrics and the Go runtime collectors in a fresh registry.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hmid_http_requests_total", Help: "HTTP requests by method, route and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hmid_http_request_duration_seconds",
			Help:    "HTTP request latency by method and route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"method", "route"}),
	}
	// The collectors package replaces prometheus.NewGoCollector and
	// prometheus.NewProcessCollector, which are deprecated.
	reg.MustRegister(m.requests, m.latency, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus exposition format, for
// /metrics on the main listener or on a listener of its own.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}

func (m *Metrics) observe(method, route string, status int, d time.Duration) {
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(method, route).Observe(d.Seconds())
}

// redactPath hides bearer secrets that appear in a path (GET /v1/sessions/{token}
// takes a session token there), so access logs never hold a usable token.
func redactPath(p string) string {
	if !strings.Contains(p, "hm_") {
		return p
	}
	parts := strings.Split(p, "/")
	for i, seg := range parts {
		if strings.HasPrefix(seg, "hm_") && len(seg) > 12 {
			parts[i] = seg[:min(len(seg), 9)] + "…"
		}
	}
	return strings.Join(parts, "/")
}
