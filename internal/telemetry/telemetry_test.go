package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"hmid/internal/httpx"
	"hmid/internal/telemetry"
)

// record installs a tracer provider that keeps finished spans in memory,
// uninstalled when the test ends.
func record(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr := telemetry.Use(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	return exp
}

// attr returns the value of key among kvs ("" when absent).
func attr(kvs []attribute.KeyValue, key string) string {
	v := ""
	for _, kv := range kvs {
		if string(kv.Key) == key {
			v = kv.Value.Emit() // the last one set wins, as in an export
		}
	}
	return v
}

func TestSettingsFromEnv(t *testing.T) {
	cases := []struct {
		name     string
		env      map[string]string
		endpoint string
		err      string
	}{
		{"nothing set", nil, "", ""},
		{"base endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"}, "http://collector:4318/v1/traces", ""},
		{"traces endpoint as it is", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b/otlp/traces"}, "https://b/otlp/traces", ""},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_SDK_DISABLED": "TRUE"}, "", ""},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_TRACES_EXPORTER": "none"}, "", ""},
		{"exporter otlp", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, "http://a:4318/v1/traces", ""},
		{"other exporter", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_TRACES_EXPORTER": "zipkin"}, "", "OTEL_TRACES_EXPORTER"},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "", "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"traces protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, "http://a:4318/v1/traces", ""},
		{"not a URL", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "collector:4318"}, "", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := telemetry.SettingsFromEnv(func(k string) string { return c.env[k] })
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one naming %s", err, c.err)
				}
				return
			}
			if err != nil || s.Endpoint != c.endpoint || s.Enabled() != (c.endpoint != "") {
				t.Fatalf("got %+v, %v; want endpoint %q", s, err, c.endpoint)
			}
		})
	}
}

func TestOffInstallsNothing(t *testing.T) {
	if telemetry.On() {
		t.Fatal("tracing is on before anything installed it")
	}
	tr, err := telemetry.Start(context.Background(), telemetry.Settings{}, "1.0.0")
	if err != nil || tr != nil || telemetry.On() {
		t.Fatalf("Start without an endpoint: %v, %v, on=%v", tr, err, telemetry.On())
	}
	base := http.DefaultTransport
	if got := telemetry.Transport(base); got != base {
		t.Fatal("Transport wrapped a client's transport with tracing off")
	}
	if telemetry.StartStatement(context.Background(), "sqlite", "SELECT 1") != nil || telemetry.RedisCommand(context.Background(), "get") != nil ||
		telemetry.StartCall(context.Background(), "SMTP send", "mail.example") != nil {
		t.Fatal("a span was started with tracing off")
	}
	if telemetry.LogAttrs(context.Background()) != nil {
		t.Fatal("log attributes with tracing off")
	}
}

// testHandler traces a handler that names the principal an API key and
// answers 503 to DELETE, 200 otherwise; the route of /v1/users/… is
// /v1/users/{id}, other paths match none. inner receives the span context
// the handler saw.
func testHandler(inner *trace.SpanContext) http.Handler {
	return telemetry.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*inner = trace.SpanContextFromContext(r.Context())
		telemetry.SetPrincipalKind(r.Context(), "api_key")
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}), func(method, path string) string {
		if strings.HasPrefix(path, "/v1/users/") {
			return "/v1/users/{id}"
		}
		return ""
	})
}

func TestHandlerSpan(t *testing.T) {
	exp := record(t)
	var inner trace.SpanContext
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req := httptest.NewRequest("GET", "/v1/users/42?token=hm_secret", nil)
	req.Header.Set("traceparent", parent)
	req.Header.Set("Authorization", "Bearer hm_secret")
	testHandler(&inner).ServeHTTP(httptest.NewRecorder(), req)

	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Name != "GET /v1/users/{id}" || s.SpanKind != trace.SpanKindServer {
		t.Fatalf("span %q kind %v", s.Name, s.SpanKind)
	}
	if s.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent.SpanID().String() != "00f067aa0ba902b7" || !s.Parent.IsRemote() {
		t.Fatalf("span does not continue the incoming traceparent: trace %s parent %s", s.SpanContext.TraceID(), s.Parent.SpanID())
	}
	if inner.SpanID() != s.SpanContext.SpanID() {
		t.Fatal("the handler's context does not carry the request span")
	}
	for k, want := range map[string]string{"http.request.method": "GET", "http.route": "/v1/users/{id}", "http.response.status_code": "200", "hmid.principal.kind": "api_key"} {
		if got := attr(s.Attributes, k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	for _, kv := range s.Attributes {
		if strings.Contains(kv.Value.Emit(), "hm_secret") {
			t.Errorf("attribute %s carries the token", kv.Key)
		}
	}
	if s.Status.Code == codes.Error {
		t.Error("a 200 is marked failed")
	}
}

// TestHandlerUnmatchedAndFailed checks the span of a request no route
// matches (named by its method alone, a 5xx marking it failed) and of an
// unknown method, and that a request without traceparent starts a trace.
func TestHandlerUnmatchedAndFailed(t *testing.T) {
	exp := record(t)
	var inner trace.SpanContext
	h := testHandler(&inner)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("DELETE", "/nowhere", nil))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("BREW", "/nowhere", nil))
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	if d := spans[0]; d.Name != "DELETE" || d.Status.Code != codes.Error || attr(d.Attributes, "http.response.status_code") != "503" || attr(d.Attributes, "hmid.principal.kind") != "api_key" {
		t.Errorf("unmatched 503: %q %v %v", d.Name, d.Status, d.Attributes)
	}
	if o := spans[1]; o.Name != "_OTHER" || attr(o.Attributes, "http.request.method") != "_OTHER" {
		t.Errorf("unknown method named %q", o.Name)
	}
	if spans[0].Parent.IsValid() {
		t.Error("a request without traceparent has a parent")
	}
}

