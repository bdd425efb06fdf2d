// Package wsclient holds the clients of the WebSocket fan-out benchmark: N
// connections to the real-time channel, each subscribed to one topic, that record
// for every event they receive the delay between the event's timestamp and
// its arrival. They run in a process of their own, so that the server's
// resident memory is measured alone and the file-descriptor limit is not
// shared.
//
// The clients share the machine with the server, so their own cost is
// counted in every delay they report. They are therefore built to cost
// little: after the handshake (gobwas/ws) a few goroutines wait on epoll for
// all sockets at once and read each frame with one system call, instead of
// one goroutine, two reads and a timer per message.
package wsclient

import "errors"

// Config describes the clients.
type Config struct {
	URL         string   // ws://host/v1/ws
	Token       string   // bearer of every client
	Topics      []string // connection i subscribes to Topics[i % len(Topics)]
	Connections int
	Dialers     int // concurrent handshakes (default 64)
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

// ErrUnsupported means the clients cannot run on this system: they wait on
// epoll, which only Linux has.
var ErrUnsupported = errors.New("wsclient: the benchmark clients need Linux (epoll)")
