package loadgen

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// countingServer answers 200, or 500 for paths starting with /fail, and counts
// requests it served.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if strings.HasPrefix(r.URL.Path, "/fail") {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// get is an op that fails on any non-200 status.
func get(client *fasthttp.Client, url string) func(context.Context, int) error {
	return func(context.Context, int) error {
		status, _, err := client.Get(nil, url)
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("status %d", status)
		}
		return nil
	}
}

func TestRequestsModeExact(t *testing.T) {
	srv, hits := countingServer(t)
	const n = 1000
	res := Run(t.Context(), Config{Concurrency: 16, Requests: n}, get(NewClient(16), srv.URL))
	if res.Requests != n || hits.Load() != n {
		t.Fatalf("Requests = %d, server hits = %d, want %d", res.Requests, hits.Load(), n)
	}
	if res.Errors != 0 || len(res.ErrorSamples) != 0 {
		t.Fatalf("Errors = %d %v, want none", res.Errors, res.ErrorSamples)
	}
	if res.Elapsed <= 0 || res.RPS <= 0 {
		t.Fatalf("Elapsed = %v, RPS = %v", res.Elapsed, res.RPS)
	}
	if got := float64(res.Requests) / res.Elapsed.Seconds(); got != res.RPS {
		t.Fatalf("RPS = %v, want Requests/Elapsed = %v", res.RPS, got)
	}
}

func TestErrorsCounted(t *testing.T) {
	srv, _ := countingServer(t)
	client := NewClient(4)
	var i atomic.Int64
	ok, fail := get(client, srv.URL+"/"), get(client, srv.URL+"/fail")
	op := func(ctx context.Context, w int) error {
		if i.Add(1)%4 == 0 {
			return fail(ctx, w)
		}
		return ok(ctx, w)
	}
	res := Run(t.Context(), Config{Concurrency: 4, Requests: 400}, op)
	if res.Requests != 400 || res.Errors != 100 {
		t.Fatalf("Requests = %d, Errors = %d, want 400 and 100", res.Requests, res.Errors)
	}
	if len(res.ErrorSamples) != 1 || res.ErrorSamples[0] != "status 500" {
		t.Fatalf("ErrorSamples = %q, want [status 500]", res.ErrorSamples)
	}
}

func TestErrorSamplesDistinctAndBounded(t *testing.T) {
	var i atomic.Int64
	op := func(context.Context, int) error {
		return fmt.Errorf("error %d", i.Add(1)%20)
	}
	res := Run(t.Context(), Config{Concurrency: 1, Requests: 100}, op)
	if res.Errors != 100 {
		t.Fatalf("Errors = %d, want 100", res.Errors)
	}
	want := []string{"error 1", "error 2", "error 3", "error 4", "error 5"}
	if fmt.Sprint(res.ErrorSamples) != fmt.Sprint(want) {
		t.Fatalf("ErrorSamples = %q, want %q", res.ErrorSamples, want)
	}
	if res.P50 != 0 || res.Max != 0 {
		t.Fatalf("percentiles of a run without successes = %v/%v, want 0", res.P50, res.Max)
	}
}

func TestDurationMode(t *testing.T) {
	srv, hits := countingServer(t)
	const d = 300 * time.Millisecond
	start := time.Now()
	res := Run(t.Context(), Config{Concurrency: 8, Duration: d}, get(NewClient(8), srv.URL))
	wall := time.Since(start)
	if res.Requests == 0 || int64(res.Requests) != hits.Load() {
		t.Fatalf("Requests = %d, server hits = %d", res.Requests, hits.Load())
	}
	if res.Elapsed < d || wall > d+5*time.Second {
		t.Fatalf("Elapsed = %v, wall = %v, want about %v", res.Elapsed, wall, d)
	}
}

func TestWarmupNotRecorded(t *testing.T) {
	srv, hits := countingServer(t)
	const warmup = 100 * time.Millisecond
	start := time.Now()
	res := Run(t.Context(), Config{Concurrency: 4, Requests: 50, Warmup: warmup},
		get(NewClient(4), srv.URL))
	wall := time.Since(start)
	if res.Requests != 50 {
		t.Fatalf("Requests = %d, want 50", res.Requests)
	}
	if hits.Load() <= 50 {
		t.Fatalf("server hits = %d, want warm-up requests beyond the 50 measured", hits.Load())
	}
	if res.Elapsed <= 0 || res.Elapsed > wall-warmup {
		t.Fatalf("Elapsed = %v of %v wall time: must exclude the %v warm-up", res.Elapsed, wall, warmup)
	}
}

func TestContextCancellationStopsEarly(t *testing.T) {
	srv, _ := countingServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := Run(ctx, Config{Concurrency: 4, Duration: time.Minute}, get(NewClient(4), srv.URL))
	if wall := time.Since(start); wall > 5*time.Second {
		t.Fatalf("Run took %v after a 200ms cancellation", wall)
	}
	if res.Requests == 0 {
		t.Fatal("no requests before cancellation")
	}
	if res.Errors != 0 {
		t.Fatalf("Errors = %d %v: operations cut short by cancellation were counted", res.Errors, res.ErrorSamples)
	}
}

