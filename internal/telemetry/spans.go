package telemetry

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys, from the OpenTelemetry semantic conventions (HTTP and
// database spans) where one exists.
const (
	keyMethod        = attribute.Key("http.request.method")
	keyRoute         = attribute.Key("http.route")
	keyStatus        = attribute.Key("http.response.status_code")
	keyServerAddress = attribute.Key("server.address")
	keyDBSystem      = attribute.Key("db.system.name")
	keyDBOperation   = attribute.Key("db.operation.name")
	keyDBQuery       = attribute.Key("db.query.text")
	// KeyPrincipalKind is hmid's own: the kind of credential the request
	// authenticated with (session, api_key, oauth), or none.
	KeyPrincipalKind = attribute.Key("hmid.principal.kind")
)

// StartClient starts a client span (a call to the database, the cache or
// another service) as a child of ctx's span. It returns a span that
// records nothing when tracing is off; callers on hot paths check On first.
func StartClient(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	t := tracer()
	if t == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return t.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// End ends span, marking it failed with err's message when err is not nil.
func End(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// StartStatement starts the span of one SQL statement on system ("sqlite",
// "postgresql") and returns the function that ends it with the
// statement's error; it returns nil when tracing is off or ctx has no span.
// The text is the statement as written in the code, with $n placeholders:
// hmid binds every value, so no value reaches the span.
//
// A statement outside any span (migrations, seeding, background jobs'
// polling) is not traced: each would be a trace of one span, every few
// seconds, burying the requests' traces.
func StartStatement(ctx context.Context, system, query string) func(error) {
	if !inSpan(ctx) {
		return nil
	}
	op := operation(query)
	_, span := StartClient(ctx, op, keyDBSystem.String(system), keyDBOperation.String(op), keyDBQuery.String(query))
	return func(err error) { End(span, err) }
}

// inSpan reports whether tracing is on and ctx carries a span to be the
// parent of a child's.
func inSpan(ctx context.Context) bool {
	return On() && trace.SpanContextFromContext(ctx).IsValid()
}

// operation is the statement's first keyword in upper case (SELECT, INSERT,
// WITH, …), the span's name.
func operation(query string) string {
	q := strings.TrimSpace(query)
	if i := strings.IndexAny(q, " \t\n("); i > 0 {
		q = q[:i]
	}
	return strings.ToUpper(q)
}

// RedisCommand starts the span of a Redis command named name (GET, EVALSHA,
// a pipeline's "pipeline"), or returns nil when tracing is off or ctx has
// no span (as StartStatement). Only the command's name is recorded: its
// keys and values may hold token hashes.
func RedisCommand(ctx context.Context, name string) func(error) {
	if !inSpan(ctx) {
		return nil
	}
	_, span := StartClient(ctx, strings.ToUpper(name), keyDBSystem.String("redis"), keyDBOperation.String(strings.ToUpper(name)))
	return func(err error) { End(span, err) }
}

// StartCall starts the span of a call named name to server (a host name),
// such as an SMTP delivery, and returns the function that ends it with the
// call's error; it returns nil when tracing is off.
func StartCall(ctx context.Context, name, server string) func(error) {
	if !On() {
		return nil
	}
	_, span := StartClient(ctx, name, keyServerAddress.String(server))
	return func(err error) { End(span, err) }
}

// SetPrincipalKind records on ctx's request span the kind of credential the
// request authenticated with. It does nothing when tracing is off.
func SetPrincipalKind(ctx context.Context, kind string) {
	if !On() {
		return
	}
	trace.SpanFromContext(ctx).SetAttributes(KeyPrincipalKind.String(kind))
}

// knownMethods are the methods recorded as they are; any other is "_OTHER"
// (semantic conventions, HTTP spans), so a client cannot mint span names.
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodConnect: true,
	http.MethodOptions: true, http.MethodTrace: true,
}

func methodOf(m string) string {
	if knownMethods[m] {
		return m
	}
	return "_OTHER"
}
