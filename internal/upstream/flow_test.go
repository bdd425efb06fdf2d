package upstream

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hmid/internal/cache"
	"hmid/internal/clock/clocktest"
)

// stubProvider only builds URLs: the state handling needs no network.
type stubProvider struct{ slug string }

func (s stubProvider) Slug() string { return s.slug }
func (s stubProvider) Name() string { return s.slug }
func (s stubProvider) AuthCodeURL(_ context.Context, p Params) (string, error) {
	return "https://provider.example/authorize?" + url.Values{"state": {p.State}, "nonce": {p.Nonce}}.Encode(), nil
}
func (s stubProvider) Exchange(context.Context, string, Params) (*Identity, error) {
	return nil, newError(ErrProvider, s.slug, "stub", nil)
}

// flowCaches returns the in-process cache and, with HMID_TEST_REDIS_URL,
// Redis under a key prefix of its own.
func flowCaches(t *testing.T, clk *clocktest.Fake) map[string]cache.Cache {
	out := map[string]cache.Cache{"memory": cache.NewMemory(clk.Now)}
	if u := os.Getenv("HMID_TEST_REDIS_URL"); u != "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		r, err := cache.NewRedis(context.Background(), u, "hmidtest:"+hex.EncodeToString(b[:])+":")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		out["redis"] = r
	}
	return out
}

