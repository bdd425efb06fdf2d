// Package redirecturi holds the rules of OAuth redirect URIs: which ones a
// client may register (Normalize: exact URIs, RFC 9700 §4.1.3, with the
// native-app forms of RFC 8252 §7), how an authorization request's
// redirect_uri is matched against them (Match: exact string comparison but
// for a loopback port, RFC 8252 §7.3), and how the response parameters are
// added to one (Build: its own query kept, RFC 6749 §3.1.2). The same
// rules serve post-logout redirect URIs (RP-Initiated Logout 1.0 §3.1).
package redirecturi

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"hmid/internal/apperr"
)

// docs/decisions.md, "Native apps", gives the rules in prose.

// schemeRE is an RFC 3986 §3.1 scheme, in any case.
var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.\-]*$`)

// blockedSchemes run code or read local data in the browser; they are never
// a place to send an authorization response to.
var blockedSchemes = []string{"javascript", "data", "vbscript", "file", "blob", "about"}

// responseParams are the parameters an authorization response adds to the
// redirect URI (RFC 6749 §4.1.2, §4.1.2.1; RFC 9207). A registered URI may
// not carry them in its own query: the client could not tell its own value
// from the server's.
var responseParams = []string{"code", "state", "iss", "error", "error_description", "error_uri"}

// maxRedirectURI bounds a redirect URI's length (spec 1 limits).
const maxRedirectURI = 2000

// Normalize checks a redirect URI for registration and returns the
// form to store: the URI itself with its scheme lowercased (RFC 3986 §3.1:
// schemes are case-insensitive, "HTTP://x" is "http://x"). Everything after
// the scheme is kept byte for byte, since requests must match it exactly.
//
// Accepted: http and https URIs with a host (RFC 6749 §3.1.2); private-use
// schemes as <scheme>://… (spec 1) or, for a reverse-domain scheme with a
// dot, as <scheme>:/path (RFC 8252 §7.1). Refused, as validation errors:
// fragments (RFC 6749 §3.1.2), user information, a "*" in the host
// (wildcards; RFC 9700 §4.1.3 wants exact URIs), ports outside 1..65535, the
// schemes of blockedSchemes, whitespace, backslashes and control characters,
// and a query carrying a response parameter.
func Normalize(raw string) (string, error) {
	if err := checkRedirectChars(raw); err != nil {
		return "", err
	}
	colon := strings.IndexByte(raw, ':')
	if colon < 1 || !schemeRE.MatchString(raw[:colon]) {
		return "", apperr.Invalid("redirect URI %q is not an absolute URI with a scheme", raw)
	}
	scheme := strings.ToLower(raw[:colon])
	norm, rest := scheme+raw[colon:], raw[colon+1:]
	for _, b := range blockedSchemes {
		if scheme == b {
			return "", apperr.Invalid("redirect URI scheme %s is not allowed", scheme)
		}
	}
	u, err := url.Parse(norm)
	if err != nil {
		return "", apperr.Invalid("redirect URI %q is not a valid URI", raw)
	}
	hasAuthority := strings.HasPrefix(rest, "//")
	if err := checkRedirectForm(raw, scheme, rest, u); err != nil {
		return "", err
	}
	if hasAuthority {
		if err := checkAuthority(raw, rest[2:], u); err != nil {
			return "", err
		}
	}
	if name, ok := responseParamIn(u.RawQuery); ok {
		return "", apperr.Invalid("redirect URI %q must not carry the response parameter %s in its query", raw, name)
	}
	return norm, nil
}

// checkRedirectChars refuses an empty or overlong redirect URI, whitespace,
// control characters, backslashes and fragments (RFC 6749 §3.1.2).
func checkRedirectChars(raw string) error {
	if raw == "" || len(raw) > maxRedirectURI {
		return apperr.Invalid("redirect URIs must be 1 to %d characters", maxRedirectURI)
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c == 0x7f || c == '\\' {
			return apperr.Invalid("redirect URI %q contains whitespace, a control character or a backslash", raw)
		}
	}
	if strings.Contains(raw, "#") {
		return apperr.Invalid("redirect URI %q must not contain a fragment (RFC 6749 §3.1.2)", raw)
	}
	return nil
}

// checkRedirectForm checks the shape after the scheme: http(s) needs a host
// (RFC 6749 §3.1.2), a private-use scheme is <scheme>://… or, when
// reverse-domain, <scheme>:/path (RFC 8252 §7.1). rest follows the colon.
func checkRedirectForm(raw, scheme, rest string, u *url.URL) error {
	hasAuthority := strings.HasPrefix(rest, "//")
	switch {
	case scheme == "http" || scheme == "https":
		if !hasAuthority || u.Host == "" {
			return apperr.Invalid("redirect URI %q needs a host", raw)
		}
	case hasAuthority:
		if len(rest) == 2 {
			return apperr.Invalid("redirect URI %q has nothing after %s://", raw, scheme)
		}
	case strings.HasPrefix(rest, "/") && strings.Contains(scheme, "."):
		// RFC 8252 §7.1: com.example.app:/oauth2redirect.
	case strings.HasPrefix(rest, "/"):
		return apperr.Invalid("redirect URI %q: the form <scheme>:/path needs a reverse-domain scheme such as com.example.app (RFC 8252 §7.1)", raw)
	default:
		return apperr.Invalid("redirect URI %q must have the form <scheme>://… or, with a reverse-domain scheme, <scheme>:/path", raw)
	}
	return nil
}

// checkAuthority refuses user information, wildcard hosts and bad ports in
// the authority of a redirect URI; after is what follows "//".
func checkAuthority(raw, after string, u *url.URL) error {
	authority := after
	if i := strings.IndexAny(after, "/?"); i >= 0 {
		authority = after[:i]
	}
	if u.User != nil || strings.Contains(authority, "@") {
		return apperr.Invalid("redirect URI %q must not contain user information", raw)
	}
	if strings.Contains(authority, "*") {
		return apperr.Invalid("redirect URI %q must not contain a wildcard host (RFC 9700 §4.1.3: redirect URIs match exactly)", raw)
	}
	if strings.HasSuffix(authority, ":") {
		return apperr.Invalid("redirect URI %q has an empty port", raw)
	}
	if p := u.Port(); p != "" && !validPort(p) {
		return apperr.Invalid("redirect URI %q has a port outside 1 to 65535", raw)
	}
	return nil
}

// responseParamIn reports the first response parameter named in a raw query.
func responseParamIn(rawQuery string) (string, bool) {
	if rawQuery == "" {
		return "", false
	}
	for _, pair := range strings.Split(rawQuery, "&") {
		name, _, _ := strings.Cut(pair, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		for _, p := range responseParams {
			if name == p {
				return p, true
			}
		}
	}
	return "", false
}

// validPort reports whether p is a decimal port number from 1 to 65535.
func validPort(p string) bool {
	if p == "" || len(p) > 5 {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
	}
	n, _ := strconv.Atoi(p)
	return n >= 1 && n <= 65535
}

// loopbackHosts are the loopback IP literals of RFC 8252 §7.3, with the
// http scheme they are used with. "localhost" is not among them: RFC 8252
// §8.3 advises against it (it may resolve elsewhere, and a firewall may see
// it differently), so a localhost URI matches only exactly.
var loopbackHosts = []string{"http://127.0.0.1", "http://[::1]"}

// loopbackWithoutPort returns a loopback redirect URI without its port:
// "http://127.0.0.1:5000/cb?x" gives "http://127.0.0.1/cb?x". ok is false
// for any other URI, and for a loopback URI with an invalid port.
func loopbackWithoutPort(uri string) (string, bool) {
	for _, host := range loopbackHosts {
		rest, found := strings.CutPrefix(uri, host)
		if !found {
			continue
		}
		if after, hasPort := strings.CutPrefix(rest, ":"); hasPort {
			end := strings.IndexAny(after, "/?#")
			if end < 0 {
				end = len(after)
			}
			if !validPort(after[:end]) {
				return "", false
			}
			rest = after[end:]
		}
		// Anything but a path or a query here would change the host
		// ("http://127.0.0.1.evil.example", "http://127.0.0.1@evil.example").
		if rest != "" && rest[0] != '/' && rest[0] != '?' {
			return "", false
		}
		return host + rest, true
	}
	return "", false
}

// Match reports whether an authorization request's redirect_uri
// is allowed for a client with the registered URIs. The match is exact
// string comparison (RFC 9700 §4.1.3), with one exception: a registered
// loopback URI (http with 127.0.0.1 or [::1]) matches the same URI with any
// port, since a native app listens on a port the operating system picks at
// run time (RFC 8252 §7.3). Scheme, host, path and query still match exactly.
// The token request must then repeat the redirect_uri with the very port the
// authorization request used (RFC 6749 §4.1.3).
func Match(registered []string, requested string) bool {
	for _, r := range registered {
		if r == requested {
			return true
		}
	}
	want, ok := loopbackWithoutPort(requested)
	if !ok {
		return false
	}
	for _, r := range registered {
		if got, ok := loopbackWithoutPort(r); ok && got == want {
			return true
		}
	}
	return false
}

// Build returns base with the non-empty params appended to its
// query. The base's own query is kept byte for byte, never decoded and
// encoded again (RFC 6749 §3.1.2: the query component "MUST be retained"),
// so a client sees exactly the query it registered, followed by ours.
func Build(base string, params url.Values) string {
	add := url.Values{}
	for k, vs := range params {
		if len(vs) > 0 && vs[0] != "" {
			add.Set(k, vs[0])
		}
	}
	enc := add.Encode()
	if enc == "" {
		return base
	}
	// A configured login URL may carry a fragment; the query goes before it.
	base, frag, hasFrag := strings.Cut(base, "#")
	switch {
	case !strings.Contains(base, "?"):
		base += "?"
	case !strings.HasSuffix(base, "?") && !strings.HasSuffix(base, "&"):
		base += "&"
	}
	out := base + enc
	if hasFrag {
		out += "#" + frag
	}
	return out
}
