package app_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/backchannel"
	"hmid/internal/config"
	"hmid/internal/outbound"
)

// webhookSink is a receiver on 127.0.0.1 that keeps the webhook-id and
// body of every request.
type webhookSink struct {
	mu   sync.Mutex
	ids  []string
	body []string
}

func newWebhookSink(t *testing.T) (*webhookSink, string) {
	s := &webhookSink{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.ids = append(s.ids, r.Header.Get("webhook-id"))
		s.body = append(s.body, string(b))
		s.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return s, srv.URL
}

// await runs the worker's passes until n requests arrived (the background
// worker may send some of them) and returns the bodies and ids.
func (s *webhookSink) await(t *testing.T, e *apptest.Env, n int) (bodies, ids []string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		bodies, ids = append([]string(nil), s.body...), append([]string(nil), s.ids...)
		s.mu.Unlock()
		if len(bodies) >= n || time.Now().After(deadline) {
			return bodies, ids
		}
		if _, err := e.Server.WebhookWorker.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWebhooksAPI: the REST surface of /v1/webhooks, its permissions, its
// 4xx answers, and a client creation reaching the endpoint signed.
func TestWebhooksAPI(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.NewUser(t, apptest.UserSpec{SuperAdmin: true})
		user := e.NewUser(t, apptest.UserSpec{})
		_, url := newWebhookSink(t)

		e.Call(t, "GET", "/v1/webhooks", "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/webhooks", user.Token, nil, http.StatusForbidden)
		e.Call(t, "POST", "/v1/webhooks", user.Token, map[string]any{"url": url, "event_types": []string{"client_created"}}, http.StatusForbidden)

		// http needs HMID_WEBHOOKS_ALLOW_HTTP; 127.0.0.1 needs the allow list.
		for _, body := range []any{
			map[string]any{"url": url, "event_types": []string{"client_created"}},
			map[string]any{"url": "https://hooks.example/x", "event_types": []string{"nope"}},
			map[string]any{"url": "https://hooks.example/x", "event_types": []string{}},
			map[string]any{"url": "https://hooks.example/x"},
			map[string]any{"url": 5, "event_types": []string{"login"}},
			`{"url": `,
		} {
			r := e.Call(t, "POST", "/v1/webhooks", admin.Token, body, http.StatusBadRequest)
			if m := r.JSON(); m["error"] == nil || m["message"] == "" {
				t.Fatalf("%v: %s", body, r.Body)
			}
		}
		r := e.Call(t, "POST", "/v1/webhooks", admin.Token, map[string]any{"url": "https://hooks.example/x", "event_types": []string{"login"},
			"description": "CRM"}, http.StatusCreated)
		ep := r.JSON()["data"].(map[string]any)
		if !strings.HasPrefix(ep["secret"].(string), "whsec_") || r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%s", r.Body)
		}
		id := ep["id"].(string)
		if got := e.Call(t, "GET", "/v1/webhooks/"+id, admin.Token, nil, http.StatusOK).JSON()["data"].(map[string]any); got["secret"] != nil {
			t.Fatal("the secret is shown again")
		}
		list := e.Call(t, "GET", "/v1/webhooks", admin.Token, nil, http.StatusOK).JSON()
		if list["pagination"].(map[string]any)["total"].(float64) != 1 {
			t.Fatalf("%v", list)
		}
		e.Call(t, "GET", "/v1/webhooks/event-types", admin.Token, nil, http.StatusOK)
		e.Call(t, "PATCH", "/v1/webhooks/"+id, admin.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/webhooks/"+id, admin.Token, map[string]any{"enabled": "yes"}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/webhooks/nope", admin.Token, map[string]any{"enabled": false}, http.StatusNotFound)
		up := e.Call(t, "PATCH", "/v1/webhooks/"+id, admin.Token, map[string]any{"enabled": false}, http.StatusOK).JSON()["data"].(map[string]any)
		if up["enabled"] != false {
			t.Fatalf("%v", up)
		}
		e.Call(t, "POST", "/v1/webhooks/"+id+"/test", admin.Token, nil, http.StatusConflict)
		rot := e.Call(t, "POST", "/v1/webhooks/"+id+"/rotate", admin.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if rot["secret"] == ep["secret"] || rot["previous_secret_expires_at"] == nil {
			t.Fatalf("%v", rot)
		}
		e.Call(t, "GET", "/v1/webhooks/"+id+"/deliveries", admin.Token, nil, http.StatusOK)
		e.Call(t, "GET", "/v1/webhooks/nope/deliveries", admin.Token, nil, http.StatusNotFound)
		e.Call(t, "POST", "/v1/webhooks/"+id+"/deliveries/nope/resend", admin.Token, nil, http.StatusNotFound)
		e.Call(t, "DELETE", "/v1/webhooks/"+id, user.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/webhooks/"+id, admin.Token, nil, http.StatusNoContent)
		e.Call(t, "DELETE", "/v1/webhooks/"+id, admin.Token, nil, http.StatusNotFound)
	})
}

// TestWebhooksDeliverAuditEvents: with http and loopback allowed by the
// operator, creating an OAuth client reaches a subscribed endpoint as a
// client_created message; a test event and a resend arrive too, the resend
// with the same webhook-id.
func TestWebhooksDeliverAuditEvents(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.NewUser(t, apptest.UserSpec{SuperAdmin: true})
		sink, url := newWebhookSink(t)
		ep := e.Call(t, "POST", "/v1/webhooks", admin.Token, map[string]any{"url": url, "event_types": []string{"client_created"}},
			http.StatusCreated).JSON()["data"].(map[string]any)
		id := ep["id"].(string)
		e.Call(t, "POST", "/v1/oauth/clients", admin.Token, map[string]any{"name": "Hooked", "redirect_uris": []string{"https://app.example/cb"}}, http.StatusCreated)
		e.Call(t, "POST", "/v1/webhooks/"+id+"/test", admin.Token, nil, http.StatusAccepted)
		got, _ := sink.await(t, e, 2)
		if len(got) != 2 || !strings.Contains(got[0]+got[1], `"type":"client_created"`) || !strings.Contains(got[0]+got[1], `"type":"webhook_test"`) {
			t.Fatalf("received %v", got)
		}
		ds := e.Call(t, "GET", "/v1/webhooks/"+id+"/deliveries", admin.Token, nil, http.StatusOK).JSON()["data"].([]any)
		if len(ds) != 2 {
			t.Fatalf("%v", ds)
		}
		first := ds[1].(map[string]any)
		if first["status"] != "delivered" || first["attempts"].(float64) != 1 {
			t.Fatalf("%v", first)
		}
		e.Call(t, "POST", "/v1/webhooks/"+id+"/deliveries/"+first["id"].(string)+"/resend", admin.Token, nil, http.StatusAccepted)
		if _, ids := sink.await(t, e, 3); len(ids) != 3 || ids[2] != first["message_id"] {
			t.Fatalf("ids %v, want the resend to carry %v", ids, first["message_id"])
		}
	}, apptest.AllowLoopbackOutbound, func(c *config.Config) { c.WebhooksAllowHTTP = true })
}

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
	t.Parallel()
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
	t.Parallel()
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