// start begins a sign-in with the stub and returns the callback URL the
// provider would send the browser to, and the browser's binding cookie.
func start(t *testing.T, f *Flow, slug, returnTo string, cookies ...*http.Cookie) (*url.URL, *http.Cookie) {
	t.Helper()
	r := httptest.NewRequest("GET", "/login/"+slug, nil)
	for _, c := range cookies {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	to, err := f.Begin(context.Background(), w, r, stubProvider{slug}, returnTo)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(to)
	cb, _ := url.Parse(publicURL + "/login/" + slug + "/callback")
	cb.RawQuery = url.Values{"code": {"the-code"}, "state": {u.Query().Get("state")}}.Encode()
	var bind *http.Cookie
	for _, c := range w.Result().Cookies() {
		if c.Name == BindingCookie {
			bind = c
		}
	}
	if bind == nil || !bind.HttpOnly || !bind.Secure || bind.SameSite != http.SameSiteLaxMode || bind.Path != "/login/" || bind.MaxAge != 600 {
		t.Fatalf("binding cookie = %+v", bind)
	}
	return cb, bind
}

func withQuery(u *url.URL, k, v string) *url.URL {
	c := *u
	q := c.Query()
	if v == "" {
		q.Del(k)
	} else {
		q.Set(k, v)
	}
	c.RawQuery = q.Encode()
	return &c
}

func TestFlow(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	for name, c := range flowCaches(t, clk) {
		t.Run(name, func(t *testing.T) {
			f := &Flow{Cache: c, PublicURL: publicURL, Secure: true, Now: clk.Now}
			ctx := context.Background()

			t.Run("round trip, then replay", func(t *testing.T) {
				cb, bind := start(t, f, "discord", publicURL+"/v1/oauth/authorize?client_id=c&state=xyz")
				got, err := f.Finish(ctx, callback(cb, bind), "discord")
				if err != nil {
					t.Fatal(err)
				}
				if got.Slug != "discord" || got.Code != "the-code" || got.ReturnTo != "/v1/oauth/authorize?client_id=c&state=xyz" ||
					len(got.Params.Verifier) != 43 || len(got.Params.Nonce) != 43 || got.Params.State != cb.Query().Get("state") ||
					!got.Started.Equal(clk.Now()) {
					t.Errorf("callback = %+v", got)
				}
				if _, err := f.Finish(ctx, callback(cb, bind), "discord"); !isKind(err, ErrStateReplayed) {
					t.Errorf("replay: err = %v, want ErrStateReplayed", err)
				}
			})
			t.Run("forged state", func(t *testing.T) {
				cb, bind := start(t, f, "discord", "/")
				for _, state := range []string{"", randomToken(), "short", strings.Repeat("A", 100000), cb.Query().Get("state") + "x"} {
					if _, err := f.Finish(ctx, callback(withQuery(cb, "state", state), bind), "discord"); !isKind(err, ErrStateInvalid) {
						t.Errorf("state %.20q: err = %v, want ErrStateInvalid", state, err)
					}
				}
				if _, err := f.Finish(ctx, callback(cb, bind), "discord"); err != nil {
					t.Errorf("the real state after forgeries: %v", err)
				}
			})
			t.Run("other browser, then the right one", func(t *testing.T) {
				cb, bind := start(t, f, "github", "/")
				other := &http.Cookie{Name: BindingCookie, Value: randomToken()}
				junk := &http.Cookie{Name: BindingCookie, Value: "junk"}
				for _, cookies := range [][]*http.Cookie{nil, {other}, {junk}} {
					if _, err := f.Finish(ctx, callback(cb, cookies...), "github"); !isKind(err, ErrStateBrowser) {
						t.Errorf("cookies %v: err = %v, want ErrStateBrowser", cookies, err)
					}
				}
				if _, err := f.Finish(ctx, callback(cb, bind), "github"); err != nil {
					t.Errorf("the starting browser after refusals: %v", err)
				}
			})
			t.Run("other provider's callback", func(t *testing.T) {
				cb, bind := start(t, f, "github", "/")
				if _, err := f.Finish(ctx, callback(cb, bind), "discord"); !isKind(err, ErrStateInvalid) {
					t.Errorf("err = %v, want ErrStateInvalid", err)
				}
				if _, err := f.Finish(ctx, callback(cb, bind), "github"); err != nil {
					t.Errorf("the right provider afterwards: %v", err)
				}
			})
			t.Run("two tabs share the cookie", func(t *testing.T) {
				cb1, bind := start(t, f, "discord", "/a")
				cb2, bind2 := start(t, f, "twitch", "/b", bind)
				if bind2.Value != bind.Value {
					t.Fatal("the second sign-in replaced the browser's binding")
				}
				for _, tc := range []struct {
					cb   *url.URL
					slug string
					want string
				}{{cb2, "twitch", "/b"}, {cb1, "discord", "/a"}} {
					got, err := f.Finish(ctx, callback(tc.cb, bind), tc.slug)
					if err != nil || got.ReturnTo != tc.want {
						t.Errorf("%s: %+v, %v", tc.slug, got, err)
					}
				}
			})
			t.Run("provider error", func(t *testing.T) {
				for _, tc := range []struct {
					errCode string
					kind    error
					detail  string
				}{
					{"access_denied", ErrDenied, ""},
					{"server_error", ErrProvider, "server_error"},
					{"<script>alert(1)</script>", ErrProvider, "unknown error"},
				} {
					cb, bind := start(t, f, "discord", "/back")
					u := withQuery(withQuery(cb, "code", ""), "error", tc.errCode)
					got, err := f.Finish(ctx, callback(u, bind), "discord")
					if !isKind(err, tc.kind) || !strings.Contains(err.Error(), tc.detail) || strings.Contains(err.Error(), "<") {
						t.Errorf("%s: err = %v", tc.errCode, err)
					}
					if got == nil || got.ReturnTo != "/back" {
						t.Errorf("%s: callback = %+v, want one with the return path", tc.errCode, got)
					}
					if _, err := f.Finish(ctx, callback(cb, bind), "discord"); !isKind(err, ErrStateReplayed) {
						t.Errorf("%s: the state was not consumed: %v", tc.errCode, err)
					}
				}
			})
			t.Run("missing code", func(t *testing.T) {
				cb, bind := start(t, f, "discord", "/")
				if _, err := f.Finish(ctx, callback(withQuery(cb, "code", ""), bind), "discord"); !isKind(err, ErrCallback) {
					t.Errorf("err = %v, want ErrCallback", err)
				}
			})
			t.Run("racing callbacks: one wins", func(t *testing.T) {
				cb, bind := start(t, f, "discord", "/")
				var wins, replays atomic.Int32
				var wg sync.WaitGroup
				for range 16 {
					wg.Go(func() {
						_, err := f.Finish(ctx, callback(cb, bind), "discord")
						switch {
						case err == nil:
							wins.Add(1)
						case isKind(err, ErrStateReplayed), isKind(err, ErrStateInvalid):
							replays.Add(1)
						default:
							t.Errorf("err = %v", err)
						}
					})
				}
				wg.Wait()
				if wins.Load() != 1 || replays.Load() != 15 {
					t.Errorf("wins %d, refusals %d; want 1 and 15", wins.Load(), replays.Load())
				}
			})
		})
	}
}

// Expiry needs the cache's clock to move, so it runs on the in-process cache.
func TestFlowExpiry(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	f := &Flow{Cache: cache.NewMemory(clk.Now), PublicURL: publicURL, Now: clk.Now}
	ctx := context.Background()

	cb, bind := startInsecure(t, f)
	clk.Advance(9*time.Minute + 59*time.Second)
	if _, err := f.Finish(ctx, callback(cb, bind), "discord"); err != nil {
		t.Fatalf("just within the lifetime: %v", err)
	}

	cb, bind = startInsecure(t, f)
	clk.Advance(10 * time.Minute)
	if _, err := f.Finish(ctx, callback(cb, bind), "discord"); !isKind(err, ErrStateExpired) {
		t.Fatalf("after 10 minutes: err = %v, want ErrStateExpired", err)
	}
	if _, err := f.Finish(ctx, callback(cb, bind), "discord"); !isKind(err, ErrStateReplayed) {
		t.Fatalf("an expired state is consumed: err = %v", err)
	}

	cb, bind = startInsecure(t, f)
	clk.Advance(21 * time.Minute)
	if _, err := f.Finish(ctx, callback(cb, bind), "discord"); !isKind(err, ErrStateInvalid) {
		t.Fatalf("long forgotten: err = %v, want ErrStateInvalid", err)
	}
}

// startInsecure begins on a flow for http (no Secure cookie).
func startInsecure(t *testing.T, f *Flow) (*url.URL, *http.Cookie) {
	t.Helper()
	r := httptest.NewRequest("GET", "/login/discord", nil)
	w := httptest.NewRecorder()
	to, err := f.Begin(context.Background(), w, r, stubProvider{"discord"}, "/")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(to)
	cb, _ := url.Parse("/login/discord/callback?" + url.Values{"code": {"c"}, "state": {u.Query().Get("state")}}.Encode())
	cookies := w.Result().Cookies()
	if len(cookies) != 1 || cookies[0].Secure {
		t.Fatalf("cookies = %+v", cookies)
	}
	return cb, cookies[0]
}

func TestLocalPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "/"},
		{"/account", "/account"},
		{"/v1/oauth/authorize?client_id=a&redirect_uri=https%3A%2F%2Fapp.example%2Fcb", "/v1/oauth/authorize?client_id=a&redirect_uri=https%3A%2F%2Fapp.example%2Fcb"},
		{publicURL + "/v1/oauth/authorize?client_id=a", "/v1/oauth/authorize?client_id=a"},
		{publicURL, "/"},
		{publicURL + "?x=1", "/?x=1"},
		{"HTTPS://ID.EXAMPLE.TEST/account", "/"}, // not under the public URL as written
		{"//evil.example/", "/"},
		{"/\\evil.example", "/"},
		{"\\\\evil.example", "/"},
		{"https://evil.example/", "/"},
		{"https://id.example.test.evil.example/", "/"},
		{"https://user@id.example.test/", "/"},
		{"http://id.example.test/account", "/"},
		{"javascript:alert(1)", "/"},
		{"account", "/"},
		{"/a\r\nSet-Cookie: x", "/"},
		{"/a\tb", "/"},
		{"/" + strings.Repeat("a", 5000), "/"},
	} {
		if got := LocalPath(tc.in, publicURL); got != tc.want {
			t.Errorf("LocalPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