func TestTransportPropagates(t *testing.T) {
	exp := record(t)
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("traceparent")
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	client := &http.Client{Transport: telemetry.Transport(http.DefaultTransport)}
	ctx, parent := telemetry.StartClient(context.Background(), "parent")
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/hook?code=secret", nil)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	parent.End()
	if req.Header.Get("traceparent") != "" {
		t.Fatal("the caller's request was changed")
	}
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	s := spans[0]
	want := "00-" + s.SpanContext.TraceID().String() + "-" + s.SpanContext.SpanID().String() + "-01"
	if got != want {
		t.Fatalf("traceparent sent %q, want %q", got, want)
	}
	if s.Name != "POST" || s.SpanKind != trace.SpanKindClient || s.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("client span %q kind %v parent %v", s.Name, s.SpanKind, s.Parent.SpanID())
	}
	if attr(s.Attributes, "http.response.status_code") != "502" || attr(s.Attributes, "server.address") != "127.0.0.1" || s.Status.Code != codes.Error {
		t.Fatalf("client span attributes %v status %v", s.Attributes, s.Status)
	}
	for _, kv := range s.Attributes {
		if strings.Contains(kv.Value.Emit(), "secret") {
			t.Errorf("attribute %s carries the query", kv.Key)
		}
	}
}

func TestStatementAndRedisSpans(t *testing.T) {
	exp := record(t)
	ctx, parent := telemetry.StartClient(context.Background(), "request")
	telemetry.StartStatement(ctx, "postgresql", "  select id FROM users WHERE id = $1")(nil)
	telemetry.StartStatement(ctx, "sqlite", "INSERT INTO t(a) VALUES ($1)")(errors.New("constraint failed"))
	telemetry.RedisCommand(ctx, "evalsha")(nil)
	telemetry.StartCall(ctx, "SMTP send", "mail.example")(nil)
	parent.End()
	// Outside any span, a statement or a command is not traced.
	if telemetry.StartStatement(context.Background(), "sqlite", "SELECT 1") != nil || telemetry.RedisCommand(context.Background(), "get") != nil {
		t.Fatal("a statement outside any span was traced")
	}
	spans := exp.GetSpans()
	if len(spans) != 5 {
		t.Fatalf("%d spans, want 5", len(spans))
	}
	sel, ins, redis, smtp := spans[0], spans[1], spans[2], spans[3]
	if sel.Name != "SELECT" || attr(sel.Attributes, "db.system.name") != "postgresql" || attr(sel.Attributes, "db.query.text") != "  select id FROM users WHERE id = $1" || sel.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("statement span %q %v", sel.Name, sel.Attributes)
	}
	if ins.Name != "INSERT" || ins.Status.Code != codes.Error || ins.Status.Description != "constraint failed" {
		t.Fatalf("failed statement span %q %v", ins.Name, ins.Status)
	}
	if redis.Name != "EVALSHA" || attr(redis.Attributes, "db.system.name") != "redis" {
		t.Fatalf("redis span %q %v", redis.Name, redis.Attributes)
	}
	if smtp.Name != "SMTP send" || attr(smtp.Attributes, "server.address") != "mail.example" || smtp.Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("call span %q %v", smtp.Name, smtp.Attributes)
	}
}

func TestLogAttrs(t *testing.T) {
	record(t)
	if telemetry.LogAttrs(context.Background()) != nil {
		t.Fatal("log attributes without a span")
	}
	ctx, span := telemetry.StartClient(context.Background(), "x")
	defer span.End()
	a := telemetry.LogAttrs(ctx)
	if len(a) != 2 || !strings.Contains(a[0].(interface{ String() string }).String(), span.SpanContext().TraceID().String()) {
		t.Fatalf("log attributes %v", a)
	}
}

func TestRedacted(t *testing.T) {
	if got := telemetry.Redacted("https://user:pw@collector.example/v1/traces?key=k"); got != "https://collector.example/v1/traces" {
		t.Fatalf("Redacted = %q", got)
	}
}

// TestRequestLogsCarryTraceID checks that the request logger of package
// httpx, and so the access log line, names the request's trace and span
// when the request is traced.
func TestRequestLogsCarryTraceID(t *testing.T) {
	exp := record(t)
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpx.Logger(r.Context()).Warn("something to say")
	})
	h := telemetry.Handler(httpx.Base(httpx.BaseConfig{Logger: logger, AccessLog: true}, inner), func(string, string) string { return "" })
	req := httptest.NewRequest("GET", "/x", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.ServeHTTP(httptest.NewRecorder(), req)

	span := exp.GetSpans()[0].SpanContext
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("log lines: %q", buf.String())
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m["trace_id"] != "4bf92f3577b34da6a3ce929d0e0e4736" || m["span_id"] != span.SpanID().String() {
			t.Errorf("log line without the request's trace: %s", l)
		}
	}
}
