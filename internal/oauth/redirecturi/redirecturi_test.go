package redirecturi

import (
	"net/url"
	"strings"
	"testing"
)

func TestNormalizeRedirectURI(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "" = refused
	}{
		{"https://app.example/cb", "https://app.example/cb"},
		{"https://app.example/cb?a=1&b=%2F", "https://app.example/cb?a=1&b=%2F"},
		{"HTTP://App.Example/CB", "http://App.Example/CB"},
		{"HttpS://app.example:8443/cb", "https://app.example:8443/cb"},
		{"http://127.0.0.1/cb", "http://127.0.0.1/cb"},
		{"http://127.0.0.1:1234/cb", "http://127.0.0.1:1234/cb"},
		{"http://[::1]/cb", "http://[::1]/cb"},
		{"http://[::1]:65535/cb", "http://[::1]:65535/cb"},
		{"http://localhost:3000/cb", "http://localhost:3000/cb"},
		{"com.example.app:/cb", "com.example.app:/cb"},
		{"Com.Example.App:/oauth2redirect/provider?x=1", "com.example.app:/oauth2redirect/provider?x=1"},
		{"com.example.app://cb", "com.example.app://cb"},
		{"myapp://callback", "myapp://callback"},
		{"myapp:/cb", ""},          // single slash needs a reverse-domain scheme (RFC 8252 §7.1)
		{"myapp:callback", ""},     // no path
		{"com.example.app:cb", ""}, // RFC 8252 §7.1 paths start with a slash
		{"myapp://", ""},
		{"https://*.example/cb", ""},
		{"https://*/cb", ""},
		{"https://app.example:70000/cb", ""},
		{"https://app.example:0/cb", ""},
		{"https://app.example:/cb", ""},
		{"http://[::1]:65536/cb", ""},
		{"https://app.example/cb#frag", ""},
		{"https://app.example/cb#", ""},
		{"https://user:pw@app.example/cb", ""},
		{"https://user@app.example/cb", ""},
		{"myapp://user@cb", ""},
		{"myapp://*.cb/x", ""},
		{"https://app.example/cb?code=1", ""},
		{"https://app.example/cb?x=1&state=2", ""},
		{"https://app.example/cb?%69ss=2", ""},
		{"javascript://alert(1)", ""},
		{"JavaScript://alert(1)", ""},
		{"data://text/html,hi", ""},
		{"https://", ""},
		{"https:/app.example/cb", ""},
		{"/relative", ""},
		{"app.example/cb", ""},
		{"", ""},
		{"https://a.example/ cb", ""},
		{"https://a.example/\tcb", ""},
		{"https://a.example\\@evil.example/", ""},
		{"https://a.example/" + strings.Repeat("x", 2000), ""},
	} {
		got, err := Normalize(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("Normalize(%q) = %q, want refusal", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestMatchRedirectURI(t *testing.T) {
	reg := []string{
		"https://app.example/cb?a=1",
		"http://127.0.0.1/cb",
		"http://127.0.0.1:1234/port",
		"http://[::1]/cb6",
		"http://localhost:3000/cb",
		"com.example.app:/cb",
	}
	for _, tc := range []struct {
		uri string
		ok  bool
	}{
		{"https://app.example/cb?a=1", true},
		{"https://app.example/cb?a=1&b=2", false},
		{"https://app.example/cb", false},
		{"https://app.example:443/cb?a=1", false},
		{"http://127.0.0.1/cb", true},
		{"http://127.0.0.1:49152/cb", true},
		{"http://127.0.0.1:1/cb", true},
		{"http://127.0.0.1:65535/cb", true},
		{"http://127.0.0.1:65536/cb", false},
		{"http://127.0.0.1:0/cb", false},
		{"http://127.0.0.1:/cb", false},
		{"http://127.0.0.1:abc/cb", false},
		{"http://127.0.0.1:5000/cb/", false},
		{"http://127.0.0.1:5000/cb?x=1", false},
		{"http://127.0.0.1:5000/CB", false},
		{"https://127.0.0.1:5000/cb", false},
		{"HTTP://127.0.0.1:5000/cb", false},
		{"http://127.0.0.1:1234/port", true},
		{"http://127.0.0.1:9999/port", true},
		{"http://127.0.0.1/port", true},
		{"http://[::1]:8080/cb6", true},
		{"http://[::1]/cb6", true},
		{"http://[::1]:8080/cb", false},      // the IPv4 registration does not cover IPv6
		{"http://127.0.0.1:8080/cb6", false}, // nor the other way round
		{"http://127.0.0.2:8080/cb", false},
		{"http://127.0.0.1.evil.example/cb", false},
		{"http://127.0.0.1@evil.example/cb", false},
		{"http://127.0.0.1:80@evil.example/cb", false},
		{"http://localhost:3000/cb", true},
		{"http://localhost:3001/cb", false}, // localhost is not loopback for the any-port rule
		{"http://localhost/cb", false},
		{"com.example.app:/cb", true},
		{"com.example.app:/cb2", false},
	} {
		if got := Match(reg, tc.uri); got != tc.ok {
			t.Errorf("Match(%q) = %v, want %v", tc.uri, got, tc.ok)
		}
	}
}

func TestBuildRedirect(t *testing.T) {
	p := url.Values{"code": {"c"}, "state": {"s t"}, "iss": {"https://id.example"}, "error": {""}}
	for _, tc := range []struct{ base, want string }{
		{"https://app.example/cb", "https://app.example/cb?code=c&iss=https%3A%2F%2Fid.example&state=s+t"},
		{"https://app.example/cb?a=1&b=%2F", "https://app.example/cb?a=1&b=%2F&code=c&iss=https%3A%2F%2Fid.example&state=s+t"},
		{"https://app.example/cb?z=%7e&a=1;b", "https://app.example/cb?z=%7e&a=1;b&code=c&iss=https%3A%2F%2Fid.example&state=s+t"},
		{"https://app.example/cb?", "https://app.example/cb?code=c&iss=https%3A%2F%2Fid.example&state=s+t"},
		{"com.example.app:/cb?x=1", "com.example.app:/cb?x=1&code=c&iss=https%3A%2F%2Fid.example&state=s+t"},
		{"https://login.example/in#top", "https://login.example/in?code=c&iss=https%3A%2F%2Fid.example&state=s+t#top"},
	} {
		if got := Build(tc.base, p); got != tc.want {
			t.Errorf("Build(%q) = %q, want %q", tc.base, got, tc.want)
		}
	}
	if got := Build("https://app.example/cb?a=1", url.Values{"state": {""}}); got != "https://app.example/cb?a=1" {
		t.Errorf("no parameters: %q", got)
	}
}

// FuzzRedirectURI checks the registration rules against their definition:
// whatever is accepted is a parseable absolute URI without fragment, user
// information, wildcard or bad port, with a lowercase scheme that is not a
// dangerous one, differs from the input only in the scheme's case, and is
// accepted again unchanged.
func FuzzRedirectURI(f *testing.F) {
	for _, s := range []string{"https://app.example/cb", "myapp://cb", "com.example.app:/cb?x=1", "javascript://x", "http://a/#f",
		"/rel", "", "HTTPS://A/", "http://[::1]:70000/", "http://*.a/", "http://u@a/", "http://127.0.0.1:8080/cb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		norm, err := Normalize(raw)
		if err != nil {
			return
		}
		if !strings.EqualFold(norm, raw) || len(norm) != len(raw) {
			t.Fatalf("%q normalized to %q", raw, norm)
		}
		again, err := Normalize(norm)
		if err != nil || again != norm {
			t.Fatalf("%q: normalized form %q not stable: %q, %v", raw, norm, again, err)
		}
		u, err := url.Parse(norm)
		if err != nil || !u.IsAbs() || u.Scheme != strings.ToLower(u.Scheme) || !strings.HasPrefix(norm, u.Scheme+":") {
			t.Fatalf("accepted %q: %v", raw, err)
		}
		if strings.Contains(raw, "#") || u.User != nil || strings.Contains(u.Host, "*") || strings.Contains(u.Host, "@") {
			t.Fatalf("accepted %q", raw)
		}
		if p := u.Port(); p != "" && !validPort(p) {
			t.Fatalf("accepted port %q in %q", p, raw)
		}
		for _, bad := range blockedSchemes {
			if u.Scheme == bad {
				t.Fatalf("accepted %q", raw)
			}
		}
		if (u.Scheme == "http" || u.Scheme == "https") && u.Host == "" {
			t.Fatalf("accepted %q without host", raw)
		}
	})
}

// FuzzMatchRedirectURI checks that matching never lets a request reach
// another place than a registered URI: an accepted redirect_uri is either
// registered verbatim or a loopback URI that differs from a registered one
// in its port alone.
func FuzzMatchRedirectURI(f *testing.F) {
	f.Add("http://127.0.0.1/cb", "http://127.0.0.1:5000/cb")
	f.Add("http://[::1]:1/cb", "http://[::1]:2/cb")
	f.Add("http://127.0.0.1/cb", "http://127.0.0.1:5000@evil/cb")
	f.Add("https://app.example/cb", "https://app.example/cb")
	f.Fuzz(func(t *testing.T, registered, requested string) {
		if norm, err := Normalize(registered); err != nil || norm != registered {
			return // only what registration accepts is ever registered
		}
		if !Match([]string{registered}, requested) || registered == requested {
			return
		}
		ru, err1 := url.Parse(registered)
		qu, err2 := url.Parse(requested)
		if err1 != nil || err2 != nil {
			t.Fatalf("matched %q to %q, not both URIs", requested, registered)
		}
		if qu.Scheme != "http" || (qu.Hostname() != "127.0.0.1" && qu.Hostname() != "::1") || qu.Hostname() != ru.Hostname() ||
			qu.User != nil || qu.Path != ru.Path || qu.RawQuery != ru.RawQuery || qu.Fragment != ru.Fragment || (qu.Port() != "" && !validPort(qu.Port())) {
			t.Fatalf("matched %q to registered %q", requested, registered)
		}
	})
}
