package app_test

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"hmid/internal/app"
	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
	"hmid/internal/telemetry"
)

// otlpCollector is an OTLP/HTTP trace receiver written from the protocol
// specification: it decodes each POSTed ExportTraceServiceRequest and keeps
// its spans with the service name of their resource.
type otlpCollector struct {
	*httptest.Server
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
}

func newOTLPCollector(t *testing.T) *otlpCollector {
	c := &otlpCollector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "unexpected export", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(raw, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			c.services = append(c.services, attrValue(rs.GetResource().GetAttributes(), "service.name"))
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.Close)
	return c
}

// trace returns the spans received for traceID.
func (c *otlpCollector) trace(traceID []byte) []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range c.spans {
		if string(s.TraceId) == string(traceID) {
			out = append(out, s)
		}
	}
	return out
}

func attrValue(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			if s, ok := kv.Value.Value.(*commonpb.AnyValue_StringValue); ok {
				return s.StringValue
			}
			if i, ok := kv.Value.Value.(*commonpb.AnyValue_IntValue); ok {
				return strconv.FormatInt(i.IntValue, 10)
			}
		}
	}
	return ""
}

// TestTracingExportsTokenRequest runs hmid with tracing exported to a real
// OTLP/HTTP listener and checks that a token request continues the trace of
// its incoming traceparent, is named by its route, and has its SQL
// statements as children, with no secret in any attribute.
func TestTracingExportsTokenRequest(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		collector := newOTLPCollector(t)
		tr, err := telemetry.Start(context.Background(), telemetry.Settings{Endpoint: collector.URL + "/v1/traces"}, app.Version)
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Shutdown(context.Background())
		e := apptest.New(t, eng)
		user := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, nil)
		code := getCode(t, e, user.Token, authzParams(c.ID))

		const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/token", Body: url.Values{
			"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cb}, "client_id": {c.ID}, "client_secret": {c.Secret},
		}, Header: map[string]string{"traceparent": "00-" + traceID + "-" + parentID + "-01"}})
		if r.Status != http.StatusOK {
			t.Fatalf("token: %d %s", r.Status, r.Body)
		}
		// Shutting down exports what the batcher holds.
		if err := tr.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}

		tid, _ := hex.DecodeString(traceID)
		checkTokenTrace(t, collector.trace(tid), parentID,
			[]string{code, c.Secret, r.JSON()["access_token"].(string), r.JSON()["refresh_token"].(string)})
		collector.mu.Lock()
		services := collector.services
		collector.mu.Unlock()
		if len(services) == 0 || services[0] != "hmid" {
			t.Errorf("service names %v, want hmid", services)
		}
	})
}

// checkTokenTrace checks the spans of a token request's trace: a server
// span named by the route, child of the caller's span parentID, answering
// 200; client SQL spans beneath it; no secret in any attribute.
func checkTokenTrace(t *testing.T, spans []*tracepb.Span, parentID string, secrets []string) {
	t.Helper()
	var server *tracepb.Span
	for _, s := range spans {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			server = s
		}
	}
	if server == nil {
		t.Fatalf("no server span in the incoming trace (%d spans of it)", len(spans))
	}
	if server.Name != "POST /v1/oauth/token" || hex.EncodeToString(server.ParentSpanId) != parentID {
		t.Fatalf("server span %q, parent %x", server.Name, server.ParentSpanId)
	}
	if got := attrValue(server.Attributes, "http.response.status_code"); got != "200" {
		t.Errorf("status attribute %q", got)
	}
	sql := 0
	for _, s := range spans {
		if attrValue(s.Attributes, "db.query.text") == "" {
			continue
		}
		sql++
		if string(s.ParentSpanId) != string(server.SpanId) || s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("SQL span %q is not a client child of the request span", s.Name)
		}
	}
	if sql == 0 {
		t.Fatal("the token request has no SQL child spans")
	}
	for _, s := range spans {
		for _, kv := range s.Attributes {
			for _, secret := range secrets {
				if v := kv.Value.GetStringValue(); v != "" && strings.Contains(v, secret) {
					t.Errorf("span %q attribute %s carries a secret", s.Name, kv.Key)
				}
			}
		}
	}
}

