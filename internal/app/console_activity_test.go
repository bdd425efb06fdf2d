package app_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/audit"
	"hmid/internal/config"
	"hmid/internal/integrations"
)

// activityRowRE finds the event rows of the activity page, in order.
var activityRowRE = regexp.MustCompile(`<tr id="event-([^"]+)">`)

// activityIDs returns the event ids the activity page lists, in order.
func activityIDs(body string) []string {
	out := []string{}
	for _, m := range activityRowRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// activityLink returns the href of the pager link with rel, "" when none.
func activityLink(body, rel string) string {
	m := regexp.MustCompile(`<a href="([^"]+)" rel="` + rel + `">`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

func TestConsoleActivity(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		other := e.NewUser(t, apptest.UserSpec{})
		admin := e.Admin(t)
		for i := range 12 {
			record(t, e, audit.Event{UserID: u.ID, EventType: audit.Login, ResourceType: "session", IPAddress: "203.0.113.9",
				UserAgent: "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"})
			if i%3 == 0 {
				record(t, e, audit.Event{UserID: u.ID, EventType: audit.LoginFailed, ResourceType: "session", Failed: true, ErrorMessage: "wrong password"})
			}
		}
		record(t, e, audit.Event{UserID: u.ID, EventType: audit.APIKeyCreated, ResourceType: "api_key", ResourceID: "k1"})
		otherEv := record(t, e, audit.Event{UserID: other.ID, EventType: audit.Login})
		b := signedInBrowser(t, e, u)

		// The page lists exactly the rows of GET /v1/users/me/audit, for each
		// filter and page.
		for _, q := range []string{"", "?event_type=login", "?status=failure", "?resource_type=api_key",
			"?limit=10&page=2", "?event_type=login&status=success&limit=5&page=3", "?page=99"} {
			p := b.get("/account/activity" + q)
			if p.status != http.StatusOK {
				t.Fatalf("%s: %d %s", q, p.status, p.body)
			}
			want := field(auditEvents(t, e.Call(t, "GET", "/v1/users/me/audit"+q, u.Token, nil, http.StatusOK)), "id")
			if got := activityIDs(p.body); !slices.Equal(got, want) {
				t.Errorf("%s: page %v, REST %v", q, got, want)
			}
			if slices.Contains(activityIDs(p.body), otherEv) {
				t.Errorf("%s: another user's event is listed", q)
			}
		}
		// Paging links keep the filter; following them walks the REST pages.
		p := b.get("/account/activity?event_type=login&limit=5")
		if !strings.Contains(p.body, "Events 1–5 of 13") || !strings.Contains(p.body, "Page 1 of 3") {
			t.Fatalf("first page: %s", p.body)
		}
		for n := 2; n <= 3; n++ {
			next := activityLink(p.body, "next")
			u2, err := url.Parse(next)
			if err != nil || u2.Query().Get("event_type") != "login" || u2.Query().Get("limit") != "5" {
				t.Fatalf("next link %q", next)
			}
			p = b.get(next)
			want := field(auditEvents(t, e.Call(t, "GET", "/v1/users/me/audit?event_type=login&limit=5&page="+u2.Query().Get("page"), u.Token, nil, http.StatusOK)), "id")
			if got := activityIDs(p.body); len(got) == 0 || !slices.Equal(got, want) {
				t.Fatalf("page %d: %v, REST %v", n, got, want)
			}
		}
		if activityLink(p.body, "next") != "" || activityLink(p.body, "prev") == "" {
			t.Error("the last page links onward or not back")
		}
		// The events are readable: words, browser and system, result.
		p = b.get("/account/activity?resource_type=session&status=failure&limit=1")
		if !strings.Contains(p.body, "Sign-in attempt failed") || !strings.Contains(p.body, "wrong password") ||
			!strings.Contains(p.body, "Failed") || strings.Contains(p.body, ">login_failed<") {
			t.Errorf("failed sign-in row: %s", p.body)
		}
		if p := b.get("/account/activity?event_type=login&limit=2"); !strings.Contains(p.body, "Chrome") || !strings.Contains(p.body, "Linux") ||
			!strings.Contains(p.body, "203.0.113.9") {
			t.Errorf("sign-in row: %s", p.body)
		}

		// Bad filter values are a field error with the API's status, not a 500.
		for q, errID := range map[string]string{"?event_type=nope": "f-event-err", "?status=ok": "f-status-err"} {
			p := b.get("/account/activity" + q)
			if p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="`+errID+`"`) || !strings.Contains(p.body, `aria-invalid="true"`) ||
				len(activityIDs(p.body)) != 0 {
				t.Errorf("%s: %d %s", q, p.status, p.body)
			}
			e.Call(t, "GET", "/v1/users/me/audit"+q, u.Token, nil, http.StatusBadRequest)
		}

		// "This wasn't me".
		list := b.get("/account/activity?event_type=api_key_created")
		ids := activityIDs(list.body)
		if len(ids) != 1 {
			t.Fatalf("api key events %v", ids)
		}
		ev := ids[0]
		action := "/account/activity/" + ev + "/report"
		tok := formToken(t, list.body, action)
		if !strings.Contains(list.body, `<input type="hidden" name="event_type" value="api_key_created">`) {
			t.Error("the report form does not keep the filter")
		}
		reports := func() int { return count(t, e, `SELECT COUNT(*) FROM audit_reports WHERE user_id = $1`, u.ID) }
		if q := b.do("POST", action, url.Values{"reason": {"not_me"}}); q.status != http.StatusForbidden || reports() != 0 {
			t.Fatalf("report without CSRF: %d", q.status)
		}
		q := b.do("POST", action, url.Values{"csrf_token": {tok}, "reason": {"bored"}, "description": {"keep me"}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="reason-`+ev+`-err"`) || !strings.Contains(q.body, "keep me") ||
			!strings.Contains(q.body, "<details class=\"report\" open>") || reports() != 0 {
			t.Fatalf("bad reason: %d %s", q.status, q.body)
		}
		q = b.do("POST", action, url.Values{"csrf_token": {tok}, "reason": {"not_me"}, "description": {strings.Repeat("x", audit.MaxReportText+1)}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="desc-`+ev+`-err"`) || reports() != 0 {
			t.Fatalf("long description: %d", q.status)
		}
		q = b.do("POST", "/account/activity/"+otherEv+"/report", url.Values{"csrf_token": {tok}, "reason": {"not_me"}})
		if q.status != http.StatusNotFound || reports() != 0 || count(t, e, `SELECT COUNT(*) FROM audit_reports`) != 0 {
			t.Fatalf("another user's event: %d", q.status)
		}
		q = b.do("POST", action, url.Values{"csrf_token": {tok}, "reason": {"not_me"}, "description": {"I made no key"}, "event_type": {"api_key_created"}})
		if q.status != http.StatusSeeOther || q.location != "/account/activity?event_type=api_key_created" {
			t.Fatalf("report: %d %q %s", q.status, q.location, q.body)
		}
		after := b.get(q.location)
		if !strings.Contains(after.body, "The event is reported") || !strings.Contains(after.body, "Report: Waiting for review") ||
			strings.Contains(after.body, `action="`+action+`"`) || !strings.Contains(after.body, "Your reports") ||
			!strings.Contains(after.body, "I made no key") {
			t.Fatalf("after reporting: %s", after.body)
		}
		// REST shows the same report, with its status.
		mine := e.Call(t, "GET", "/v1/users/me/audit/reports", u.Token, nil, http.StatusOK).Array()
		if len(mine) != 1 {
			t.Fatalf("reports %v", mine)
		}
		rep := mine[0].(map[string]any)
		if rep["audit_event_id"] != ev || rep["reason"] != "not_me" || rep["status"] != "pending" || rep["description"] != "I made no key" {
			t.Fatalf("report %v", rep)
		}
		if evs := auditEvents(t, e.Call(t, "GET", "/v1/users/me/audit?event_type=api_key_created", u.Token, nil, http.StatusOK)); evs[0]["is_reported"] != true {
			t.Fatalf("event not reported: %v", evs[0])
		}
		// A second report is refused on the page as by REST.
		if q := b.do("POST", action, url.Values{"csrf_token": {tok}, "reason": {"other"}}); q.status != http.StatusConflict ||
			!strings.Contains(q.body, "already reported") || reports() != 1 {
			t.Fatalf("second report: %d %s", q.status, q.body)
		}
		// A review shows on the page.
		e.Call(t, "PATCH", "/v1/admin/audit/reports/"+rep["id"].(string), admin.Token,
			map[string]any{"status": "resolved", "resolution_notes": "A key your script made."}, http.StatusOK)
		if p := b.get("/account/activity"); !strings.Contains(p.body, "Report: Resolved") || !strings.Contains(p.body, "A key your script made.") {
			t.Fatalf("after review: %s", p.body)
		}

		// In the user's language.
		execSQL(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, u.ID)
		de := b.get("/account/activity?event_type=api_key_created")
		if !strings.Contains(de.body, "Kontoaktivität") || !strings.Contains(de.body, "API-Schlüssel erstellt") ||
			!strings.Contains(de.body, e.Clock.Now().UTC().Format("02.01.2006")) || !strings.Contains(de.body, "Meldung: Erledigt") {
			t.Fatalf("German page: %s", de.body)
		}
	})
}

func TestConsoleIntegrations(t *testing.T) {
	fake := newFakeStreamPlatform(t)
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		other := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		b := signedInBrowser(t, e, u)
		rest := func() []integrations.Integration {
			var all []integrations.Integration
			e.Call(t, "GET", "/v1/integrations", u.Token, nil, http.StatusOK).Decode(t, &all)
			return all
		}

		p := b.get("/account/integrations")
		if p.status != http.StatusOK || !strings.Contains(p.body, "No streaming account is connected yet") ||
			!strings.Contains(p.body, `action="/account/integrations/connect"`) {
			t.Fatalf("empty page: %d %s", p.status, p.body)
		}
		tok := formToken(t, p.body, "/account/integrations/connect")

		// An unknown scope is refused and starts nothing.
		if q := b.do("POST", "/account/integrations/connect", url.Values{"csrf_token": {tok}, "scope": {"everything"}}); q.status != http.StatusBadRequest || q.location != "" {
			t.Fatalf("bad scope: %d %q", q.status, q.location)
		}
		// Connect: the page starts the flow REST starts and sends the
		// browser to the platform, whose callback returns to the page.
		q := b.do("POST", "/account/integrations/connect", url.Values{"csrf_token": {tok}, "scope": {"chat:read"}})
		if q.status != http.StatusSeeOther {
			t.Fatalf("connect: %d %s", q.status, q.body)
		}
		au, _ := url.Parse(q.location)
		if !strings.HasPrefix(q.location, fake.URL+"/oauth2/authorize?") || au.Query().Get("scope") != "moderator:read:followers chat:read" ||
			au.Query().Get("redirect_uri") != e.URL+"/v1/integrations/callback/streamplatform" {
			t.Fatalf("authorization URL %s", q.location)
		}
		cb := b.get("/v1/integrations/callback/streamplatform?" + url.Values{"code": {"good-code"}, "state": {au.Query().Get("state")}}.Encode())
		back, _ := url.Parse(cb.location)
		if cb.status != http.StatusFound || !strings.HasPrefix(cb.location, e.URL+"/account/integrations?") || back.Query().Get("integration_id") == "" {
			t.Fatalf("callback: %d %q %s", cb.status, cb.location, cb.body)
		}
		id := back.Query().Get("integration_id")
		p = b.get(cb.location)
		if p.status != http.StatusOK || !strings.Contains(p.body, "Your streaming account TwitchDev (twitchdev) is connected") ||
			!strings.Contains(p.body, "Read your chat (chat bot)") {
			t.Fatalf("after connecting: %s", p.body)
		}
		if all := rest(); len(all) != 1 || all[0].ID != id || all[0].BotStatus != "active" {
			t.Fatalf("REST after connecting: %+v", all)
		}

		// Statistics are read from the platform and shown in the answer.
		q = b.do("POST", "/account/integrations/"+id+"/stats", url.Values{"csrf_token": {tok}})
		if q.status != http.StatusOK || !strings.Contains(q.body, "<dd>8</dd>") || !strings.Contains(q.body, "<dd>3</dd>") ||
			!strings.Contains(q.body, "<dd>42<") || !strings.Contains(q.body, "Building hmid") {
			t.Fatalf("stats: %d %s", q.status, q.body)
		}

		// Refresh.
		e.Clock.Advance(time.Hour)
		q = b.do("POST", "/account/integrations/"+id+"/refresh", url.Values{"csrf_token": {tok}})
		if q.status != http.StatusSeeOther || q.location != "/account/integrations" {
			t.Fatalf("refresh: %d %s", q.status, q.body)
		}
		if all := rest(); all[0].LastRefreshedAt == nil || !all[0].LastRefreshedAt.Equal(e.Clock.Now()) {
			t.Fatalf("REST after refresh: %+v", all[0])
		}
		if p := b.get("/account/integrations"); !strings.Contains(p.body, "The access token was renewed") || !strings.Contains(p.body, "Token last renewed") {
			t.Fatalf("after refresh: %s", p.body)
		}

		// Bot status.
		if q := b.do("POST", "/account/integrations/"+id+"/bot-status", url.Values{"csrf_token": {tok}, "bot_status": {"paused"}}); q.status != http.StatusSeeOther {
			t.Fatalf("bot status: %d %s", q.status, q.body)
		}
		if all := rest(); all[0].BotStatus != "paused" {
			t.Fatalf("REST bot status %s", all[0].BotStatus)
		}
		for _, bad := range []url.Values{{"bot_status": {"asleep"}}, {}} {
			bad.Set("csrf_token", tok)
			if q := b.do("POST", "/account/integrations/"+id+"/bot-status", bad); q.status != http.StatusBadRequest || !strings.Contains(q.body, "bot_status") {
				t.Fatalf("bad bot status %v: %d %s", bad, q.status, q.body)
			}
		}
		if all := rest(); all[0].BotStatus != "paused" {
			t.Fatalf("REST bot status after refused changes %s", all[0].BotStatus)
		}

		// Someone else's integration is not found from their page either.
		ob := signedInBrowser(t, e, other)
		otok := formToken(t, ob.get("/account/integrations").body, "/account/integrations/connect")
		for _, action := range []string{"refresh", "stats", "disconnect"} {
			if q := ob.do("POST", "/account/integrations/"+id+"/"+action, url.Values{"csrf_token": {otok}, "confirm": {"yes"}}); q.status != http.StatusNotFound {
				t.Errorf("other user %s: %d", action, q.status)
			}
		}

		// Disconnect needs its confirmation.
		if q := b.do("POST", "/account/integrations/"+id+"/disconnect", url.Values{"csrf_token": {tok}}); q.status != http.StatusBadRequest || len(rest()) != 1 {
			t.Fatalf("unconfirmed disconnect: %d", q.status)
		}
		if q := b.do("POST", "/account/integrations/"+id+"/disconnect", url.Values{"csrf_token": {tok}, "confirm": {"yes"}}); q.status != http.StatusSeeOther {
			t.Fatalf("disconnect: %d %s", q.status, q.body)
		}
		if all := rest(); len(all) != 0 {
			t.Fatalf("REST after disconnect: %+v", all)
		}
		e.Call(t, "GET", "/v1/integrations/"+id, u.Token, nil, http.StatusNotFound)

		// Declining on the platform comes back as an explained error.
		q = b.do("POST", "/account/integrations/connect", url.Values{"csrf_token": {tok}})
		au, _ = url.Parse(q.location)
		cb = b.get("/v1/integrations/callback/streamplatform?" + url.Values{"error": {"access_denied"}, "state": {au.Query().Get("state")}}.Encode())
		if p := b.get(cb.location); !strings.Contains(p.body, "Connecting was cancelled") {
			t.Fatalf("declined: %q %s", cb.location, p.body)
		}

		// Without the platform's client configured the page says so.
		saved := e.Server.Integrations.Provider
		e.Server.Integrations.Provider.ClientSecret = ""
		p = b.get("/account/integrations")
		if !strings.Contains(p.body, "the streaming platform is not configured") || !strings.Contains(p.body, "HMID_STREAMPLATFORM_CLIENT_ID") ||
			strings.Contains(p.body, `action="/account/integrations/connect"`) {
			t.Fatalf("unconfigured page: %s", p.body)
		}
		if q := b.do("POST", "/account/integrations/connect", url.Values{"csrf_token": {tok}}); q.status != http.StatusServiceUnavailable {
			t.Fatalf("connect unconfigured: %d", q.status)
		}
		e.Server.Integrations.Provider = saved
	}, func(c *config.Config) {
		c.StreamPlatform = config.ProviderConfig{ClientID: "cid", ClientSecret: "csecret", AuthURL: fake.URL + "/oauth2/authorize",
			TokenURL: fake.URL + "/oauth2/token", APIURL: fake.URL + "/helix"}
	})
}
