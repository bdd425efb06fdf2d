package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"hmid/internal/cache"
	"hmid/internal/clock/clocktest"
	"hmid/internal/upstream/upstreamtest"
)

// publicURL is hmid's public URL in these tests.
const publicURL = "https://id.example.test"

// rig is a registry and a flow on a fake clock and an in-process cache.
type rig struct {
	reg  *Registry
	flow *Flow
	clk  *clocktest.Fake
}

func newRig(t *testing.T, env map[string]string) *rig {
	t.Helper()
	return newRigWith(t, env, clocktest.NewFake(time.Now()))
}

// newRigWith makes a rig on the clock clk, shared with a fake provider.
func newRigWith(t *testing.T, env map[string]string, clk *clocktest.Fake) *rig {
	t.Helper()
	reg, err := FromEnv(func(k string) string { return env[k] }, publicURL)
	if err != nil {
		t.Fatal(err)
	}
	reg.SetClock(clk.Now)
	reg.SetTimeout(2 * time.Second)
	return &rig{reg: reg, clk: clk, flow: &Flow{Cache: cache.NewMemory(clk.Now), PublicURL: publicURL, Secure: true, Now: clk.Now}}
}

// begin runs GET /login/{slug} in a browser with the given cookies and
// returns the provider URL and the browser's binding cookie.
func (g *rig) begin(t *testing.T, slug, returnTo string, cookies ...*http.Cookie) (string, *http.Cookie) {
	t.Helper()
	p, err := g.reg.Get(slug)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/login/"+slug, nil)
	for _, c := range cookies {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	to, err := g.flow.Begin(context.Background(), w, r, p, returnTo)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	var bind *http.Cookie
	for _, c := range w.Result().Cookies() {
		if c.Name == BindingCookie {
			bind = c
		}
	}
	if bind == nil {
		t.Fatal("Begin set no binding cookie")
	}
	return to, bind
}

// callback builds the request of the callback URL in a browser with cookies.
func callback(u *url.URL, cookies ...*http.Cookie) *http.Request {
	r := httptest.NewRequest("GET", u.RequestURI(), nil)
	for _, c := range cookies {
		if c != nil {
			r.AddCookie(c)
		}
	}
	return r
}

// signIn runs a whole sign-in with slug and returns the identity.
func (g *rig) signIn(t *testing.T, slug string) (*Identity, error) {
	t.Helper()
	to, bind := g.begin(t, slug, "/account")
	cb := upstreamtest.Consent(t, to)
	if want := "/login/" + slug + "/callback"; cb.Path != want || cb.Host != "id.example.test" {
		t.Fatalf("redirect URI = %s, want %s%s", cb, publicURL, want)
	}
	c, err := g.flow.Finish(context.Background(), callback(cb, bind), slug)
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	p, _ := g.reg.Get(slug)
	return p.Exchange(context.Background(), c.Code, c.Params)
}

// mustSignIn runs a whole sign-in with slug on a new rig over env and
// returns the identity; the test fails if the sign-in does.
func mustSignIn(t *testing.T, env map[string]string, slug string) *Identity {
	t.Helper()
	id, err := newRig(t, env).signIn(t, slug)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// finish runs a sign-in with slug up to the code (Begin, the consent at
// the fake, Finish) and returns the provider and hmid's callback; the test
// fails if Finish does.
func (g *rig) finish(t *testing.T, slug string) (Provider, *Callback) {
	t.Helper()
	to, bind := g.begin(t, slug, "/")
	c, err := g.flow.Finish(context.Background(), callback(upstreamtest.Consent(t, to), bind), slug)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := g.reg.Get(slug)
	return p, c
}
