package outbound

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

func TestCheckAddrRefusesInternalRanges(t *testing.T) {
	refused := []string{
		// IPv4: loopback, RFC 1918, link-local (cloud metadata), CGNAT,
		// "this network", broadcast, multicast, reserved, documentation.
		"127.0.0.1", "127.255.255.254", "10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.255",
		"192.168.0.1", "169.254.169.254", "100.64.0.1", "100.127.255.255", "0.0.0.0", "0.1.2.3",
		"255.255.255.255", "224.0.0.1", "239.255.255.250", "240.0.0.1", "192.0.0.8", "192.0.2.1",
		"198.18.0.1", "198.51.100.7", "203.0.113.9",
		// IPv6: unspecified, loopback, link-local (with a zone too), ULA,
		// site-local, multicast, documentation.
		"::", "::1", "fe80::1", "fe80::1%eth0", "fc00::1", "fd12:3456:789a::1", "fec0::1", "ff02::1",
		"2001:db8::1", "3fff::1", "100::1",
		// IPv4 in IPv6: mapped (checked as IPv4), compatible, translated,
		// NAT64, 6to4, Teredo.
		"::ffff:127.0.0.1", "::ffff:10.1.2.3", "::ffff:169.254.169.254", "::ffff:0.0.0.0", "::ffff:7f00:1",
		"::127.0.0.1", "::ffff:0:7f00:1", "64:ff9b::7f00:1", "64:ff9b:1::1", "2002:7f00:1::1", "2001:0:4136:e378::1",
	}
	for _, s := range refused {
		err := Policy{}.CheckAddr(netip.MustParseAddr(s))
		var re *RefusedError
		if !errors.As(err, &re) || re.Range == "" {
			t.Errorf("%s: got %v, want a RefusedError", s, err)
		}
	}
	allowed := []string{
		"8.8.8.8", "1.1.1.1", "93.184.216.34", "172.32.0.1", "172.15.255.255", "100.63.255.255", "100.128.0.1",
		"192.169.0.1", "169.253.255.255", "223.255.255.255", "11.0.0.1",
		"2606:4700:4700::1111", "2a00:1450:4001::200e", "2001:4860:4860::8888", "::ffff:8.8.8.8",
	}
	for _, s := range allowed {
		if err := (Policy{}).CheckAddr(netip.MustParseAddr(s)); err != nil {
			t.Errorf("%s: refused: %v", s, err)
		}
	}
	if got := (&RefusedError{Addr: netip.MustParseAddr("127.0.0.1"), Range: "loopback"}).Error(); !strings.Contains(got, EnvAllowCIDRs) {
		t.Errorf("the error does not name the variable that would allow the address: %s", got)
	}
}

func TestAllowList(t *testing.T) {
	allow, err := ParseAllowList(" 127.0.0.0/8, ::ffff:10.0.0.0/104 ,fd00::/8,192.168.1.7,, ")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.0/8", "10.0.0.0/8", "fd00::/8", "192.168.1.7/32"}
	if len(allow) != len(want) {
		t.Fatalf("parsed %v, want %v", allow, want)
	}
	for i, p := range allow {
		if p.String() != want[i] {
			t.Errorf("entry %d: %s, want %s", i, p, want[i])
		}
	}
	p := Policy{Allow: allow}
	for s, ok := range map[string]bool{
		"127.0.0.1": true, "::ffff:127.0.0.1": true, "10.9.8.7": true, "::ffff:10.9.8.7": true, "fd00::1": true,
		"192.168.1.7": true, "192.168.1.8": false, "::1": false, "169.254.169.254": false, "fc00::1": false,
	} {
		if err := p.CheckAddr(netip.MustParseAddr(s)); (err == nil) != ok {
			t.Errorf("%s: allowed=%v, want %v (%v)", s, err == nil, ok, err)
		}
	}
	if l, err := ParseAllowList(""); err != nil || len(l) != 0 {
		t.Errorf("empty list: %v %v", l, err)
	}
	for _, bad := range []string{"nope", "10.0.0.0/33", "fe80::1%eth0", "10.0.0.0/8,x", "127.0.0.1/-1"} {
		if _, err := ParseAllowList(bad); err == nil || !strings.Contains(err.Error(), "CIDR") {
			t.Errorf("%q: %v, want an error naming the expected form", bad, err)
		}
	}
}

func TestCheckURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://rp.example/bcl":         true,
		"http://rp.example:8080/x?y=1":   true,
		"https://8.8.8.8/x":              true,
		"https://[2606:4700::1111]:443/": true,
		"https://127.example/x":          true, // a name, resolved and checked at dial time
		"http://127.0.0.1:9/bcl":         false,
		"http://localhost:9/":            false,
		"http://LOCALHOST./":             false,
		"http://app.localhost/":          false,
		"http://[::1]/":                  false,
		"http://[::ffff:127.0.0.1]/":     false,
		"http://[fe80::1%25eth0]/":       false,
		"http://169.254.169.254/latest/": false,
		"http://2130706433/":             false, // 127.0.0.1 as inet_aton reads it
		"http://0x7f.1/":                 false,
		"http://127.1/":                  false,
		"http://0177.0.0.1/":             false,
		"http://10.0.0.1/":               false,
		"http://100.64.1.1/":             false,
		"http://0.0.0.0:8080/":           false,
		"http://example.999/":            false, // numeric last label: no valid IPv4 address
		"http://1.2.3.4.5/":              false,
		"http://256.1.1.1/":              false,
		"ftp://rp.example/":              false,
		"/relative":                      false,
		"rp.example/x":                   false,
		"https://user:pw@rp.example/":    false,
		"https://rp.example/#f":          false,
		"https://rp.example/ x":          false,
		"http://rp.example:0/":           false,
		"http://rp.example:70000/":       false,
		"https:///nohost":                false,
		"https://" + strings.Repeat("a", MaxURLLength) + ".example/": false,
	} {
		if err := (Policy{}).CheckURL(raw); (err == nil) != ok {
			t.Errorf("%q: accepted=%v, want %v (%v)", raw, err == nil, ok, err)
		}
	}
	p := Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	for _, raw := range []string{"http://127.0.0.1:9/bcl", "http://localhost/", "http://127.1/", "http://[::ffff:127.0.0.1]/"} {
		if err := p.CheckURL(raw); err != nil {
			t.Errorf("%q with 127.0.0.0/8 allowed: %v", raw, err)
		}
	}
	if err := p.CheckURL("http://10.0.0.1/"); err == nil {
		t.Error("10.0.0.1 accepted with only 127.0.0.0/8 allowed")
	}
}

// counter is a receiver on loopback that counts the requests it gets.
func counter(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

var loopback = Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}

func TestClientRefusesLoopbackAtDialTime(t *testing.T) {
	srv, hits := counter(t, nil)
	_, err := Policy{}.Client().Post(srv.URL+"/bcl", "application/x-www-form-urlencoded", strings.NewReader("logout_token=x"))
	var re *RefusedError
	if !errors.As(err, &re) || re.Addr.String() != "127.0.0.1" {
		t.Fatalf("POST to %s: %v, want a RefusedError for 127.0.0.1", srv.URL, err)
	}
	if hits.Load() != 0 {
		t.Fatalf("the receiver got %d requests", hits.Load())
	}
	res, err := loopback.Client().Get(srv.URL)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("with loopback allowed: %v %v", res, err)
	}
	res.Body.Close()
	if hits.Load() != 1 {
		t.Fatalf("with loopback allowed the receiver got %d requests, want 1", hits.Load())
	}
}

// TestClientChecksTheResolvedAddress resolves a public-looking name to
// loopback (what a rebinding DNS server answers at use time): the check on
// the address dialled refuses it. localhost goes through the system resolver.
func TestClientChecksTheResolvedAddress(t *testing.T) {
	srv, hits := counter(t, nil)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	r := fakeDNS(t, "127.0.0.1")
	for _, c := range []struct {
		name   string
		client *http.Client
	}{
		{"rebind.example", Policy{}.client(r)},
		{"localhost", Policy{}.Client()},
	} {
		_, err := c.client.Get("http://" + c.name + ":" + port + "/")
		var re *RefusedError
		if !errors.As(err, &re) || !re.Addr.IsLoopback() {
			t.Errorf("%s: %v, want a RefusedError for a loopback address", c.name, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the receiver got %d requests", hits.Load())
	}
	res, err := loopback.client(r).Get("http://rebind.example:" + port + "/")
	if err != nil {
		t.Fatalf("with loopback allowed: %v", err)
	}
	res.Body.Close()
	if hits.Load() != 1 {
		t.Fatalf("with loopback allowed the receiver got %d requests, want 1", hits.Load())
	}
}

func TestClientFollowsNoRedirect(t *testing.T) {
	target, targetHits := counter(t, nil)
	redirector, _ := counter(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusTemporaryRedirect)
	})
	res, err := loopback.Client().Post(redirector.URL, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusTemporaryRedirect || targetHits.Load() != 0 {
		t.Fatalf("status %d, redirect target got %d requests; want the 307 itself and none", res.StatusCode, targetHits.Load())
	}
}

func TestClientBoundsTheBody(t *testing.T) {
	srv, _ := counter(t, func(w http.ResponseWriter, r *http.Request) {
		n := MaxResponseBytes
		if r.URL.Path == "/big" {
			n++
		}
		_, _ = w.Write([]byte(strings.Repeat("a", n)))
	})
	for path, wantErr := range map[string]error{"/exact": nil, "/big": ErrResponseTooLarge} {
		res, err := loopback.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if !errors.Is(err, wantErr) || (wantErr == nil && len(b) != MaxResponseBytes) {
			t.Errorf("%s: read %d bytes, %v; want %v", path, len(b), err, wantErr)
		}
	}
}

func TestClientIgnoresProxyEnvironment(t *testing.T) {
	c := Policy{}.Client()
	bt, ok := c.Transport.(boundedTransport)
	if !ok || bt.base.Proxy != nil || c.Timeout != RequestTimeout || c.CheckRedirect == nil {
		t.Fatalf("transport %#v, timeout %v", c.Transport, c.Timeout)
	}
}

// fakeDNS serves A answers of ip for every name on a loopback UDP socket and
// returns a resolver that asks it.
func fakeDNS(t *testing.T, ip string) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	a := netip.MustParseAddr(ip).As4()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
			_ = b.StartQuestions()
			_ = b.Question(q)
			_ = b.StartAnswers()
			if q.Type == dnsmessage.TypeA {
				_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}, dnsmessage.AResource{A: a})
			}
			out, err := b.Finish()
			if err == nil {
				_, _ = pc.WriteTo(out, from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}
