package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"hmid/bench/loadgen"
)

// SlowConfig shapes the slow-bodies scenario.
type SlowConfig struct {
	Connections int           // connections dripping a request body at once
	Gap         time.Duration // between two bytes of one body
	Duration    time.Duration // of the normal clients' run (-d)
}

func init() {
	register(Scenario{Name: "slow-bodies",
		About:   "GET /health, GET /v1 and a public GraphQL query, answered next to 600 unauthenticated connections dripping a login body (-slow-conns, -slow-gap): share answered 200 within 1 s, p99",
		Measure: slowBodies})
}

// answerWithin is the target of the scenario: a normal request is answered
// within this time however many clients drip their bodies.
const answerWithin = time.Second

// slowBodies holds e.Slow.Connections connections that each send a login's
// headers and then its body one byte every e.Slow.Gap (a client that is
// cut off connects again), and meanwhile runs e.Concurrency normal clients
// for the scenario's duration. It reports the share of normal requests
// answered 200 within answerWithin, their latency, and what the server did
// with the slow bodies.
//
// The in-process server is served through app.Server.Serve on a listener
// of its own here, as cmd/hmid serves it, so the connection cap and the
// header timeout apply; with -target the running server is measured. Only
// loopback or the given target is dialled; the loops end with the duration.
func slowBodies(ctx context.Context, e *Env, out io.Writer) error {
	cfg := e.Slow
	base := e.URL
	if e.Server != nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		sctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- e.Server.Serve(sctx, ln) }()
		defer func() {
			stop()
			<-done
		}()
		base = "http://" + ln.Addr().String()
	}
	addr := base[len("http://"):]

	// The drippers, started over about a second (a burst of thousands of
	// connects overflows the kernel's accept queue), each until the end.
	dctx, stopDrip := context.WithCancel(ctx)
	defer stopDrip()
	var st dripStats
	var wg sync.WaitGroup
	for i := range cfg.Connections {
		wg.Go(func() { drip(dctx, addr, cfg.Gap, &st) })
		if i%50 == 49 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	defer wg.Wait()
	ramp := time.Now().Add(15 * time.Second)
	for st.open.Load() < int64(cfg.Connections)*95/100 && time.Now().Before(ramp) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Fprintf(out, "slow-bodies: %d of %d connections dripping a body, one byte every %s\n", st.open.Load(), cfg.Connections, cfg.Gap)

	client := &fasthttp.Client{MaxConnsPerHost: e.Concurrency, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
		MaxConnWaitTimeout: 5 * time.Second, DisablePathNormalizing: true}
	gql := []byte(`{"query":"{ platforms { slug } }"}`)
	var total, ok, fast, unavailable atomic.Int64
	var okMu sync.Mutex
	var okTimes []time.Duration // of the requests answered 200
	op := func(ctx context.Context, worker int) error {
		req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(res)
		n := total.Add(1)
		switch n % 3 {
		case 0:
			req.SetRequestURI(base + "/health")
		case 1:
			req.SetRequestURI(base + "/v1")
		default:
			req.SetRequestURI(base + "/v1/graphql")
			req.Header.SetMethod(http.MethodPost)
			req.Header.SetContentType("application/json")
			req.SetBody(gql)
		}
		start := time.Now()
		err := client.DoTimeout(req, res, 5*time.Second)
		took := time.Since(start)
		switch {
		case err != nil:
			return err
		case res.StatusCode() == http.StatusServiceUnavailable:
			unavailable.Add(1)
			return fmt.Errorf("%s: 503", req.URI().Path())
		case res.StatusCode() != http.StatusOK:
			return fmt.Errorf("%s: status %d", req.URI().Path(), res.StatusCode())
		}
		ok.Add(1)
		okMu.Lock()
		okTimes = append(okTimes, took)
		okMu.Unlock()
		if took <= answerWithin {
			fast.Add(1)
		}
		return nil
	}
	res := loadgen.Run(ctx, loadgen.Config{Concurrency: e.Concurrency, Duration: max(cfg.Duration, time.Second)}, op)
	stopDrip()
	res.Name = "slow-bodies"
	fmt.Fprintln(out, res.String())
	for _, s := range res.ErrorSamples {
		fmt.Fprintln(out, "    error:", s)
	}
	n := max(total.Load(), 1)
	slices.Sort(okTimes)
	p99 := time.Duration(0)
	if len(okTimes) > 0 {
		p99 = okTimes[min(len(okTimes)-1, len(okTimes)*99/100)]
	}
	fmt.Fprintf(out, "slow-bodies: normal requests %d: answered 200 %.1f %%, within %s %.1f %%, 503 %.1f %%; p99 of the 200s %s, of all %s\n",
		total.Load(), pct(ok.Load(), n), answerWithin, pct(fast.Load(), n), pct(unavailable.Load(), n),
		p99.Round(time.Microsecond), res.P99.Round(time.Microsecond))
	fmt.Fprintf(out, "slow-bodies: drippers connected %d times, answered 408 %d, other answers %d, cut without an answer %d\n",
		st.connects.Load(), st.timedOut.Load(), st.otherAnswer.Load(), st.cut.Load())
	return nil
}

func pct(a, n int64) float64 { return 100 * float64(a) / float64(n) }

// dripStats counts what the drippers saw.
type dripStats struct {
	open        atomic.Int64 // connections that sent their headers and still drip
	connects    atomic.Int64
	timedOut    atomic.Int64 // answered 408
	otherAnswer atomic.Int64 // answered with another status
	cut         atomic.Int64 // closed by the server without an answer
}

// drip keeps one connection dripping a login body until ctx ends: headers
// announcing a 64 KiB body, then one byte every gap; when the server answers
// or closes, it connects again.
func drip(ctx context.Context, addr string, gap time.Duration, st *dripStats) {
	const head = "POST /v1/auth/login HTTP/1.1\r\nHost: hmid\r\nContent-Type: application/json\r\nContent-Length: 65536\r\n\r\n{"
	for ctx.Err() == nil {
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(gap):
			}
			continue
		}
		st.connects.Add(1)
		if _, err := io.WriteString(c, head); err != nil {
			c.Close()
			continue
		}
		st.open.Add(1)
		answered := make(chan int, 1)
		go func() {
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				answered <- 0
				return
			}
			res.Body.Close()
			answered <- res.StatusCode
		}()
		tick := time.NewTicker(gap)
		status, over := -1, false
		for status < 0 && !over {
			select {
			case <-ctx.Done():
				over = true
			case status = <-answered:
			case <-tick.C:
				_, _ = io.WriteString(c, " ")
			}
		}
		tick.Stop()
		st.open.Add(-1)
		c.Close()
		if over {
			return
		}
		switch status {
		case 0:
			st.cut.Add(1)
		case http.StatusRequestTimeout:
			st.timedOut.Add(1)
		default:
			st.otherAnswer.Add(1)
		}
	}
}
