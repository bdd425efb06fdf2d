package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/dbtest"
	"hmid/internal/events"
	"hmid/internal/realtime/rtbench"
)

// TestRealtimeFanoutBench measures the real-time channel with many
// connections (HMID_RT_BENCH=<connections>, e.g. 10000): the clients run in a
// child process (this test binary again), the server here; it reports the
// server's resident memory and the p99 delay from Publish to arrival.
//
//	HMID_RT_BENCH=10000 [HMID_RT_INTERVAL=100ms] go test ./internal/app -run TestRealtimeFanoutBench -v -timeout 10m
func TestRealtimeFanoutBench(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("HMID_RT_BENCH"))
	if n <= 0 {
		t.Skip("set HMID_RT_BENCH=<connections> to run")
	}
	const rounds = 20
	// The spacing of the published GPS points (HMID_RT_INTERVAL, default 1s:
	// a device reports about once a second); smaller values measure saturation.
	interval := time.Second
	if v, err := time.ParseDuration(os.Getenv("HMID_RT_INTERVAL")); err == nil && v > 0 {
		interval = v
	}
	e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)})
	admin := e.Admin(t)
	runtime.GC()
	base := rtbench.RSSBytes()

	cmd := exec.Command(os.Args[0], "-test.run=^TestRealtimeFanoutClients$", "-test.v")
	cmd.Env = append(os.Environ(), "HMID_RT_CLIENTS="+strconv.Itoa(n), "HMID_RT_URL="+wsURL(e), "HMID_RT_TOKEN="+admin.Token,
		"HMID_RT_ROUNDS="+strconv.Itoa(rounds))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(out)
	wait := func(prefix string) string {
		for lines.Scan() {
			if v, ok := strings.CutPrefix(lines.Text(), prefix); ok {
				return v
			}
		}
		t.Fatalf("client process ended before %q", prefix)
		return ""
	}
	start := time.Now()
	wait("RTBENCH READY")
	t.Logf("%d connections open and subscribed in %v", n, time.Since(start).Round(time.Millisecond))
	if c, s := e.Server.Hub.Counts(); c != n || s != n {
		t.Fatalf("counts %d/%d", c, s)
	}
	runtime.GC()
	rss := rtbench.RSSBytes()
	var idle runtime.MemStats
	runtime.ReadMemStats(&idle)
	t.Logf("idle: heap in use %.1f MiB, stacks %.1f MiB, goroutines %d",
		float64(idle.HeapInuse)/(1<<20), float64(idle.StackInuse)/(1<<20), runtime.NumGoroutine())
	// The server has written an event to every socket when its writer
	// goroutines are gone again; that time, apart from the clients' own
	// reading, is the server's share of the delivery latency.
	idleG := runtime.NumGoroutine()
	var fanout []time.Duration
	for i := range rounds {
		t0 := time.Now()
		events.Publish(context.Background(), e.Server.Events, events.GPSDevice("bench"), rtbench.Payload(i))
		for runtime.NumGoroutine() > idleG+8 && time.Since(t0) < interval {
			time.Sleep(time.Millisecond)
		}
		fanout = append(fanout, time.Since(t0))
		time.Sleep(max(0, interval-time.Since(t0)))
	}
	slices.Sort(fanout)
	t.Logf("server-side fan-out (publish until every socket write is done): median %v, max %v", fanout[len(fanout)/2].Round(time.Millisecond), fanout[len(fanout)-1].Round(time.Millisecond))
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	t.Logf("right after the last publish: heap in use %.1f MiB, stacks %.1f MiB, goroutines %d",
		float64(during.HeapInuse)/(1<<20), float64(during.StackInuse)/(1<<20), runtime.NumGoroutine())
	var res rtbench.Result
	if err := json.Unmarshal([]byte(wait("RTBENCH RESULT ")), &res); err != nil {
		t.Fatal(err)
	}
	peak := rtbench.PeakRSSBytes()
	debug.FreeOSMemory()
	after := rtbench.RSSBytes()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	t.Logf("server RSS: %s before, %s with %d idle subscribed connections (%s per connection); peak %s during the fan-out, %s after it (heap in use %s, stacks %s, goroutines %d)",
		mib(base), mib(rss), n, fmt.Sprintf("%.1f KiB", float64(rss-base)/float64(n)/1024), mib(peak), mib(after),
		mib(int64(ms.HeapInuse)), mib(int64(ms.StackInuse)), runtime.NumGoroutine())
	t.Logf("delivery (%d events %v apart): %d/%d events, p50 %.1f ms, p99 %.1f ms, max %.1f ms", rounds, interval, res.Received, res.Expected, res.P50ms, res.P99ms, res.Maxms)
	if res.Received != res.Expected {
		t.Errorf("lost events: %d of %d", res.Expected-res.Received, res.Expected)
	}
}

// TestRealtimeFanoutClients is the client side of TestRealtimeFanoutBench,
// run in the child process.
func TestRealtimeFanoutClients(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("HMID_RT_CLIENTS"))
	if n <= 0 {
		t.Skip("the client half of TestRealtimeFanoutBench")
	}
	rounds, _ := strconv.Atoi(os.Getenv("HMID_RT_ROUNDS"))
	ctx := context.Background()
	cl, err := rtbench.Dial(ctx, rtbench.Config{URL: os.Getenv("HMID_RT_URL"), Token: os.Getenv("HMID_RT_TOKEN"),
		Topic: events.GPSDevice("bench"), Connections: n})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fmt.Println("RTBENCH READY")
	cctx, cancel := context.WithTimeout(ctx, time.Duration(rounds)*time.Second+60*time.Second)
	defer cancel()
	res := cl.Collect(cctx, rounds)
	b, _ := json.Marshal(res)
	fmt.Println("RTBENCH RESULT " + string(b))
}
