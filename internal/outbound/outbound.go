// Package outbound is the one HTTP client for requests to URLs that a user
// or a client supplied: back-channel logout URIs today, webhooks and a
// client's jwks_uri later. Such a URL may name any host, so a request to it
// could reach the machine itself, the cloud's metadata service
// (169.254.169.254) or a private network behind the firewall (server-side
// request forgery, OWASP SSRF Prevention Cheat Sheet).
//
// The guard works where it cannot be fooled: at dial time. The client's
// dialer resolves the host as usual and then, in net.Dialer.Control, checks
// the address actually being connected to, so a name that resolves to a
// public address when it is registered and to 127.0.0.1 when it is used
// (DNS rebinding) is refused all the same. Internal addresses (loopback,
// private, link-local, CGNAT, multicast, unspecified, reserved and
// documentation ranges, in IPv4, IPv6 and IPv4-mapped IPv6 forms) are
// refused unless the operator lists their range in HMID_OUTBOUND_ALLOW_CIDRS.
//
// The client also follows no redirects (a redirect would carry the request
// to a URL nobody registered), ignores HTTP_PROXY and friends, has short
// timeouts and bounds how much of an answer it reads. CheckURL validates a
// URL early (at registration), for a helpful 400; it does not resolve names,
// so the dial-time check is what must hold.
//
// Operator-configured URLs (upstream sign-in providers, SMTP, PEGELONLINE,
// OTLP) do not use this package: the operator chose them.
package outbound

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"hmid/internal/telemetry"
)

// EnvAllowCIDRs names the variable that lists the internal ranges outbound
// calls may reach anyway (docs/decisions.md).
const EnvAllowCIDRs = "HMID_OUTBOUND_ALLOW_CIDRS"

// Limits of one outbound request. A receiver that is slow or answers at
// length holds a worker; these keep that short.
const (
	// DialTimeout bounds resolving the host and connecting.
	DialTimeout = 5 * time.Second
	// TLSHandshakeTimeout bounds the TLS handshake.
	TLSHandshakeTimeout = 5 * time.Second
	// ResponseHeaderTimeout bounds the wait for the answer's headers once
	// the request is written.
	ResponseHeaderTimeout = 5 * time.Second
	// RequestTimeout bounds the whole request, reading the body included.
	RequestTimeout = 10 * time.Second
	// MaxResponseHeaderBytes bounds the answer's headers.
	MaxResponseHeaderBytes = 64 << 10
	// MaxResponseBytes bounds the answer's body as read through the client;
	// reading past it fails with ErrResponseTooLarge.
	MaxResponseBytes = 1 << 20
	// MaxURLLength bounds a URL that CheckURL accepts.
	MaxURLLength = 2000
)

// ErrResponseTooLarge is returned by a response body read past MaxResponseBytes.
var ErrResponseTooLarge = errors.New("outbound: response body larger than " + strconv.Itoa(MaxResponseBytes) + " bytes")

// RefusedError is a request refused because the address it would reach is
// internal and not allowed by the operator.
type RefusedError struct {
	Addr  netip.Addr // the address refused, unmapped
	Range string     // what kind of address it is, e.g. "loopback"
}

// Error names the address, its kind and the variable that would allow it.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("outbound: address %s is %s and not in %s", e.Addr, e.Range, EnvAllowCIDRs)
}

// special is an address range that outbound calls refuse by default.
type special struct {
	prefix netip.Prefix
	kind   string
}

// specials are the ranges no user-supplied URL may reach unless allowed:
// the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890 and
// updates) entries that are not globally reachable, plus multicast. An
// IPv4-mapped IPv6 address (::ffff:a.b.c.d) is unmapped and checked as IPv4
// before this list is consulted; other forms that embed an IPv4 address
// (IPv4-compatible, NAT64, 6to4, Teredo) are refused whole.
var specials = func() []special {
	list := []struct{ cidr, kind string }{
		// IPv4.
		{"0.0.0.0/8", "unspecified (\"this network\", RFC 791)"},
		{"10.0.0.0/8", "private (RFC 1918)"},
		{"100.64.0.0/10", "shared address space (CGNAT, RFC 6598)"},
		{"127.0.0.0/8", "loopback (RFC 1122)"},
		{"169.254.0.0/16", "link-local (RFC 3927)"},
		{"172.16.0.0/12", "private (RFC 1918)"},
		{"192.0.0.0/24", "reserved for IETF protocol assignments (RFC 6890)"},
		{"192.0.2.0/24", "documentation (RFC 5737)"},
		{"192.88.99.0/24", "6to4 relay anycast (RFC 7526)"},
		{"192.168.0.0/16", "private (RFC 1918)"},
		{"198.18.0.0/15", "benchmarking (RFC 2544)"},
		{"198.51.100.0/24", "documentation (RFC 5737)"},
		{"203.0.113.0/24", "documentation (RFC 5737)"},
		{"224.0.0.0/4", "multicast (RFC 5771)"},
		{"240.0.0.0/4", "reserved or broadcast (RFC 1112, RFC 919)"},
		// IPv6.
		{"::/128", "unspecified (RFC 4291)"},
		{"::1/128", "loopback (RFC 4291)"},
		{"::/96", "IPv4-compatible (deprecated, RFC 4291)"},
		{"::ffff:0:0:0/96", "IPv4-translated (RFC 2765)"},
		{"64:ff9b::/96", "NAT64 (RFC 6052)"},
		{"64:ff9b:1::/48", "local-use NAT64 (RFC 8215)"},
		{"100::/64", "discard-only (RFC 6666)"},
		{"2001::/23", "reserved for IETF protocol assignments (RFC 2928)"},
		{"2001:db8::/32", "documentation (RFC 3849)"},
		{"2002::/16", "6to4 (RFC 3056)"},
		{"3fff::/20", "documentation (RFC 9637)"},
		{"5f00::/16", "segment routing (RFC 9602)"},
		{"fc00::/7", "unique local (ULA, RFC 4193)"},
		{"fe80::/10", "link-local (RFC 4291)"},
		{"fec0::/10", "site-local (deprecated, RFC 3879)"},
		{"ff00::/8", "multicast (RFC 4291)"},
	}
	out := make([]special, len(list))
	for i, s := range list {
		out[i] = special{netip.MustParsePrefix(s.cidr), s.kind}
	}
	return out
}()

