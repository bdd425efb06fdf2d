package app_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/config"
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
