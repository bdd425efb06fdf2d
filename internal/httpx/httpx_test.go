package httpx

import (
	"context"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestResolveClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	cases := []struct{ remote, xff, want string }{
		{"203.0.113.5:1234", "", "203.0.113.5"},
		{"203.0.113.5:1234", "1.2.3.4", "203.0.113.5"},             // untrusted peer: header ignored
		{"10.0.0.2:1234", "1.2.3.4", "1.2.3.4"},                    // trusted proxy
		{"10.0.0.2:1234", "6.6.6.6, 1.2.3.4, 10.0.0.9", "1.2.3.4"}, // spoofed left entries ignored
		{"10.0.0.2:1234", "garbage", "10.0.0.2"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := ResolveClientIP(r, trusted); got != c.want {
			t.Errorf("%s xff %q = %q, want %q", c.remote, c.xff, got, c.want)
		}
	}
}

func TestPageLinks(t *testing.T) {
	r := httptest.NewRequest("GET", "/v1/x?page=2&limit=10&status=a", nil)
	// What the Base middleware stores for a request.
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, &reqInfo{baseURL: "https://h"}))
	p := ParsePage(r, 20)
	l := p.Links(r, 35)
	if *l.Last != "https://h/v1/x?limit=10&page=4&status=a" || *l.Prev != "https://h/v1/x?limit=10&page=1&status=a" || *l.Next != "https://h/v1/x?limit=10&page=3&status=a" {
		t.Fatalf("links = %+v %s %s %s", l, *l.Prev, *l.Next, *l.Last)
	}
	if p.Block(35).TotalPages != 4 || p.Offset() != 10 {
		t.Fatalf("block = %+v", p.Block(35))
	}
	if p.Block(0).TotalPages != 1 {
		t.Fatal("empty list must have one page")
	}
}

func TestRedactPath(t *testing.T) {
	if got := redactPath("/v1/sessions/hm_st_abcdefghijklmnopqrstuvwxyz0123456789"); got != "/v1/sessions/hm_st_abc…" {
		t.Fatalf("redacted = %q", got)
	}
	if got := redactPath("/v1/users/me"); got != "/v1/users/me" {
		t.Fatalf("plain path changed: %q", got)
	}
}
