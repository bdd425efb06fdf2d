// Package telemetry exports OpenTelemetry traces of hmid over OTLP/HTTP when
// the standard OTEL_* variables ask for it, and offers the small helpers the
// HTTP server, the database, the cache and the outbound clients use to add
// their spans.
//
// Tracing is process-wide, like the OpenTelemetry SDK's own global provider:
// Start installs a tracer provider, and On reports whether one is installed.
// Every instrumentation point checks On (one atomic load) or is installed
// only when On is true at construction, so with tracing off no span, no
// context lookup and no wrapper is added to a request.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// instrumentationName names hmid's tracer (the instrumentation scope).
const instrumentationName = "hmid"

// state is the installed tracer provider and its tracer.
type state struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
}

var active atomic.Pointer[state]

// propagator reads and writes the W3C traceparent and tracestate headers
// (W3C Trace Context, §3).
var propagator = propagation.TraceContext{}

// On reports whether spans are being recorded. It is the one check of every
// instrumentation point, and costs an atomic load when tracing is off.
func On() bool { return active.Load() != nil }

// tracer returns the active tracer, nil when tracing is off.
func tracer() trace.Tracer {
	if st := active.Load(); st != nil {
		return st.tracer
	}
	return nil
}

// Settings is what the OTEL_* variables decide before the SDK reads the rest
// of them itself (headers, timeout, compression, certificates, batching,
// sampler, resource attributes).
type Settings struct {
	// Endpoint is the URL trace exports are POSTed to; empty means tracing
	// is off.
	Endpoint string
}

// Enabled reports whether traces are exported.
func (s Settings) Enabled() bool { return s.Endpoint != "" }

// The OpenTelemetry environment variables read here (OpenTelemetry
// specification, "Environment Variable Specification" and "OTLP Exporter
// Configuration").
const (
	EnvSDKDisabled       = "OTEL_SDK_DISABLED"
	EnvTracesExporter    = "OTEL_TRACES_EXPORTER"
	EnvEndpoint          = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint    = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol          = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol    = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	tracesPathOfEndpoint = "/v1/traces"
)

// SettingsFromEnv reads the variables that decide whether and where traces
// are exported. Unlike the specification's default (OTLP to localhost),
// tracing is off until an endpoint is set: hmid exports nothing nobody asked
// for. OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn it off
// whatever else is set. A value hmid cannot honour (another exporter, the
// gRPC or JSON protocol, an endpoint that is not an http(s) URL) is an error
// naming the variable, so a misconfiguration fails the start instead of
// silently exporting nothing.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	if strings.EqualFold(get(EnvSDKDisabled), "true") {
		return Settings{}, nil
	}
	switch strings.ToLower(get(EnvTracesExporter)) {
	case "none":
		return Settings{}, nil
	case "", "otlp":
	default:
		return Settings{}, fmt.Errorf("%s must be otlp or none, got %q", EnvTracesExporter, get(EnvTracesExporter))
	}
	endpoint, variable := get(EnvTracesEndpoint), EnvTracesEndpoint
	if endpoint == "" {
		// The general endpoint is a base URL: the signal's path is appended
		// ("Endpoint URLs for OTLP/HTTP").
		if base := get(EnvEndpoint); base != "" {
			endpoint, variable = strings.TrimRight(base, "/")+tracesPathOfEndpoint, EnvEndpoint
		}
	}
	if endpoint == "" {
		return Settings{}, nil
	}
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Settings{}, fmt.Errorf("%s must be an absolute http(s) URL, got %q", variable, getenv(variable))
	}
	protocol, pvar := get(EnvTracesProtocol), EnvTracesProtocol
	if protocol == "" {
		protocol, pvar = get(EnvProtocol), EnvProtocol
	}
	if protocol != "" && protocol != "http/protobuf" {
		return Settings{}, fmt.Errorf("%s: hmid exports traces over http/protobuf only, got %q", pvar, protocol)
	}
	return Settings{Endpoint: endpoint}, nil
}

// Redacted is endpoint without user information and query, for a log line.
func Redacted(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// Tracing is a started exporter; Shutdown flushes it.
type Tracing struct{ st *state }

// Start installs a tracer provider exporting to s.Endpoint over OTLP/HTTP
// with a batching span processor, and returns it for Shutdown. With s not
// enabled it installs nothing and returns nil. The service name is "hmid"
// unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise; the
// sampler follows OTEL_TRACES_SAMPLER (default: parent-based, always on).
func Start(ctx context.Context, s Settings, version string) (*Tracing, error) {
	if !s.Enabled() {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(s.Endpoint))
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "hmid"), attribute.String("service.version", version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // last: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OpenTelemetry resource (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	return Use(sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))), nil
}

// Use installs tp as the process's tracer provider (Start does, with the
// OTLP exporter; tests pass one with an in-memory exporter).
func Use(tp *sdktrace.TracerProvider) *Tracing {
	st := &state{tp: tp, tracer: tp.Tracer(instrumentationName)}
	active.Store(st)
	return &Tracing{st: st}
}

// Shutdown exports the spans still buffered and uninstalls the provider
// (unless another has been installed since).
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	active.CompareAndSwap(t.st, nil)
	return t.st.tp.Shutdown(ctx)
}
