package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/backchannel"
	"hmid/internal/config"
	"hmid/internal/outbound"
)

// internalReceiver is a real listener on 127.0.0.1, standing for an internal
// service (an admin endpoint, Redis, the metadata service): it counts every
// request that reaches it and keeps the logout tokens posted to it.
type internalReceiver struct {
	srv    *httptest.Server
	hits   atomic.Int64
	tokens chan string
}

func newInternalReceiver(t *testing.T) *internalReceiver {
	t.Helper()
	rec := &internalReceiver{tokens: make(chan string, 16)}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.hits.Add(1)
		if tok := r.PostFormValue("logout_token"); tok != "" {
			rec.tokens <- tok
		}
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

// ssrfLogin signs u in to client c (code flow in u's session) and ends that
// session, so the client is due a logout token.
func ssrfLoginLogout(t *testing.T, e *apptest.Env, u apptest.User, c testClient) {
	t.Helper()
	code := getCode(t, e, u.Token, authzParams(c.ID, "scope", "openid profile"))
	if r := exchange(t, e, c, code); r.Status != http.StatusOK {
		t.Fatalf("exchange: %d %s", r.Status, r.Body)
	}
	e.Call(t, "POST", "/v1/auth/logout", u.Token, nil, http.StatusNoContent)
}

// TestOutboundSSRFRefused: with HMID_OUTBOUND_ALLOW_CIDRS empty (the
// default), any signed-in user's client can neither register a
// back-channel logout URI on an internal address nor, if one is stored
// (registered under a wider allow list, or a name that now resolves to
// loopback), make hmid send a request there: the dial-time check refuses
// it and the listener records zero hits.
func TestOutboundSSRFRefused(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		rec := newInternalReceiver(t)
		u := e.NewUser(t, apptest.UserSpec{})
		clients := func() int { return count(t, e, `SELECT COUNT(*) FROM oauth_clients WHERE owner_id = $1`, u.ID) }
		body := func(uri string) map[string]any {
			return map[string]any{"name": "Probe", "redirect_uris": []string{cb}, "id_token_signed_response_alg": "RS256", "backchannel_logout_uri": uri}
		}

		// Registration: a literal internal host is a 400 on the field, and nothing is stored.
		for _, uri := range []string{
			rec.srv.URL + "/bcl", "http://127.0.0.1:6379/", "http://[::1]:8080/internal/admin/flush?confirm=yes",
			"http://169.254.169.254/latest/meta-data/", "http://10.0.0.5/x", "http://192.168.1.1/", "http://100.64.0.1/",
			"http://[fd00::1]/", "http://[::ffff:127.0.0.1]/", "http://2130706433/", "http://0x7f.1/", "http://localhost:9/",
		} {
			r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/clients", Token: u.Token, Body: body(uri)})
			if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "backchannel_logout_uri") {
				t.Errorf("register %s: %d %s", uri, r.Status, r.Body)
			}
		}
		if n := clients(); n != 0 {
			t.Fatalf("%d clients registered with internal back-channel URIs", n)
		}

		// A URI on another host than the redirect URIs is fine (Back-Channel
		// Logout 1.0 §2.2 has no same-host rule); changing it to an internal
		// address is refused and leaves it as it was.
		c := mkClient(t, e, u.Token, body("https://logout.other.example/bcl"))
		r := e.Do(t, apptest.Req{Method: "PATCH", Path: "/v1/oauth/clients/" + c.ID, Token: u.Token, Body: map[string]any{"backchannel_logout_uri": rec.srv.URL + "/bcl"}})
		if r.Status != http.StatusBadRequest {
			t.Fatalf("PATCH to loopback: %d %s", r.Status, r.Body)
		}
		if got := clientJSON(t, e, c.ID)["backchannel_logout_uri"]; got != "https://logout.other.example/bcl" {
			t.Fatalf("stored URI after a refused PATCH: %v", got)
		}

		// A stored URI on loopback: the logout token is queued, the delivery
		// is refused at dial time and dropped (no retry can change that),
		// and the listener sees nothing.
		execSQL(t, e, `UPDATE oauth_clients SET backchannel_logout_uri = $1 WHERE id = $2`, rec.srv.URL+"/bcl", c.ID)
		ssrfLoginLogout(t, e, u, c)
		// The worker also runs passes of its own: wait for the refusal, by whichever pass.
		deadline := time.Now().Add(20 * time.Second)
		for e.Server.Backchannel.Refused() == 0 && time.Now().Before(deadline) {
			if _, err := e.Server.Backchannel.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if n := e.Server.Backchannel.Refused(); n != 1 {
			t.Fatalf("%d deliveries refused, want 1", n)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM oauth_backchannel_outbox WHERE client_id = $1`, c.ID); n != 0 {
			t.Errorf("%d refused logout tokens left for retry", n)
		}
		for range 3 {
			e.Clock.Advance(backchannel.MaxBackoff)
			if _, err := e.Server.Backchannel.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if h := rec.hits.Load(); h != 0 {
			t.Fatalf("the internal listener got %d requests", h)
		}
	})
}

// TestOutboundAllowedRangeIsDelivered: the same client and logout, with the
// operator allowing 127.0.0.0/8 in HMID_OUTBOUND_ALLOW_CIDRS: registration
// accepts the loopback URI and the listener gets the logout token.
func TestOutboundAllowedRangeIsDelivered(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		rec := newInternalReceiver(t)
		u := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, u.Token, map[string]any{"name": "Local RP", "id_token_signed_response_alg": "RS256", "backchannel_logout_uri": rec.srv.URL + "/bcl"})
		ssrfLoginLogout(t, e, u, c)
		deadline := time.Now().Add(20 * time.Second)
		for rec.hits.Load() == 0 && time.Now().Before(deadline) {
			if _, err := e.Server.Backchannel.RunOnce(context.Background()); err != nil {
				t.Logf("pass: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		select {
		case tok := <-rec.tokens:
			if strings.Count(tok, ".") != 2 {
				t.Fatalf("not a JWT: %q", tok)
			}
		default:
			t.Fatalf("no logout token delivered; %d requests", rec.hits.Load())
		}
		if h := rec.hits.Load(); h != 1 {
			t.Fatalf("the listener got %d requests, want 1", h)
		}
	}, func(c *config.Config) {
		// The operator's setting, parsed as at start.
		allow, err := outbound.ParseAllowList("127.0.0.0/8")
		if err != nil {
			panic(err)
		}
		c.OutboundAllowCIDRs = allow
	})
}
