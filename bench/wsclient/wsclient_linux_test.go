//go:build linux

package wsclient

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"golang.org/x/sys/unix"
)

// stampOf reads a stamp written as the whole text payload (Unix nanoseconds).
func stampOf(msg []byte) time.Time {
	n, err := strconv.ParseInt(string(msg), 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func TestFramesAcrossReads(t *testing.T) {
	sent := time.Unix(1_700_000_000, 0)
	var stream []byte
	for i := range 3 {
		p := []byte(strconv.FormatInt(sent.Add(time.Duration(i)*time.Millisecond).UnixNano(), 10))
		stream = append(stream, ws.MustCompileFrame(ws.NewTextFrame(p))...)
	}
	now := sent.Add(10 * time.Millisecond)
	// Every split point: a frame may arrive in pieces, and two in one read.
	for cut := 1; cut < len(stream); cut++ {
		cl := &client{fd: -1}
		lat, err := cl.frames(stream[:cut], now, nil, stampOf)
		if err != nil {
			t.Fatal(err)
		}
		if lat, err = cl.frames(stream[cut:], now, lat, stampOf); err != nil {
			t.Fatal(err)
		}
		if cl.got != 3 || len(lat) != 3 || len(cl.pending) != 0 {
			t.Fatalf("cut %d: got %d, latencies %v, pending %d bytes", cut, cl.got, lat, len(cl.pending))
		}
		for i, d := range lat {
			if want := 10*time.Millisecond - time.Duration(i)*time.Millisecond; d != want {
				t.Fatalf("cut %d: latency %d is %v, want %v", cut, i, d, want)
			}
		}
	}
}

func TestFramesAnswerPingsAndStopAtClose(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	cl := &client{fd: fds[0]}
	if _, err := cl.frames(ws.MustCompileFrame(ws.NewPingFrame([]byte("hi"))), time.Now(), nil, stampOf); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err := unix.Read(fds[1], buf)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ws.ReadFrame(bytes.NewReader(buf[:n]))
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.OpCode != ws.OpPong || !f.Header.Masked {
		t.Fatalf("answer to a ping: %+v", f.Header)
	}
	ws.Cipher(f.Payload, f.Header.Mask, 0)
	if string(f.Payload) != "hi" {
		t.Fatalf("pong payload %q", f.Payload)
	}
	closing := ws.MustCompileFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusPolicyViolation, "slow consumer")))
	if _, err := cl.frames(closing, time.Now(), nil, stampOf); err == nil {
		t.Fatal("a close frame did not end the connection")
	}
}
