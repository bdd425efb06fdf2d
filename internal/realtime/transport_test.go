package realtime

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// socketPair returns a connected loopback TCP pair: server side, client side.
func socketPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// TestSendKeepsOrderThroughABacklog sends far more than the socket holds
// while nobody reads: send must return at once every time, and the client
// must then read every frame, whole and in order, as the writer drains the
// backlog.
func TestSendKeepsOrderThroughABacklog(t *testing.T) {
	h, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	server, client := socketPair(t)
	raw, err := server.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{hub: h, nc: server, raw: raw, limit: 1 << 20}
	const frames = 3000
	pad := strings.Repeat("x", 4000)
	for i := range frames {
		if !c.send(textFrame([]byte(strconv.Itoa(i) + " " + pad))) {
			t.Fatalf("frame %d: queue full", i)
		}
	}
	c.qmu.Lock()
	backlog := c.writing
	c.qmu.Unlock()
	if !backlog {
		t.Fatal("12 MB went out without a backlog: the test no longer tests it")
	}
	for i := range frames {
		msg, err := wsutil.ReadServerText(client)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if want := strconv.Itoa(i) + " " + pad; string(msg) != want {
			t.Fatalf("frame %d: got %.20q…", i, msg)
		}
	}
}

func TestSendReportsAFullQueue(t *testing.T) {
	h, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	server, _ := socketPair(t) // the client never reads
	raw, err := server.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{hub: h, nc: server, raw: raw, limit: 4}
	big := textFrame([]byte(strings.Repeat("x", 1<<20)))
	for i := range 1000 {
		if !c.send(big) {
			return // the socket filled, then the queue: a slow consumer
		}
		if i == 999 {
			t.Fatal("1 GB went to a client that never reads")
		}
	}
}

func TestCloseCodeFor(t *testing.T) {
	for _, c := range []struct {
		err  error
		want ws.StatusCode
	}{
		{wsutil.ErrMessageTooLarge, ws.StatusMessageTooBig},
		{fmt.Errorf("read: %w", wsutil.ErrFrameTooLarge), ws.StatusMessageTooBig},
		{wsutil.ErrInvalidUTF8, ws.StatusInvalidFramePayloadData},
		{ws.ErrProtocolMaskRequired, ws.StatusProtocolError},
		{io.EOF, 0},
		{net.ErrClosed, 0},
		{errors.New("other"), 0},
	} {
		if got, _ := closeCodeFor(c.err); got != c.want {
			t.Errorf("closeCodeFor(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

func TestCloseFrameFitsAControlFrame(t *testing.T) {
	f, err := ws.ReadFrame(strings.NewReader(string(closeFrame(ws.StatusPolicyViolation, strings.Repeat("r", 300)))))
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.OpCode != ws.OpClose || len(f.Payload) > 125 {
		t.Fatalf("%+v, %d bytes", f.Header, len(f.Payload))
	}
	if code, _ := ws.ParseCloseFrameData(f.Payload); code != ws.StatusPolicyViolation {
		t.Fatalf("code %d", code)
	}
}

// TestSendWithoutADescriptor covers connections that are not sockets of
// their own (TLS ended in process): every frame goes through the writer.
func TestSendWithoutADescriptor(t *testing.T) {
	h, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	server, client := net.Pipe()
	defer client.Close()
	c := &conn{hub: h, nc: server, limit: 16}
	for i := range 3 {
		if !c.send(textFrame([]byte(strconv.Itoa(i)))) {
			t.Fatal("queue full")
		}
	}
	for i := range 3 {
		msg, err := wsutil.ReadServerText(client)
		if err != nil || string(msg) != strconv.Itoa(i) {
			t.Fatalf("frame %d: %q, %v", i, msg, err)
		}
	}
}
