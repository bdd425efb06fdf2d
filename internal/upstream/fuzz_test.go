package upstream

import (
	"context"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"hmid/internal/cache"
	"hmid/internal/clock/clocktest"
)

// LocalPath never yields anything a browser would read as another origin.
func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{"/", "//x", "/\\x", publicURL + "/a?b", "https://x/", "/a%2F%2Fb", "/./../x", " /x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := LocalPath(in, publicURL)
		if !strings.HasPrefix(out, "/") || strings.HasPrefix(out, "//") || strings.ContainsAny(out, "\\\r\n\t") {
			t.Fatalf("LocalPath(%q) = %q", in, out)
		}
		u, err := url.Parse(out)
		if err != nil || u.Scheme != "" || u.Host != "" {
			t.Fatalf("LocalPath(%q) = %q parses as %+v, %v", in, out, u, err)
		}
		if resolved, _ := url.Parse(publicURL); resolved.ResolveReference(u).Host != resolved.Host {
			t.Fatalf("LocalPath(%q) = %q leaves the origin", in, out)
		}
	})
}

// Any callback query is refused cleanly unless it carries the real state.
func FuzzFinish(f *testing.F) {
	f.Add("state=abc&code=x")
	f.Add("error=access_denied&state=" + strings.Repeat("A", 43))
	f.Add("state=%ZZ&&code=;;")
	clk := clocktest.NewFake(time.Now())
	flow := &Flow{Cache: cache.NewMemory(clk.Now), PublicURL: publicURL, Now: clk.Now}
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest("GET", "/login/discord/callback", nil)
		r.URL.RawQuery = query
		cb, err := flow.Finish(context.Background(), r, "discord")
		if err == nil || cb != nil {
			t.Fatalf("Finish(%q) = %+v, %v; want a refusal", query, cb, err)
		}
		if !isKind(err, ErrStateInvalid) {
			t.Fatalf("Finish(%q): %v, want ErrStateInvalid", query, err)
		}
	})
}
