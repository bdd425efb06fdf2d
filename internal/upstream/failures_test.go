package upstream

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"hmid/internal/upstream/upstreamtest"
)

// A provider that fails, answers junk, answers too much or too slowly ends
// the sign-in with ErrProvider and a safe message, for every provider.
func TestProviderFailures(t *testing.T) {
	type target struct {
		slug    string
		userAPI string // the path of the user API call to break
		fake    func(t *testing.T) (*upstreamtest.Provider, map[string]string)
	}
	targets := []target{
		{"discord", "/api/users/@me", func(t *testing.T) (*upstreamtest.Provider, map[string]string) {
			f := fakeDiscord(t, map[string]any{"id": "1", "username": "u"})
			return f, f.Env("discord")
		}},
		{"twitch", "/helix/users", func(t *testing.T) (*upstreamtest.Provider, map[string]string) {
			f := fakeTwitch(t, map[string]any{"id": "1", "login": "u"})
			return f, f.Env("twitch")
		}},
		{"github", "/user/emails", func(t *testing.T) (*upstreamtest.Provider, map[string]string) {
			f := fakeGitHub(t, octocat, nil)
			return f, f.Env("github")
		}},
		{"acme", "/jwks", func(t *testing.T) (*upstreamtest.Provider, map[string]string) {
			o := upstreamtest.NewOIDC(t, time.Now)
			return o.Provider, oidcEnv("acme", o)
		}},
	}
	slow := func(w http.ResponseWriter, r *http.Request) {
		// Reading the body lets the server notice the client hanging up.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
	status500 := func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"message": "internal"}`, http.StatusInternalServerError)
	}
	junk := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id": "1", "username": <html>`))
	}
	huge := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"pad": "` + strings.Repeat("x", maxResponse+10) + `"}`))
	}
	for _, tg := range targets {
		for _, tc := range []struct {
			name    string
			path    string
			handler http.HandlerFunc
			detail  string
		}{
			{"user API 500", tg.userAPI, status500, ""},
			{"user API junk JSON", tg.userAPI, junk, ""},
			{"user API too large", tg.userAPI, huge, ""},
			{"user API slow", tg.userAPI, slow, "in time"},
			{"token endpoint 500", "/token", status500, "token request refused"},
			{"token endpoint junk", "/token", junk, "token"},
			{"token endpoint slow", "/token", slow, "in time"},
		} {
			t.Run(tg.slug+"/"+tc.name, func(t *testing.T) {
				f, env := tg.fake(t)
				g := newRig(t, env)
				g.reg.SetTimeout(300 * time.Millisecond)
				p, c := g.finish(t, tg.slug)
				f.Fail(tc.path, tc.handler)
				start := time.Now()
				id, err := p.Exchange(context.Background(), c.Code, c.Params)
				if took := time.Since(start); took > 3*time.Second {
					t.Errorf("took %v despite the timeout", took)
				}
				if !isKind(err, ErrProvider) || !strings.Contains(err.Error(), tc.detail) {
					t.Fatalf("identity %+v, err = %v, want ErrProvider mentioning %q", id, err, tc.detail)
				}
				for _, secret := range []string{c.Code, c.Params.Verifier, upstreamtest.ClientSecret, "at-"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q shows a secret", err)
					}
				}
			})
		}
	}
}

// The PKCE verifier really is checked: the code does not work with another.
func TestExchangeNeedsTheVerifier(t *testing.T) {
	f := fakeDiscord(t, map[string]any{"id": "1", "username": "u"})
	p, c := newRig(t, f.Env("discord")).finish(t, "discord")
	wrong := c.Params
	wrong.Verifier = strings.Repeat("a", 43)
	if _, err := p.Exchange(context.Background(), c.Code, wrong); !isKind(err, ErrProvider) || !strings.Contains(err.Error(), "invalid_grant") {
		t.Fatalf("err = %v, want invalid_grant", err)
	}
}

// An unreachable provider is an ErrProvider too.
func TestProviderUnreachable(t *testing.T) {
	f := fakeDiscord(t, map[string]any{"id": "1", "username": "u"})
	p, c := newRig(t, f.Env("discord")).finish(t, "discord")
	f.Close()
	if _, err := p.Exchange(context.Background(), c.Code, c.Params); !isKind(err, ErrProvider) || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("err = %v, want ErrProvider unreachable", err)
	}
}

// countingTransport records the paths it carries.
type countingTransport struct {
	mu    sync.Mutex
	paths []string
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.paths = append(c.paths, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// Every call to a provider goes through the registry's transport, including
// go-oidc's discovery and key-set fetches.
func TestAllCallsUseTheTransport(t *testing.T) {
	o := upstreamtest.NewOIDC(t, time.Now)
	o.Set(func() { o.Claims = map[string]any{"email": "a@acme.example"} })
	g := newRig(t, oidcEnv("acme", o))
	ct := &countingTransport{}
	g.reg.SetTransport(ct)
	if _, err := g.signIn(t, "acme"); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(ct.paths, ", ")
	if want := "GET /.well-known/openid-configuration, POST /token, GET /jwks"; got != want {
		t.Errorf("calls = %s, want %s", got, want)
	}
}

// Calls that each answer within the limit cannot add up beyond it.
func TestSlowCallsAddUp(t *testing.T) {
	f := fakeDiscord(t, map[string]any{"id": "1", "username": "u"})
	g := newRig(t, f.Env("discord"))
	g.reg.SetTimeout(400 * time.Millisecond)
	to, bind := g.begin(t, "discord", "/")
	c, err := g.flow.Finish(context.Background(), callback(upstreamtest.Consent(t, to), bind), "discord")
	if err != nil {
		t.Fatal(err)
	}
	delay := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(250 * time.Millisecond)
			h(w, r)
		}
	}
	f.Fail("/token", delay(f.ServeDefault))
	f.Fail("/api/users/@me", delay(f.ServeDefault))
	p, _ := g.reg.Get("discord")
	if _, err := p.Exchange(context.Background(), c.Code, c.Params); !isKind(err, ErrProvider) || !strings.Contains(err.Error(), "in time") {
		t.Fatalf("err = %v, want ErrProvider: did not answer in time", err)
	}
}

// A person who refuses consent at the provider comes back with
// access_denied: the sign-in ends with ErrDenied and keeps the return path.
func TestProviderDenied(t *testing.T) {
	discord := upstreamtest.NewDiscord(t)
	acme := upstreamtest.NewOIDC(t, time.Now)
	for slug, f := range map[string]*upstreamtest.Provider{"discord": discord, "acme": acme.Provider} {
		t.Run(slug, func(t *testing.T) {
			f.Set(func() { f.Deny = true })
			g := newRig(t, upstreamtest.Merge(discord.Env("discord"), acme.Env("acme")))
			to, bind := g.begin(t, slug, "/account/linked")
			cb := upstreamtest.Consent(t, to)
			if cb.Query().Get("code") != "" || cb.Query().Get("error") != "access_denied" {
				t.Fatalf("callback = %s, want access_denied without a code", cb)
			}
			c, err := g.flow.Finish(context.Background(), callback(cb, bind), slug)
			if !isKind(err, ErrDenied) {
				t.Fatalf("err = %v, want ErrDenied", err)
			}
			if c == nil || c.ReturnTo != "/account/linked" {
				t.Errorf("callback = %+v, want the return path", c)
			}
		})
	}
}
