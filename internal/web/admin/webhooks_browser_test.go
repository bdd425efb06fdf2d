package admin_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
	"hmid/internal/web/webtest"
)

// TestBrowserAdminWebhooks drives headless Chromium through /admin/webhooks:
// a refused form, an endpoint added (its secret shown once), a test event
// delivered to a receiver and listed with its status, duration and attempt,
// a resend, a rotation, turning it off and deleting it; the pages pass
// axe-core in both themes, and in German; with HMID_SCREENSHOTS set they
// are saved.
func TestBrowserAdminWebhooks(t *testing.T) {
	t.Parallel()
	ctx := webtest.Chromium(t)
	e := apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)}, apptest.AllowLoopbackOutbound,
		func(c *config.Config) { c.WebhooksAllowHTTP = true })
	var hits atomic.Int64
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		time.Sleep(15 * time.Millisecond)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rc.Close()
	op := permittedOperator(t, e, "integrator", "webhooks:read", "webhooks:write")
	text := func(sel string) string { return webtest.Read(t, ctx, "text of "+sel, chromedp.Text(chromedp.CSS(sel))) }
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	deliver := func(n int64) {
		deadline := time.Now().Add(10 * time.Second)
		for hits.Load() < n && time.Now().Before(deadline) {
			if _, err := e.Server.WebhookWorker.RunOnce(context.Background()); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if hits.Load() < n {
			t.Fatalf("the receiver got %d requests, want %d", hits.Load(), n)
		}
	}

	webtest.Login(t, ctx, e.URL, op.Email, pw)
	webtest.Axe(t, ctx, e.URL+"/admin/webhooks")
	if s := text(`main`); !strings.Contains(s, "No endpoint is registered yet") {
		t.Fatalf("empty list: %q", s)
	}
	// No event type ticked: refused at its field, nothing saved.
	webtest.Submit(t, ctx, "add without types",
		chromedp.SetValue(css(`#url`), rc.URL+"/hooks/crm"),
		chromedp.Click(css(`form[action="/admin/webhooks"] button[type=submit]`)))
	if s := text(`main`); !strings.Contains(s, "at least one event type") || !strings.Contains(s, "correct the marked field") {
		t.Fatalf("refusal: %q", s)
	}
	webtest.Axe(t, ctx, "")
	webtest.Submit(t, ctx, "add an endpoint",
		chromedp.SetValue(css(`#description`), "CRM sync"),
		chromedp.Click(css(`input[name=event_types][value=login]`)),
		chromedp.Click(css(`input[name=event_types][value=client_created]`)),
		chromedp.Click(css(`form[action="/admin/webhooks"] button[type=submit]`)))
	secret := text(`#webhook-secret`)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("secret: %q", secret)
	}
	webtest.Axe(t, ctx, "")
	webtest.Screenshots(t, ctx, "admin-webhook-created")

	// A test event, delivered, listed.
	webtest.Submit(t, ctx, "send a test event", chromedp.Click(css(`form[action$="/test"] button`)))
	if s := text(`.notice`); !strings.Contains(s, "test event is on its way") {
		t.Fatalf("flash: %q", s)
	}
	if strings.Contains(text(`main`), secret) {
		t.Fatal("the secret is shown again")
	}
	loc := webtest.Read(t, ctx, "location", chromedp.Location())
	deliver(1)
	e.Call(t, "POST", "/v1/oauth/clients", e.SystemKey, map[string]any{"name": "Shop", "redirect_uris": []string{"https://shop.example/cb"}}, http.StatusCreated)
	deliver(2)
	webtest.Do(t, ctx, "reload", chromedp.Navigate(loc), chromedp.WaitVisible(css(`table.list`)))
	if s := text(`table.list`); !strings.Contains(s, "Delivered") || !strings.Contains(s, "webhook_test") || !strings.Contains(s, "client_created") ||
		!strings.Contains(s, "HTTP 204") || !strings.Contains(s, " ms") {
		t.Fatalf("deliveries: %q", s)
	}
	webtest.Axe(t, ctx, "")
	webtest.Screenshots(t, ctx, "admin-webhook")

	webtest.Submit(t, ctx, "resend one", chromedp.Click(css(`form[action$="/resend"] button`)))
	if s := text(`.notice`); !strings.Contains(s, "same webhook-id") {
		t.Fatalf("resend flash: %q", s)
	}
	deliver(3)
	// Rotation needs its box ticked; with it, a new secret shows once.
	webtest.Do(t, ctx, "drop the browser's own check", chromedp.Evaluate[chromedp.Void](`document.querySelector('#confirm-rotate').required = false`))
	webtest.Submit(t, ctx, "rotate unconfirmed", chromedp.Click(css(`form[action$="/rotate"] button`)))
	if s := text(`#rotate-error`); !strings.Contains(s, "Tick the box") {
		t.Fatalf("unconfirmed rotation: %q", s)
	}
	webtest.Submit(t, ctx, "rotate", chromedp.Click(css(`#confirm-rotate`)), chromedp.Click(css(`form[action$="/rotate"] button`)))
	if s := text(`#webhook-secret`); !strings.HasPrefix(s, "whsec_") || s == secret {
		t.Fatalf("rotated secret: %q", s)
	}
	if s := text(`main`); !strings.Contains(s, "Still signs alongside the new one") {
		t.Fatalf("after rotation: %q", s)
	}
	webtest.Submit(t, ctx, "disable", chromedp.Click(css(`form[action$="/enabled"] button`)))
	if s := text(`main`); !strings.Contains(s, "The endpoint was disabled") || !strings.Contains(s, "Enable") {
		t.Fatalf("disabled: %q", s)
	}

	// An endpoint that fails for a day is turned off; the overview and its
	// page say so.
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	defer broken.Close()
	bad := e.Call(t, "POST", "/v1/webhooks", e.SystemKey, map[string]any{"url": broken.URL + "/erp", "event_types": []string{"client_updated"},
		"description": "ERP (offline)"}, http.StatusCreated).JSON()["data"].(map[string]any)
	e.Call(t, "POST", "/v1/webhooks/"+bad["id"].(string)+"/test", e.SystemKey, nil, http.StatusAccepted)
	for range 25 {
		if _, err := e.Server.WebhookWorker.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.Clock.Advance(5 * time.Hour)
	}
	webtest.Axe(t, ctx, e.URL+"/admin")
	if s := text(`main`); !strings.Contains(s, "Webhook endpoints turned off after failing") {
		t.Fatalf("overview: %q", s)
	}
	webtest.Axe(t, ctx, e.URL+"/admin/webhooks/"+bad["id"].(string))
	if s := text(`main`); !strings.Contains(s, "hmid turned this endpoint off") || !strings.Contains(s, "answered 502") {
		t.Fatalf("turned off: %q", s)
	}
	webtest.Screenshots(t, ctx, "admin-webhook-turned-off")

	// The list and the endpoint's page in German.
	if _, err := e.Server.DB.ExecContext(context.Background(), `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, op.ID); err != nil {
		t.Fatal(err)
	}
	webtest.Axe(t, ctx, e.URL+"/admin/webhooks")
	if s := text(`main`); !strings.Contains(s, "Endpunkte") || !strings.Contains(s, "Deaktiviert") {
		t.Fatalf("German list: %q", s)
	}
	webtest.Screenshots(t, ctx, "admin-webhooks-de")
	webtest.Axe(t, ctx, loc)
	if s := text(`main`); !strings.Contains(s, "Letzte Zustellungen") || !strings.Contains(s, "Zugestellt") {
		t.Fatalf("German endpoint: %q", s)
	}
	webtest.Submit(t, ctx, "delete", chromedp.Click(css(`#confirm-delete`)), chromedp.Click(css(`form[action$="/delete"] button`)))
	if s := text(`main`); !strings.Contains(s, "Der Endpunkt wurde gelöscht") {
		t.Fatalf("deleted: %q", s)
	}
}
