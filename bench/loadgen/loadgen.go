// Package loadgen is a small closed-loop load generator: a fixed number of
// workers each run an operation back to back, so the offered load adapts to
// the server's speed and the result is its throughput at that concurrency
// and the latency a client sees.
//
// Latencies are kept exactly, one time.Duration per successful operation in a
// slice per worker (no locking on the hot path), then merged and sorted once at
// the end. At 8 bytes per request a million-request run costs 8 MB, which is
// cheaper and simpler than a histogram and makes percentiles exact.
package loadgen

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// DefaultDuration is how long Run measures when Config sets neither Duration
// nor Requests.
const DefaultDuration = 10 * time.Second

// maxErrorSamples bounds Result.ErrorSamples: a few distinct messages say what
// went wrong; thousands of copies of one message do not.
const maxErrorSamples = 5

// Config describes one run.
type Config struct {
	// Concurrency is the number of workers, each with at most one operation in
	// flight. Values below 1 mean 1.
	Concurrency int
	// Duration is how long the measured phase runs: no operation starts after
	// it ends, operations in flight finish and are recorded. With Requests set
	// it is an upper bound; zero means no time limit.
	Duration time.Duration
	// Requests, when positive, is the exact number of operations measured;
	// the run ends when they complete. Zero means run until Duration.
	Requests int
	// Warmup is run before the measured phase with the same workers, to fill
	// connection pools and caches; its operations are not recorded.
	Warmup time.Duration
}

// Result summarizes a run. Latency percentiles are over successful
// operations only, so fast failures cannot make a slow service look quick.
type Result struct {
	// Name labels the result in String; Run leaves it empty for the caller.
	Name string
	// Requests counts measured operations, successful or not.
	Requests int
	// Errors counts measured operations that returned an error.
	Errors int
	// Elapsed is the wall time of the measured phase.
	Elapsed time.Duration
	// RPS is Requests per second of Elapsed.
	RPS float64
	// P50, P90 and P99 are nearest-rank percentiles of successful operations'
	// latencies; Max is the slowest.
	P50, P90, P99, Max time.Duration
	// ErrorSamples holds the first few distinct error messages, in the order
	// they were first seen.
	ErrorSamples []string
}

// String formats r as one line whose columns align with other results':
// name, requests per second, p50, p99, max latency and errors.
func (r Result) String() string {
	return fmt.Sprintf("%-32s %10.1f req/s   p50 %s   p99 %s   max %s   errors %d/%d",
		r.Name, r.RPS, ms(r.P50), ms(r.P99), ms(r.Max), r.Errors, r.Requests)
}

// ms prints a latency in milliseconds with a fixed width, so columns line up
// whether a value is 80µs or 2s.
func ms(d time.Duration) string {
	return fmt.Sprintf("%9.3fms", float64(d)/float64(time.Millisecond))
}

// Run calls op from cfg.Concurrency goroutines until the run ends (see
// Config) or ctx is cancelled, and returns what it measured. worker is the
// index of the calling goroutine, 0 to Concurrency-1, so op can keep
// per-worker state such as a distinct user or device without locking.
//
// op receives ctx unchanged. An operation that fails after ctx was cancelled
// is not counted: it was cut short by the caller, not failed by the server.
func Run(ctx context.Context, cfg Config, op func(ctx context.Context, worker int) error) Result {
	workers := max(cfg.Concurrency, 1)
	duration := cfg.Duration
	if duration <= 0 && cfg.Requests <= 0 {
		duration = DefaultDuration
	}
	measureStart := time.Now().Add(max(cfg.Warmup, 0))
	var deadline time.Time
	if duration > 0 {
		deadline = measureStart.Add(duration)
	}

	var (
		claimed atomic.Int64 // measured operations started, for Requests mode
		samples errorSamples
		stats   = make([]workerStats, workers)
		wg      sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			s := &stats[w]
			for ctx.Err() == nil {
				start := time.Now()
				warm := start.Before(measureStart)
				if !warm {
					if !deadline.IsZero() && !start.Before(deadline) {
						return
					}
					if cfg.Requests > 0 && claimed.Add(1) > int64(cfg.Requests) {
						return
					}
				}
				err := op(ctx, w)
				took := time.Since(start)
				switch {
				case warm:
					// Warm-up operations only prime the server and the pool.
				case err == nil:
					s.latencies = append(s.latencies, took)
				case ctx.Err() != nil:
					return
				default:
					s.errors++
					samples.add(err.Error())
				}
			}
		})
	}
	wg.Wait()

	res := Result{Elapsed: max(time.Since(measureStart), 0), ErrorSamples: samples.list()}
	total := 0
	for _, s := range stats {
		total += len(s.latencies)
	}
	all := make([]time.Duration, 0, total)
	for _, s := range stats {
		all = append(all, s.latencies...)
		res.Errors += s.errors
	}
	res.Requests = len(all) + res.Errors
	if res.Elapsed > 0 {
		res.RPS = float64(res.Requests) / res.Elapsed.Seconds()
	}
	if len(all) > 0 {
		slices.Sort(all)
		res.P50 = percentile(all, 50)
		res.P90 = percentile(all, 90)
		res.P99 = percentile(all, 99)
		res.Max = all[len(all)-1]
	}
	return res
}

// workerStats is owned by one worker while the run lasts.
type workerStats struct {
	latencies []time.Duration
	errors    int
}

// percentile returns the nearest-rank p-th percentile of sorted, which must
// not be empty: the smallest value with at least p% of values at or below it.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return sorted[max(rank, 1)-1]
}

// errorSamples collects the first distinct error messages. Once full, add
// returns without taking the lock, so a run that fails every request does not
// serialize its workers on it.
type errorSamples struct {
	full atomic.Bool
	mu   sync.Mutex
	msgs []string
}

func (e *errorSamples) add(msg string) {
	if e.full.Load() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.msgs) >= maxErrorSamples || slices.Contains(e.msgs, msg) {
		return
	}
	e.msgs = append(e.msgs, msg)
	if len(e.msgs) == maxErrorSamples {
		e.full.Store(true)
	}
}

func (e *errorSamples) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.msgs)
}

// NewClient returns the HTTP/1.1 client for driving a server on loopback
// with up to concurrency requests in flight. It is fasthttp's client rather
// than net/http's: the generator shares the machine with the server it
// measures, and a client that costs a third of the CPU per request leaves
// that much more to the server, as C generators such as wrk do.
//
//   - MaxConnsPerHost is concurrency, and a worker waits for a free
//     connection (MaxConnWaitTimeout) rather than failing, so every worker
//     keeps one keep-alive connection: the run measures the server, not TCP
//     setup;
//   - one connection per request in flight, never multiplexed: a real fleet
//     of clients opens many connections;
//   - redirects are not followed (Do never does), so each call is one
//     measured round trip and an authorization-code flow reads the Location
//     header itself;
//   - 30 s read, write and wait timeouts, so a stuck server ends in errors,
//     not a hang;
//   - paths are sent as given, without normalization.
func NewClient(concurrency int) *fasthttp.Client {
	concurrency = max(concurrency, 1)
	return &fasthttp.Client{
		MaxConnsPerHost:        concurrency,
		MaxConnWaitTimeout:     30 * time.Second,
		MaxIdleConnDuration:    90 * time.Second,
		ReadTimeout:            30 * time.Second,
		WriteTimeout:           30 * time.Second,
		DisablePathNormalizing: true,
	}
}
