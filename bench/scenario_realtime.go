package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"hmid/bench/wsclient"
)

// WSConfig shapes the ws-fanout scenario.
type WSConfig struct {
	Connections int           // subscribed WebSocket clients
	Devices     int           // devices the clients watch, round-robin (1: all watch one)
	Points      int           // GPS points posted per device
	Interval    time.Duration // between two points of one device
}

func init() {
	register(
		Scenario{Name: "ws-fanout", About: "GPS points posted for one device reach its 10,000 WebSocket subscribers (-ws-devices spreads them): server memory, delivery p99", Measure: wsFanout},
		Scenario{Name: "graphql-my-oauth-clients", About: "POST /v1/graphql query myOauthClients (a user with ten clients)", Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			u, err := e.newUser(ctx, "")
			if err != nil {
				return nil, err
			}
			create := map[string]any{"query": `mutation { createOauthClient(input: {name: "Bench", redirectUris: ["https://app.example/cb"], allowedScopes: ["openid"]}) { clientSecret } }`}
			for range 10 {
				if err := e.graphql(ctx, u.Session, create); err != nil {
					return nil, err
				}
			}
			query := map[string]any{"query": `{ myOauthClients { id name clientType allowedScopes redirectUris createdAt } }`}
			return func(ctx context.Context, _ int) error { return e.graphql(ctx, u.Session, query) }, nil
		}},
	)
}

// graphql posts a GraphQL request and fails on any error in the answer.
func (e *Env) graphql(ctx context.Context, tok string, req map[string]any) error {
	var out struct {
		Errors []json.RawMessage `json:"errors"`
	}
	if err := e.call(ctx, http.MethodPost, "/v1/graphql", tok, req, http.StatusOK, &out); err != nil {
		return err
	}
	if len(out.Errors) > 0 {
		return fmt.Errorf("graphql: %s", out.Errors[0])
	}
	return nil
}

// The client process of ws-fanout is this program again, told what to do by
// its environment (the token stays out of the process list).
const (
	envWSClients  = "HMID_BENCH_WS_CLIENTS" // connections; set only in the client process
	envWSURL      = "HMID_BENCH_WS_URL"
	envWSToken    = "HMID_BENCH_WS_TOKEN"
	envWSTopics   = "HMID_BENCH_WS_TOPICS" // comma-separated
	envWSEvents   = "HMID_BENCH_WS_EVENTS"
	envWSDeadline = "HMID_BENCH_WS_DEADLINE" // how long to wait for the events
)

// wsFanout opens Connections clients in a second process, each subscribed
// to the GPS topic of one of Devices devices, posts Points GPS points per
// device through the API (the devices' points spread evenly over each
// Interval) and reports the server's resident memory and the delay from
// each point's created_at to its arrival at every subscriber.
func wsFanout(ctx context.Context, e *Env, out io.Writer) error {
	cfg := e.WS
	if cfg.Devices < 1 || cfg.Devices > cfg.Connections {
		return fmt.Errorf("-ws-devices must be between 1 and -ws-conns")
	}
	devices, err := e.trackers(ctx, cfg.Devices)
	if err != nil {
		return err
	}
	topics := make([]string, len(devices))
	for i, d := range devices {
		topics[i] = "gps.device." + d.id
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	inProcess := e.Server != nil
	runtime.GC()
	base := procStatus("VmRSS:")

	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(),
		envWSClients+"="+strconv.Itoa(cfg.Connections),
		envWSURL+"="+"ws"+strings.TrimPrefix(e.URL, "http")+"/v1/ws",
		envWSToken+"="+e.SystemKey,
		envWSTopics+"="+strings.Join(topics, ","),
		envWSEvents+"="+strconv.Itoa(cfg.Points),
		envWSDeadline+"="+(time.Duration(cfg.Points)*cfg.Interval+time.Minute).String(),
	)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	wait := func(prefix string) (string, error) {
		for lines.Scan() {
			if v, ok := strings.CutPrefix(lines.Text(), prefix); ok {
				return v, nil
			}
		}
		return "", fmt.Errorf("the client process ended before %q", prefix)
	}
	start := time.Now()
	if _, err := wait(wsReady); err != nil {
		return err
	}
	opened := time.Since(start)
	if inProcess {
		if c, s := e.Server.Hub.Counts(); c != cfg.Connections || s != cfg.Connections {
			return fmt.Errorf("the server counts %d connections and %d subscriptions, want %d", c, s, cfg.Connections)
		}
	}
	runtime.GC()
	idle := procStatus("VmRSS:")
	// Reset the peak so that it covers the fan-out only (proc(5), clear_refs).
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)

	if err := postFanoutPoints(ctx, e, devices); err != nil {
		return err
	}
	raw, err := wait(wsResult)
	if err != nil {
		return err
	}
	var res wsclient.Result
	if err := json.Unmarshal([]byte(raw), &res); err != nil {
		return err
	}
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	fmt.Fprintf(out, "%-24s %d connections watching %d device(s), opened and subscribed in %v\n", "ws-fanout", cfg.Connections, cfg.Devices, opened.Round(time.Millisecond))
	if inProcess {
		peak := procStatus("VmHWM:")
		fmt.Fprintf(out, "%-24s server RSS %s before, %s with the connections idle (%.1f KiB each), %s at the peak of the fan-out\n",
			"", mib(base), mib(idle), float64(idle-base)/float64(cfg.Connections)/1024, mib(peak))
	}
	fmt.Fprintf(out, "%-24s %d points per device, %v apart: %d/%d deliveries, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		"", cfg.Points, cfg.Interval, res.Received, res.Expected, res.P50ms, res.P99ms, res.Maxms)
	if res.Received != res.Expected {
		return fmt.Errorf("lost deliveries: %d of %d", res.Expected-res.Received, res.Expected)
	}
	return nil
}

