package telemetry

import (
	"fmt"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
)

// Transport traces the requests sent through base: a client span per
// request, named by its method, with the server's host and the status, and
// the span's context given to the server in a traceparent header (W3C Trace
// Context §3.2). The URL's path and query are not recorded: they may hold
// codes and tokens. When tracing is off at the call, base is returned as it
// is: a client built then is not wrapped at all.
func Transport(base http.RoundTripper) http.RoundTripper {
	if !On() {
		return base
	}
	return transport{base: base}
}

type transport struct{ base http.RoundTripper }

// RoundTrip sends a copy of req that carries the trace context.
func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !On() {
		return t.base.RoundTrip(req)
	}
	method := methodOf(req.Method)
	ctx, span := StartClient(req.Context(), method, keyMethod.String(method), keyServerAddress.String(req.URL.Hostname()))
	// A RoundTripper must not change the caller's request (net/http).
	out := req.Clone(ctx)
	propagator.Inject(ctx, propagation.HeaderCarrier(out.Header))
	res, err := t.base.RoundTrip(out)
	failed := err
	if err == nil {
		span.SetAttributes(keyStatus.Int(res.StatusCode))
		if res.StatusCode >= 400 {
			failed = fmt.Errorf("status %d", res.StatusCode)
		}
	}
	End(span, failed)
	return res, err
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach base.
func (t transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
