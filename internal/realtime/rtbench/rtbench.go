// Package rtbench measures the real-time channel under many connections: it
// opens N WebSocket clients subscribed to one topic and records, for every
// event they receive, the delay between the publisher's timestamp (sent_at,
// Unix nanoseconds in the payload) and its arrival. The clients can run in a
// process of their own, so the server's resident memory is measured alone
// and the per-process file-descriptor limit is not shared.
package rtbench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Config describes the clients.
type Config struct {
	URL         string // ws://host/v1/ws
	Token       string // bearer of every client
	Topic       string // topic every client subscribes to
	Connections int
	Dialers     int // concurrent handshakes (default 64)
}

// Clients are open, subscribed connections.
type Clients struct {
	conns []*websocket.Conn
}

// Dial opens and subscribes every connection, waiting for each ack.
func Dial(ctx context.Context, cfg Config) (*Clients, error) {
	if cfg.Dialers <= 0 {
		cfg.Dialers = 64
	}
	c := &Clients{conns: make([]*websocket.Conn, cfg.Connections)}
	jobs := make(chan int)
	errs := make(chan error, cfg.Dialers)
	var wg sync.WaitGroup
	hdr := http.Header{"Authorization": {"Bearer " + cfg.Token}}
	sub, _ := json.Marshal(map[string]string{"type": "subscribe", "id": "s", "topic": cfg.Topic})
	for range cfg.Dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				ws, _, err := websocket.Dial(dctx, cfg.URL, &websocket.DialOptions{HTTPHeader: hdr})
				if err == nil {
					err = ws.Write(dctx, websocket.MessageText, sub)
				}
				if err == nil {
					var b []byte
					_, b, err = ws.Read(dctx)
					if err == nil && !strings.Contains(string(b), `"ack"`) {
						err = fmt.Errorf("subscribe answered %s", b)
					}
				}
				cancel()
				if err != nil {
					errs <- fmt.Errorf("connection %d: %w", i, err)
					return
				}
				c.conns[i] = ws
			}
		}()
	}
	var firstErr error
feed:
	for i := range cfg.Connections {
		select {
		case jobs <- i:
		case firstErr = <-errs:
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr == nil {
		select {
		case firstErr = <-errs:
		default:
		}
	}
	if firstErr != nil {
		c.Close()
		return nil, firstErr
	}
	return c, nil
}

// Close closes every connection.
func (c *Clients) Close() {
	for _, ws := range c.conns {
		if ws != nil {
			_ = ws.CloseNow()
		}
	}
}

// Result is what the clients saw.
type Result struct {
	Connections int     `json:"connections"`
	Expected    int     `json:"expected"` // events × connections
	Received    int     `json:"received"`
	P50ms       float64 `json:"p50_ms"`
	P99ms       float64 `json:"p99_ms"`
	Maxms       float64 `json:"max_ms"`
}

// Collect reads until every connection has received events events or ctx
// ends, and returns the delivery latencies.
func (c *Clients) Collect(ctx context.Context, events int) Result {
	var mu sync.Mutex
	all := make([]time.Duration, 0, events*len(c.conns))
	var wg sync.WaitGroup
	for _, ws := range c.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, events)
			for len(lat) < events {
				_, b, err := ws.Read(ctx)
				now := time.Now()
				if err != nil {
					break
				}
				var m struct {
					Payload struct {
						SentAt int64 `json:"sent_at"`
					} `json:"payload"`
				}
				if json.Unmarshal(b, &m) == nil && m.Payload.SentAt > 0 {
					lat = append(lat, now.Sub(time.Unix(0, m.Payload.SentAt)))
				}
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(all)
	r := Result{Connections: len(c.conns), Expected: events * len(c.conns), Received: len(all)}
	if len(all) > 0 {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		r.P50ms = ms(all[len(all)/2])
		r.P99ms = ms(all[min(len(all)-1, len(all)*99/100)])
		r.Maxms = ms(all[len(all)-1])
	}
	return r
}

// Payload is an event payload carrying its publish time.
func Payload(seq int) map[string]any {
	return map[string]any{"seq": seq, "sent_at": time.Now().UnixNano(), "latitude": 52.52, "longitude": 13.405}
}

// RSSBytes returns this process's resident set size (Linux /proc), or 0.
func RSSBytes() int64 { return procStatus("VmRSS:") }

// PeakRSSBytes returns this process's peak resident set size (Linux /proc), or 0.
func PeakRSSBytes() int64 { return procStatus("VmHWM:") }

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