// postFanoutPoints posts Points GPS points per device, the devices taking
// turns so that each device's points are Interval apart.
func postFanoutPoints(ctx context.Context, e *Env, devices []tracker) error {
	cfg := e.WS
	tick := time.NewTicker(cfg.Interval / time.Duration(cfg.Devices))
	defer tick.Stop()
	for i := range cfg.Points * cfg.Devices {
		d := devices[i%len(devices)]
		if err := e.call(ctx, http.MethodPost, "/v1/gps", d.key, map[string]any{
			"device_id": d.id, "latitude": 52.52 + float64(i)/1e6, "longitude": 13.405, "altitude": 34, "heading": 90,
			"timestamp": time.Now().Unix(), "speed_kmh": 36, "speed_mps": 10, "speed_mph": 22.37, "speed_knots": 19.44,
		}, http.StatusCreated, nil); err != nil {
			return err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// The lines the client process prints for the benchmark process.
const (
	wsReady  = "WSCLIENTS READY"
	wsResult = "WSCLIENTS RESULT "
)

func wsClientMode() bool { return os.Getenv(envWSClients) != "" }

// runWSClients is the client process of ws-fanout: it opens and subscribes
// the connections, says so, collects the events and prints what it saw.
func runWSClients(ctx context.Context, out io.Writer) int {
	n, _ := strconv.Atoi(os.Getenv(envWSClients))
	events, _ := strconv.Atoi(os.Getenv(envWSEvents))
	deadline, err := time.ParseDuration(os.Getenv(envWSDeadline))
	if err != nil || n <= 0 || events <= 0 {
		fmt.Fprintln(os.Stderr, "ws clients: bad configuration in the environment")
		return 2
	}
	topics := strings.Split(os.Getenv(envWSTopics), ",")
	cl, err := wsclient.Dial(ctx, wsclient.Config{URL: os.Getenv(envWSURL), Token: os.Getenv(envWSToken), Topics: topics, Connections: n})
	if err != nil {
		fmt.Fprintln(os.Stderr, "ws clients:", err)
		return 1
	}
	defer cl.Close()
	fmt.Fprintln(out, wsReady)
	cctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	res, err := cl.Collect(cctx, events, createdAt)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ws clients:", err)
	}
	b, _ := json.Marshal(res)
	fmt.Fprintln(out, wsResult+string(b))
	return 0
}

// createdAt reads the created_at of a GPS point event. It scans instead of
// decoding the message: the clients share the server's cores, and decoding
// would be counted as delivery delay.
func createdAt(msg []byte) time.Time {
	const key = `"created_at":"`
	i := bytes.LastIndex(msg, []byte(key)) // a point ends with it
	if i < 0 {
		return time.Time{}
	}
	rest := msg[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, string(rest[:j]))
	if err != nil {
		return time.Time{}
	}
	return t
}

// procStatus reads a field of this process's /proc status in bytes (Linux),
// or 0.
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
