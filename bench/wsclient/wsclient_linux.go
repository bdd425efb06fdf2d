//go:build linux

package wsclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"golang.org/x/sys/unix"
)

// Clients are open, subscribed connections.
type Clients struct {
	conns []*client
}

// client is one connection, owned by the reader after Dial: fd is a
// non-blocking socket outside Go's poller, pending holds a partial frame.
type client struct {
	fd      int
	pending []byte
	got     int
}

// Dial opens and subscribes every connection, waiting for each ack.
func Dial(ctx context.Context, cfg Config) (*Clients, error) {
	if cfg.Dialers <= 0 {
		cfg.Dialers = 64
	}
	c := &Clients{conns: make([]*client, cfg.Connections)}
	jobs := make(chan int)
	errs := make(chan error, cfg.Dialers)
	var wg sync.WaitGroup
	dialer := ws.Dialer{Header: ws.HandshakeHeaderHTTP(http.Header{"Authorization": {"Bearer " + cfg.Token}})}
	for range cfg.Dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				sub := fmt.Sprintf(`{"type":"subscribe","id":"s","topic":%q}`, cfg.Topics[i%len(cfg.Topics)])
				cl, err := dialOne(dctx, dialer, cfg.URL, sub)
				cancel()
				if err != nil {
					errs <- fmt.Errorf("connection %d: %w", i, err)
					return
				}
				c.conns[i] = cl
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

// dialOne performs the handshake, subscribes, waits for the ack and takes
// the socket out of Go's poller: it returns a duplicate descriptor in
// non-blocking mode and closes the original.
func dialOne(ctx context.Context, d ws.Dialer, url, sub string) (*client, error) {
	conn, br, _, err := d.Dial(ctx, url)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	var rd io.Reader = conn
	if br != nil { // the server spoke before the subscription: keep its bytes
		rd = io.MultiReader(br, conn)
	}
	if err := wsutil.WriteClientText(conn, []byte(sub)); err != nil {
		return nil, err
	}
	ack, err := wsutil.ReadServerText(struct {
		io.Reader
		io.Writer
	}{rd, conn})
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(ack, []byte(`"ack"`)) {
		return nil, fmt.Errorf("subscribe answered %s", ack)
	}
	if br != nil && br.Buffered() > 0 {
		return nil, errors.New("unexpected data after the subscription's ack")
	}
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var dupErr error
	if err := raw.Control(func(s uintptr) { fd, dupErr = unix.Dup(int(s)) }); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, dupErr
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &client{fd: fd}, nil
}

// Close closes every connection.
func (c *Clients) Close() {
	for _, cl := range c.conns {
		if cl != nil && cl.fd >= 0 {
			unix.Close(cl.fd)
			cl.fd = -1
		}
	}
}

// Collect reads until every connection has received events events or ctx
// ends, and returns the delivery latencies. stamp extracts an event's
// timestamp from its message (0: not an event to measure).
func (c *Clients) Collect(ctx context.Context, events int, stamp func(msg []byte) time.Time) (Result, error) {
	workers := min(runtime.GOMAXPROCS(0), len(c.conns))
	lats := make([][]time.Duration, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		var mine []*client
		for i := w; i < len(c.conns); i += workers {
			mine = append(mine, c.conns[i])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			lats[w], errs[w] = collect(ctx, mine, events, stamp)
		}()
	}
	wg.Wait()
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	r := Result{Connections: len(c.conns), Expected: events * len(c.conns), Received: len(all)}
	if len(all) > 0 {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
		r.P50ms = ms(all[len(all)/2])
		r.P99ms = ms(all[min(len(all)-1, len(all)*99/100)])
		r.Maxms = ms(all[len(all)-1])
	}
	return r, errors.Join(errs...)
}

// While events flow the readers poll every pollNap; after quietPolls empty
// polls they block in epoll_wait.
const (
	pollNap    = 200 * time.Microsecond
	quietPolls = 50
)

// collect serves conns from one epoll set (level-triggered: one read per
// readiness, the rest of a burst is reported again).
func collect(ctx context.Context, conns []*client, events int, stamp func([]byte) time.Time) ([]time.Duration, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(ep)
	for i, cl := range conns {
		// The event carries the client's index (Fd is just a 32-bit slot).
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, cl.fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}); err != nil {
			return nil, err
		}
	}
	lat := make([]time.Duration, 0, events*len(conns))
	buf := make([]byte, 64<<10)
	evs := make([]unix.EpollEvent, 512)
	open := len(conns)
	quiet := 0 // polls in a row that found nothing
	for open > 0 && ctx.Err() == nil {
		// While events flow, poll and nap instead of sleeping in epoll_wait:
		// waking a sleeping reader is work the kernel does inside the
		// server's write call, which would slow the fan-out being measured.
		// A nap adds at most pollNap to a delay; after a quiet spell the
		// reader blocks until the next event.
		timeout := 0
		if quiet >= quietPolls {
			timeout = 100
		}
		n, err := unix.EpollWait(ep, evs, timeout)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return lat, err
		}
		if n == 0 {
			quiet++
			if timeout == 0 {
				time.Sleep(pollNap)
			}
			continue
		}
		quiet = 0
		for _, ev := range evs[:n] {
			cl := conns[ev.Fd]
			r, err := unix.Read(cl.fd, buf)
			now := time.Now()
			if errors.Is(err, unix.EAGAIN) {
				continue
			}
			if err != nil || r == 0 {
				return lat, fmt.Errorf("connection closed after %d events: %v", cl.got, err)
			}
			if lat, err = cl.frames(buf[:r], now, lat, stamp); err != nil {
				return lat, err
			}
			if cl.got >= events {
				_ = unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, cl.fd, nil)
				open--
			}
		}
	}
	return lat, nil
}

// frames parses the complete frames in the connection's pending bytes plus
// data, appends the delay of each measured event to lat and keeps a partial
// frame for the next read. Pings are answered (RFC 6455 §5.5.2).
func (cl *client) frames(data []byte, now time.Time, lat []time.Duration, stamp func([]byte) time.Time) ([]time.Duration, error) {
	if len(cl.pending) > 0 {
		cl.pending = append(cl.pending, data...)
		data = cl.pending
	}
	for len(data) > 0 {
		rd := bytes.NewReader(data)
		h, err := ws.ReadHeader(rd)
		if err != nil || int64(rd.Len()) < h.Length {
			break // partial frame: wait for the rest
		}
		start := len(data) - rd.Len()
		payload := data[start : start+int(h.Length)]
		data = data[start+int(h.Length):]
		switch h.OpCode {
		case ws.OpText:
			if t := stamp(payload); !t.IsZero() {
				lat = append(lat, now.Sub(t))
				cl.got++
			}
		case ws.OpPing:
			pong := ws.MustCompileFrame(ws.MaskFrame(ws.NewPongFrame(slices.Clone(payload))))
			if _, err := unix.Write(cl.fd, pong); err != nil {
				return lat, err
			}
		case ws.OpClose:
			code, reason := ws.ParseCloseFrameData(payload)
			return lat, fmt.Errorf("server closed the connection: %d %s", code, reason)
		}
	}
	cl.pending = append(cl.pending[:0], data...)
	return lat, nil
}
