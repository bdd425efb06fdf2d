package account_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/audit"
	"hmid/internal/config"
	"hmid/internal/web/webtest"
)

// activityFakePlatform is a streaming platform that approves every
// authorization at once (RFC 6749 §4.1.2) and answers the Helix calls of
// the integrations with one channel, live.
func activityFakePlatform(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /oauth2/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		back, err := url.Parse(q.Get("redirect_uri"))
		if err != nil || q.Get("client_id") != "cid" {
			http.Error(w, "bad client", http.StatusBadRequest)
			return
		}
		v := back.Query()
		v.Set("code", "good-code")
		v.Set("state", q.Get("state"))
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	answer := func(body any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer at-1" || r.Header.Get("Client-Id") != "cid" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(body)
		}
	}
	mux.HandleFunc("POST /oauth2/token", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("client_secret") != "csecret" || r.FormValue("code") != "good-code" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at-1", "refresh_token": "rt-1", "expires_in": 14400,
			"scope": []string{"moderator:read:followers", "chat:read", "chat:edit"}, "token_type": "bearer"})
	})
	mux.HandleFunc("GET /helix/users", answer(map[string]any{"data": []any{map[string]any{"id": "4711", "login": "riverlive", "display_name": "RiverLive"}}}))
	mux.HandleFunc("GET /helix/channels/followers", answer(map[string]any{"total": 1284, "data": []any{}}))
	mux.HandleFunc("GET /helix/subscriptions", answer(map[string]any{"total": 57, "data": []any{}}))
	mux.HandleFunc("GET /helix/streams", answer(map[string]any{"data": []any{map[string]any{"type": "live", "title": "Paddling the Elbe at dawn",
		"game_name": "Just Chatting", "viewer_count": 312}}}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestBrowserConsoleActivity drives headless Chromium through the activity
// page's main action, reporting an event as "this wasn't me" and seeing the
// report's status, and through connecting a streaming account and reading
// its statistics on the integrations page. With HMID_SCREENSHOTS set it
// saves both pages at desktop and phone width there.
func TestBrowserConsoleActivity(t *testing.T) {
	t.Parallel()
	fake := activityFakePlatform(t)
	webtest.Each(t, func(t *testing.T, e *apptest.Env, ctx context.Context) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		rec := webtest.Recorder(t, e, 17*time.Minute)
		css := func(s string) chromedp.CSS { return chromedp.CSS(s) }

		webtest.Do(t, ctx, "log in",
			chromedp.EmulateViewport(1280, 800),
			chromedp.Navigate(e.URL+"/login?return_to="+url.QueryEscape("/account/activity")),
			chromedp.WaitVisible(css(`#email`)),
			chromedp.SendKeys(css(`#email`), u.Email),
			chromedp.SendKeys(css(`#password`), pw),
			chromedp.Click(css(`form button[type=submit]`)),
			chromedp.WaitVisible(css(`#f-event`)))
		// What happened after this sign-in, newest last: a sign-in from an
		// iPhone the user does not own among their own.
		firefox := "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Firefox/128.0"
		safari := "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1"
		rec(audit.Event{UserID: u.ID, EventType: audit.Login, ResourceType: "session", IPAddress: "198.51.100.20", UserAgent: firefox,
			Description: "Logged in with email and password", SourceService: "id"})
		rec(audit.Event{UserID: u.ID, EventType: audit.TwoFAEnabled, ResourceType: "two_factor", IPAddress: "198.51.100.20", UserAgent: firefox, SourceService: "id"})
		rec(audit.Event{UserID: u.ID, EventType: audit.LoginFailed, ResourceType: "session", IPAddress: "203.0.113.77", UserAgent: safari,
			Failed: true, ErrorMessage: "wrong password", Description: "Failed login with email"})
		suspicious := rec(audit.Event{UserID: u.ID, EventType: audit.Login, ResourceType: "session", IPAddress: "203.0.113.77", UserAgent: safari,
			Description: "Logged in with email and password"})
		rec(audit.Event{UserID: u.ID, EventType: audit.APIKeyCreated, ResourceType: "api_key", IPAddress: "203.0.113.77", UserAgent: safari,
			Description: "API key backup-sync created"})

		webtest.Do(t, ctx, "reload", chromedp.Navigate(e.URL+"/account/activity"), chromedp.WaitVisible(css(`#event-`+suspicious)))
		row := `#event-` + suspicious
		if got := webtest.Read(t, ctx, "the suspicious row", chromedp.Text(css(row))); !strings.Contains(got, "Signed in") || !strings.Contains(got, "Safari") ||
			!strings.Contains(got, "203.0.113.77") {
			t.Fatalf("suspicious row: %q", got)
		}

		// Report it: open "This wasn't me", choose a reason, describe, send.
		webtest.Submit(t, ctx, "report the event",
			chromedp.Click(css(row+` summary`)),
			chromedp.WaitVisible(css(`#reason-`+suspicious)),
			chromedp.SetValue(css(`#reason-`+suspicious), "unknown_device"),
			chromedp.SendKeys(css(`#desc-`+suspicious), "I own no iPhone."),
			chromedp.Click(css(row+` form button[type=submit]`)),
			chromedp.WaitVisible(css(`.notice`)))
		if got := webtest.Read(t, ctx, "the flash", chromedp.Text(css(`.notice`))); !strings.Contains(got, "The event is reported") {
			t.Fatalf("flash: %q", got)
		}
		if got := webtest.Read(t, ctx, "the reported row", chromedp.Text(css(row))); !strings.Contains(got, "Report: Waiting for review") || strings.Contains(got, "This wasn't me") {
			t.Fatalf("reported row: %q", got)
		}
		if got := webtest.Read(t, ctx, "my reports", chromedp.Text(css(`#reports-title`))); got != "Your reports" {
			t.Fatalf("reports section: %q", got)
		}
		reports := e.Call(t, "GET", "/v1/users/me/audit/reports", u.Token, nil, http.StatusOK).Array()
		if len(reports) != 1 {
			t.Fatalf("REST reports: %v", reports)
		}
		if r := reports[0].(map[string]any); r["audit_event_id"] != suspicious || r["reason"] != "unknown_device" || r["status"] != "pending" ||
			r["description"] != "I own no iPhone." {
			t.Fatalf("REST report: %v", r)
		}
		webtest.Screenshots(t, ctx, "activity-reported")

		// A filter from the form keeps to the rows REST gives for it.
		webtest.Do(t, ctx, "filter failures",
			chromedp.Click(css(`.filter-box summary`)),
			chromedp.WaitVisible(css(`#f-status`)),
			chromedp.SetValue(css(`#f-status`), "failure"),
			chromedp.Click(css(`.filter-actions button`)))
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(webtest.Read(t, ctx, "location", chromedp.Location()), "status=failure"); {
			if time.Now().After(deadline) {
				t.Fatal("the filter form did not load its page")
			}
			time.Sleep(50 * time.Millisecond)
		}
		webtest.Do(t, ctx, "wait for the filtered page", chromedp.WaitVisible(css(`#events-count`)))
		if got := webtest.Read(t, ctx, "filtered count", chromedp.Text(css(`#events-count`))); got != "Events 1–1 of 1" {
			t.Fatalf("filtered: %q", got)
		}

		// Integrations: connect through the platform and back, then statistics.
		webtest.Submit(t, ctx, "open integrations",
			chromedp.Navigate(e.URL+"/account/integrations"),
			chromedp.WaitVisible(css(`#connect-title`)),
			chromedp.Click(css(`input[name=scope][value="chat:edit"]`)),
			chromedp.Click(css(`form[action="/account/integrations/connect"] button[type=submit]`)),
			chromedp.WaitVisible(css(`.notice`)))
		if got := webtest.Read(t, ctx, "connected notice", chromedp.Text(css(`.notice`))); !strings.Contains(got, "RiverLive (riverlive) is connected") {
			t.Fatalf("connected: %q", got)
		}
		webtest.Do(t, ctx, "show statistics",
			chromedp.Click(css(`form[action$="/stats"] button`)),
			chromedp.WaitVisible(css(`.stats`)))
		if got := webtest.Read(t, ctx, "statistics", chromedp.Text(css(`.stats`))); !strings.Contains(got, "1284") || !strings.Contains(got, "Live now") || !strings.Contains(got, "312") {
			t.Fatalf("statistics: %q", got)
		}
		webtest.Screenshots(t, ctx, "integrations-stats")
	}, func(c *config.Config) {
		c.StreamPlatform = config.ProviderConfig{ClientID: "cid", ClientSecret: "csecret", AuthURL: fake.URL + "/oauth2/authorize",
			TokenURL: fake.URL + "/oauth2/token", APIURL: fake.URL + "/helix"}
	})
}