// Policy decides which addresses outbound calls may reach. The zero value
// refuses every internal address.
type Policy struct {
	// Allow lists internal ranges that may be reached anyway
	// (HMID_OUTBOUND_ALLOW_CIDRS), as ParseAllowList returns them.
	Allow []netip.Prefix
}

// ParseAllowList parses a comma-separated list of CIDRs (a bare address
// stands for itself). IPv4-mapped IPv6 prefixes are stored as IPv4, as
// addresses are checked unmapped. Empty entries are skipped.
func ParseAllowList(s string) ([]netip.Prefix, error) {
	out, err := ParsePrefixes(s, func(part string) (netip.Prefix, error) {
		a, err := netip.ParseAddr(part)
		if err != nil || a.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR such as 127.0.0.0/8 or fd00::/8", part)
		}
		return netip.PrefixFrom(a, a.BitLen()), nil
	})
	for i, p := range out {
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			out[i] = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
	}
	return out, err
}

// ParsePrefixes parses a comma-separated list of CIDRs, masked, skipping
// empty entries. An entry that is no CIDR goes to addr, which makes it a
// prefix (a bare address standing for itself) or the error that names it;
// the first error ends the list.
func ParsePrefixes(s string, addr func(entry string) (netip.Prefix, error)) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			if p, err = addr(part); err != nil {
				return nil, err
			}
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Classify reports what kind of internal address a is ("" for an ordinary,
// globally reachable one), ignoring any allow list.
func Classify(a netip.Addr) string {
	a = a.WithZone("").Unmap()
	if !a.IsValid() {
		return "not a valid address"
	}
	for _, s := range specials {
		if s.prefix.Contains(a) {
			return s.kind
		}
	}
	return ""
}

// CheckAddr returns nil when a may be reached: it is an ordinary address,
// or it is in an allowed range. Otherwise it returns a *RefusedError.
func (p Policy) CheckAddr(a netip.Addr) error {
	a = a.WithZone("").Unmap()
	kind := Classify(a)
	if kind == "" {
		return nil
	}
	for _, allowed := range p.Allow {
		if allowed.Contains(a) {
			return nil
		}
	}
	return &RefusedError{Addr: a, Range: kind}
}

// control is the dialer's Control hook: it runs after the host is resolved,
// for every address the dialer tries, just before connecting. Checking here,
// and not on a separate lookup, is what defeats DNS rebinding.
func (p Policy) control(network, address string, _ syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return fmt.Errorf("outbound: network %s is not allowed", network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("outbound: cannot check address %q: %w", address, err)
	}
	return p.CheckAddr(ap.Addr())
}

// Client returns the HTTP client for user-supplied URLs under p: the
// dial-time address check, no redirects followed (the 3xx answer is
// returned as it is), no proxy from the environment, the timeouts above and
// bodies bounded to MaxResponseBytes. One client should be shared: it keeps
// connections alive, and a reused connection was checked when it was dialled.
func (p Policy) Client() *http.Client { return p.client(nil) }

// client is Client with a resolver of the test's choosing (nil: the system's).
func (p Policy) client(r *net.Resolver) *http.Client {
	d := &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second, Resolver: r, Control: p.control}
	t := &http.Transport{
		Proxy:                  nil, // a proxy would dial for us, unchecked
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    TLSHandshakeTimeout,
		ResponseHeaderTimeout:  ResponseHeaderTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        30 * time.Second,
	}
	return &http.Client{
		Transport: telemetry.Transport(boundedTransport{t}),
		Timeout:   RequestTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// boundedTransport wraps every response body in a reader that fails past
// MaxResponseBytes, so no caller can read an unbounded answer by mistake.
type boundedTransport struct{ base *http.Transport }

// RoundTrip sends req and bounds the body of the answer.
func (b boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := b.base.RoundTrip(req)
	if err == nil && res.Body != nil {
		res.Body = LimitBody(res.Body, MaxResponseBytes, ErrResponseTooLarge)
	}
	return res, err
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the transport.
func (b boundedTransport) CloseIdleConnections() { b.base.CloseIdleConnections() }

// LimitBody wraps a response body so that reading more than limit bytes
// fails with tooLarge instead of filling memory. A body of exactly limit
// bytes reads whole: the one byte read past the limit tells it from a
// longer one.
func LimitBody(rc io.ReadCloser, limit int64, tooLarge error) io.ReadCloser {
	return &boundedBody{rc: rc, left: limit, tooLarge: tooLarge}
}

// boundedBody reads at most left bytes, then tooLarge if more follow.
type boundedBody struct {
	rc       io.ReadCloser
	left     int64
	tooLarge error
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			return 0, b.tooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// CheckURL validates a user-supplied URL before it is stored: absolute
// http or https, a host, no user information or fragment, at most
// MaxURLLength characters, and a host that is not a literal internal
// address (nor localhost, RFC 6761 §6.3) unless allowed. It does not resolve
// names: that happens, and is checked, when the request is sent.
func (p Policy) CheckURL(raw string) error {
	if len(raw) > MaxURLLength {
		return fmt.Errorf("the URL is longer than %d characters", MaxURLLength)
	}
	if strings.ContainsAny(raw, " \t\r\n\\#") {
		return errors.New("the URL must not contain spaces, backslashes or a fragment")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Opaque != "" {
		return errors.New("the URL must be an absolute http or https URL")
	}
	if u.User != nil {
		return errors.New("the URL must not contain user information")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return errors.New("the URL must name a host")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return errors.New("the URL's port must be from 1 to 65535")
		}
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		// RFC 6761 §6.3: these names are loopback, whatever DNS says.
		// Allowed when either loopback address is: the dialer tries each
		// address the name resolves to.
		if p.CheckAddr(netip.MustParseAddr("::1")) == nil {
			return nil
		}
		return p.CheckAddr(netip.MustParseAddr("127.0.0.1"))
	}
	a, ok, err := literalAddr(host)
	if err != nil {
		return err
	}
	if ok {
		return p.CheckAddr(a)
	}
	return nil
}

// literalAddr reports whether host is an IP address literal, including the
// legacy IPv4 forms (127.1, 0x7f.0.0.1, 2130706433, 0177.0.0.1) that some
// resolvers accept: the WHATWG URL Standard parses a host whose last label
// is a number as IPv4, and so do C libraries' inet_aton. A host whose last
// label looks numeric but is no valid address is an error.
func literalAddr(host string) (netip.Addr, bool, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a, true, nil
	}
	labels := strings.Split(host, ".")
	if !numericLabel(labels[len(labels)-1]) {
		return netip.Addr{}, false, nil
	}
	if len(labels) > 4 {
		return netip.Addr{}, false, errors.New("the URL's host is not a valid name or IPv4 address")
	}
	parts := make([]uint64, len(labels))
	for i, l := range labels {
		n, err := parseIPv4Number(l)
		if err != nil {
			return netip.Addr{}, false, errors.New("the URL's host is not a valid name or IPv4 address")
		}
		parts[i] = n
	}
	// The last part fills the remaining bytes (inet_aton): a.b.c.d, a.b.cd, a.bcd, abcd.
	last := parts[len(parts)-1]
	if last >= 1<<(8*(5-len(parts))) {
		return netip.Addr{}, false, errors.New("the URL's host is not a valid IPv4 address")
	}
	var v uint32
	for _, n := range parts[:len(parts)-1] {
		if n > 255 {
			return netip.Addr{}, false, errors.New("the URL's host is not a valid IPv4 address")
		}
		v = v<<8 | uint32(n)
	}
	v = v<<(8*(5-len(parts))) | uint32(last)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true, nil
}

// numericLabel reports whether a label is a number in the WHATWG sense:
// decimal digits, or 0x followed by hexadecimal digits.
func numericLabel(l string) bool {
	if l == "" {
		return false
	}
	if h, ok := strings.CutPrefix(l, "0x"); ok {
		return strings.Trim(h, "0123456789abcdef") == ""
	}
	return strings.Trim(l, "0123456789") == ""
}

// parseIPv4Number parses one part of a legacy IPv4 address: 0x-prefixed
// hexadecimal, 0-prefixed octal, or decimal.
func parseIPv4Number(l string) (uint64, error) {
	switch {
	case l == "":
		return 0, errors.New("empty")
	case strings.HasPrefix(l, "0x"):
		if l == "0x" {
			return 0, nil
		}
		return strconv.ParseUint(l[2:], 16, 32)
	case len(l) > 1 && l[0] == '0':
		return strconv.ParseUint(l[1:], 8, 32)
	}
	return strconv.ParseUint(l, 10, 32)
}
