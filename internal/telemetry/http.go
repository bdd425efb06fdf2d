package telemetry

import (
	"net/http"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Handler traces every request served by next: one server span, continuing
// the trace of an incoming traceparent header (W3C Trace Context §3.2),
// named by the method and the route pattern route finds for the request
// ("GET /v1/users/{id}"; just the method when no route matches), with the
// method, the route, the status and the principal's kind. The URL, its
// query and the headers are not recorded: they may carry codes and tokens.
// A 5xx answer marks the span failed.
//
// It is meant to be the outermost handler, so the access log and the
// request logger see the span. Wrap a handler only when On: when tracing is
// off, it is not in the chain at all.
func Handler(next http.Handler, route func(method, path string) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := tracer()
		if t == nil { // shut down since
			next.ServeHTTP(w, r)
			return
		}
		method := methodOf(r.Method)
		name := method
		pattern := route(r.Method, r.URL.Path)
		if pattern != "" {
			name += " " + pattern
		}
		ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := t.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(keyMethod.String(method), KeyPrincipalKind.String("none")))
		defer span.End()
		if pattern != "" {
			span.SetAttributes(keyRoute.String(pattern))
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(ctx))
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		span.SetAttributes(keyStatus.Int(status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	})
}

// statusWriter records the status code of the answer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer beneath (flushing,
// hijacking for the WebSocket, deadlines).
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush forwards to the writer beneath when it can flush.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