func TestCancellationInterruptsBlockedOp(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	var started sync.WaitGroup
	started.Add(2)
	go func() { started.Wait(); cancel() }()
	op := func(ctx context.Context, _ int) error {
		started.Done()
		<-ctx.Done()
		return ctx.Err()
	}
	res := Run(ctx, Config{Concurrency: 2, Requests: 10}, op)
	if res.Requests != 0 || res.Errors != 0 {
		t.Fatalf("Requests = %d, Errors = %d, want 0 and 0", res.Requests, res.Errors)
	}
}

func TestPercentilesOrdered(t *testing.T) {
	var i atomic.Int64
	op := func(context.Context, int) error {
		// One slow operation in fifty, so p50 and max must differ.
		if i.Add(1)%50 == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		return nil
	}
	res := Run(t.Context(), Config{Concurrency: 4, Requests: 500}, op)
	if !(res.P50 > 0 && res.P50 <= res.P90 && res.P90 <= res.P99 && res.P99 <= res.Max) {
		t.Fatalf("percentiles not ordered: p50 %v p90 %v p99 %v max %v", res.P50, res.P90, res.P99, res.Max)
	}
	if res.Max < 5*time.Millisecond || res.P50 >= 5*time.Millisecond {
		t.Fatalf("p50 %v, max %v: slow operations not reflected", res.P50, res.Max)
	}
}

func TestPercentileNearestRank(t *testing.T) {
	sorted := make([]time.Duration, 100)
	for i := range sorted {
		sorted[i] = time.Duration(i + 1)
	}
	for _, tt := range []struct {
		p    int
		want time.Duration
	}{{50, 50}, {90, 90}, {99, 99}, {100, 100}, {1, 1}} {
		if got := percentile(sorted, tt.p); got != tt.want {
			t.Errorf("percentile(1..100, %d) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := percentile([]time.Duration{7}, 50); got != 7 {
		t.Errorf("percentile of one value = %v, want 7", got)
	}
}

func TestWorkerIndices(t *testing.T) {
	var seen [8]atomic.Int64
	Run(t.Context(), Config{Concurrency: 8, Requests: 800}, func(_ context.Context, w int) error {
		seen[w].Add(1)
		time.Sleep(100 * time.Microsecond)
		return nil
	})
	total := int64(0)
	for w := range seen {
		if seen[w].Load() == 0 {
			t.Errorf("worker %d never ran", w)
		}
		total += seen[w].Load()
	}
	if total != 800 {
		t.Fatalf("ops run = %d, want 800", total)
	}
}

func TestString(t *testing.T) {
	a := Result{Name: "refresh", RPS: 1234.5, P50: 800 * time.Microsecond, P99: 3 * time.Millisecond, Max: 2 * time.Second, Requests: 10, Errors: 1}
	b := Result{Name: "userinfo", RPS: 98765.4, P50: 50 * time.Microsecond, P99: 120 * time.Microsecond, Max: 9 * time.Millisecond, Requests: 99999}
	sa, sb := a.String(), b.String()
	if strings.Contains(sa, "\n") || strings.Index(sa, "errors") != strings.Index(sb, "errors") {
		t.Fatalf("lines do not align:\n%s\n%s", sa, sb)
	}
	for _, want := range []string{"refresh", "1234.5 req/s", "0.800ms", "3.000ms", "2000.000ms", "errors 1/10"} {
		if !strings.Contains(sa, want) {
			t.Errorf("%q lacks %q", sa, want)
		}
	}
}

func TestNewClient(t *testing.T) {
	c := NewClient(32)
	if c.MaxConnsPerHost != 32 || c.MaxConnWaitTimeout <= 0 || c.ReadTimeout <= 0 {
		t.Fatalf("client: conns/host %d, wait %v, read timeout %v", c.MaxConnsPerHost, c.MaxConnWaitTimeout, c.ReadTimeout)
	}

	// Redirects come back to the caller instead of being followed.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere?code=abc", http.StatusFound)
	}))
	defer srv.Close()
	req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(res)
	req.SetRequestURI(srv.URL)
	if err := c.Do(req, res); err != nil {
		t.Fatal(err)
	}
	if res.StatusCode() != http.StatusFound || string(res.Header.Peek("Location")) != "/elsewhere?code=abc" {
		t.Fatalf("status %d, Location %q", res.StatusCode(), res.Header.Peek("Location"))
	}
}

// Keep-alive connections are reused: a run of 2,000 requests opens about one
// connection per worker. The bound leaves room for a connection the transport
// replaces on a loaded machine; without reuse there would be hundreds.
func TestClientReusesConnections(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	res := Run(t.Context(), Config{Concurrency: 8, Requests: 2000}, get(NewClient(8), srv.URL))
	if res.Errors != 0 {
		t.Fatalf("errors: %v", res.ErrorSamples)
	}
	if n := conns.Load(); n > 16 {
		t.Fatalf("%d connections for 8 workers", n)
	}
}