// BenchmarkTracing measures the server's own cost (no sockets) of UserInfo
// and an API-key read with tracing off, as every server runs without the
// OTEL_* variables, and on, every request sampled and its spans batched to
// an exporter that drops them.
func BenchmarkTracing(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "on" {
				tr := telemetry.Use(sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter())))
				defer tr.Shutdown(context.Background())
			}
			t := &testing.T{}
			e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(b)})
			u := e.NewUser(b, apptest.UserSpec{SuperAdmin: true, Roles: []string{"role_admin"}})
			key, _ := e.NewAPIKey(b, u.ID, "roles:read")
			sess, _ := e.NewSession(b, u.ID)
			c := mkClient(t, e, e.SystemKey, map[string]any{"name": "Bench"})
			at := tokens(t, e, sess, c, authzParams(c.ID))["access_token"].(string)
			for _, p := range []struct{ name, path, tok string }{{"userinfo", "/v1/oauth/userinfo", at}, {"users-me", "/v1/users/me", key}} {
				b.Run(p.name, func(b *testing.B) {
					b.ReportAllocs()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							req := httptest.NewRequest("GET", p.path, nil)
							req.Header.Set("Authorization", "Bearer "+p.tok)
							w := httptest.NewRecorder()
							e.Server.ServeHTTP(w, req)
							if w.Code != http.StatusOK {
								b.Errorf("%s: %d %s", p.path, w.Code, w.Body)
							}
						}
					})
				})
			}
		})
	}
}

// TestMetricsNeedASystemKeyAndCountRoutes checks that /metrics on the main
// listener answers only system keys, and that a request is counted under the
// route pattern it matched.
func TestMetricsNeedASystemKeyAndCountRoutes(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "GET", "/v1/users/"+u.ID, e.SystemKey, nil, http.StatusOK)
		e.Call(t, "GET", "/metrics", "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/metrics", u.Token, nil, http.StatusForbidden)
		r := e.Call(t, "GET", "/metrics", e.SystemKey, nil, http.StatusOK)
		body := string(r.Body)
		if want := `hmid_http_requests_total{method="GET",route="/v1/users/{id}",status="200"} 1`; !strings.Contains(body, want) {
			t.Fatalf("/metrics lacks %s:\n%s", want, grepLines(body, "hmid_http_requests_total"))
		}
		if strings.Contains(body, `route="unmatched",status="200"`) {
			t.Fatalf("a matched request was counted as unmatched:\n%s", grepLines(body, "hmid_http_requests_total"))
		}
	})
}

// TestMetricsAddrTakesMetricsOffTheMainListener checks that with
// HMID_METRICS_ADDR set, the main listener does not serve /metrics at all
// (cmd/hmid serves it on the metrics listener).
func TestMetricsAddrTakesMetricsOffTheMainListener(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		e.Call(t, "GET", "/metrics", e.SystemKey, nil, http.StatusNotFound)
	}, func(c *config.Config) { c.MetricsAddr = "127.0.0.1:0" })
}

// TestAccessLogNamesTheRoutePattern checks the access-log line of a request
// to /v1/users/{id} carries that pattern, not "unmatched".
func TestAccessLogNamesTheRoutePattern(t *testing.T) {
	t.Parallel()
	var logs apptest.SyncBuffer
	cfg := config.Config{Addr: ":0", PublicURL: "http://localhost", DatabaseURL: "memory",
		SecretKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", MailFrom: "hmid@localhost"}
	srv, err := app.New(context.Background(), cfg, app.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	req := httptest.NewRequest("GET", "/v1/users/00000000-0000-0000-0000-000000000000", nil)
	req.Header.Set("Authorization", "Bearer "+srv.SystemKey)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	line := grepLines(logs.String(), `"msg":"request"`)
	if !strings.Contains(line, `"route":"/v1/users/{id}"`) || !strings.Contains(line, `"status":404`) {
		t.Fatalf("access log: %s", line)
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
