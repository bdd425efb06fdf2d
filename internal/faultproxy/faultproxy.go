// Package faultproxy is a TCP proxy for tests that puts a dependency
// (PostgreSQL, Redis) behind a port of its own and can make it fail the ways
// real ones do: freeze (connections stay open and every byte is held, as
// with a server stopped by SIGSTOP or a network that swallows packets), thaw,
// and close (connections cut and refused, as with a server that stopped).
package faultproxy

import (
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy forwards a local port to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	thawed chan struct{} // non-nil while frozen; closed by Thaw
	conns  []net.Conn
}

// New forwards a port on 127.0.0.1 to target (host:port) until the test ends.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target}
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

// pipe copies src to dst, holding every chunk while the proxy is frozen.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.thawed
			p.mu.Unlock()
			if gate != nil {
				<-gate
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Freeze stops forwarding; connections stay open and new ones are accepted,
// as a stopped server's kernel accepts them.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.thawed == nil {
		p.thawed = make(chan struct{})
	}
}

// Thaw forwards again what was held and what follows.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.thawed != nil {
		close(p.thawed)
		p.thawed = nil
	}
}

// Close refuses new connections and cuts the open ones.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Thaw()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Via returns rawURL with its host:port replaced by the proxy's.
func (p *Proxy) Via(t testing.TB, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.Addr()
	return u.String()
}

// HostOf returns the host:port of a URL, the target of a proxy in front of it.
func HostOf(t testing.TB, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
