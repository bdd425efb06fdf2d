package app_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/audit"
	"hmid/internal/config"
	"hmid/internal/db"
	"hmid/internal/geoip"
	"hmid/internal/geoip/geoiptest"
	"hmid/internal/mail"
	"hmid/internal/mail/mailtest"
)

// record stores an audit event through the shared writer, one second after
// the previous one so the order is known.
func record(t *testing.T, e *apptest.Env, ev audit.Event) string {
	t.Helper()
	e.Clock.Advance(time.Second)
	id, err := e.Server.Audit.Record(context.Background(), e.Server.DB, ev)
	if err != nil {
		t.Fatalf("record: %v", err)
	}
	return id
}

func auditEvents(t *testing.T, r *apptest.Resp) []map[string]any {
	t.Helper()
	var page struct {
		Events []map[string]any `json:"events"`
	}
	r.Decode(t, &page)
	return page.Events
}

func field(evs []map[string]any, key string) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = fmt.Sprint(ev[key])
	}
	return out
}

var auditFields = []string{"id", "user_id", "event_type", "resource_type", "resource_id", "actor_id", "ip_address", "user_agent",
	"description", "metadata", "status", "error_message", "country_code", "country_name", "city", "region", "source_service",
	"created_at", "is_reported"}

func TestAuditListMine(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		record(t, e, audit.Event{UserID: u.ID, EventType: audit.Login, ResourceType: "session", IPAddress: "10.0.0.1", Metadata: map[string]any{"provider": "email"}})
		record(t, e, audit.Event{UserID: u.ID, EventType: audit.LoginFailed, ResourceType: "session", Failed: true, ErrorMessage: "bad password"})
		record(t, e, audit.Event{UserID: u.ID, EventType: audit.APIKeyCreated, ResourceType: "api_key", ResourceID: "k1"})
		record(t, e, audit.Event{UserID: other.ID, EventType: audit.Login})

		e.Call(t, "GET", "/v1/users/me/audit", "", nil, http.StatusUnauthorized)
		r := e.Call(t, "GET", "/v1/users/me/audit", u.Token, nil, http.StatusOK)
		m := r.JSON()
		if m["total_count"] != 3.0 || m["page"] != 1.0 || m["limit"] != 20.0 || m["total_pages"] != 1.0 {
			t.Fatalf("envelope = %v", m)
		}
		evs := auditEvents(t, r)
		if got := field(evs, "event_type"); !slices.Equal(got, []string{"api_key_created", "login_failed", "login"}) {
			t.Fatalf("newest first, own only: %v", got)
		}
		if got := slices.Sorted(maps.Keys(evs[0])); !slices.Equal(got, slices.Sorted(slices.Values(auditFields))) {
			t.Fatalf("event fields = %v", got)
		}
		if evs[2]["metadata"].(map[string]any)["provider"] != "email" || evs[2]["ip_address"] != "10.0.0.1" || evs[2]["source_service"] != "api" {
			t.Fatalf("login event = %v", evs[2])
		}
		if evs[1]["status"] != "failure" || evs[1]["error_message"] != "bad password" || evs[0]["status"] != "success" || evs[0]["error_message"] != nil {
			t.Fatalf("statuses = %v / %v", evs[1], evs[0])
		}

		for q, want := range map[string][]string{
			"?event_type=login":                     {"login"},
			"?status=failure":                       {"login_failed"},
			"?status=success":                       {"api_key_created", "login"},
			"?resource_type=api_key":                {"api_key_created"},
			"?resource_type=session&status=success": {"login"},
		} {
			got := field(auditEvents(t, e.Call(t, "GET", "/v1/users/me/audit"+q, u.Token, nil, http.StatusOK)), "event_type")
			if !slices.Equal(got, want) {
				t.Errorf("%s = %v, want %v", q, got, want)
			}
		}
		for _, q := range []string{"?event_type=nope", "?status=ok"} {
			e.Call(t, "GET", "/v1/users/me/audit"+q, u.Token, nil, http.StatusBadRequest)
		}

		// Pagination.
		r = e.Call(t, "GET", "/v1/users/me/audit?limit=2&page=2", u.Token, nil, http.StatusOK)
		m = r.JSON()
		if m["total_count"] != 3.0 || m["total_pages"] != 2.0 || m["limit"] != 2.0 || m["page"] != 2.0 {
			t.Fatalf("page 2 = %v", m)
		}
		if got := field(auditEvents(t, r), "event_type"); !slices.Equal(got, []string{"login"}) {
			t.Fatalf("page 2 events = %v", got)
		}
		links := m["_links"].(map[string]any)
		if links["prev"] == nil || links["next"] != nil || !strings.Contains(links["self"].(string), "page=2") {
			t.Fatalf("links = %v", links)
		}
		r = e.Call(t, "GET", "/v1/users/me/audit?limit=500&page=9", u.Token, nil, http.StatusOK)
		if m := r.JSON(); m["limit"] != 100.0 || len(auditEvents(t, r)) != 0 {
			t.Fatalf("clamped limit, past the end = %v", m)
		}

		// An ownerless system key has no audit log of its own.
		e.Call(t, "GET", "/v1/users/me/audit", e.SystemKey, nil, http.StatusForbidden)
	})
}

func TestAuditListUser(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		admin := e.Admin(t)
		record(t, e, audit.Event{UserID: u.ID, EventType: audit.Login})
		record(t, e, audit.Event{UserID: u.ID, EventType: audit.Logout})
		path := "/v1/users/" + u.ID + "/audit"
		e.Call(t, "GET", path, "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", path, u.Token, nil, http.StatusForbidden)
		r := e.Call(t, "GET", path, admin.Token, nil, http.StatusOK)
		if got := field(auditEvents(t, r), "event_type"); !slices.Equal(got, []string{"logout", "login"}) {
			t.Fatalf("events = %v", got)
		}
		r = e.Call(t, "GET", path+"?event_type=login", e.SystemKey, nil, http.StatusOK)
		if r.JSON()["total_count"] != 1.0 {
			t.Fatalf("filtered = %s", r.Body)
		}
		key, _ := e.NewAPIKey(t, "", "audit:read")
		e.Call(t, "GET", path, key, nil, http.StatusOK)
		e.Call(t, "GET", path+"?status=maybe", admin.Token, nil, http.StatusBadRequest)
		e.Call(t, "GET", "/v1/users/no-such-user/audit", admin.Token, nil, http.StatusNotFound)
	})
}

func TestAdminAuditFiltersAndSorts(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		ann := e.NewUser(t, apptest.UserSpec{Username: "Ann_Smith", Email: "Ann.Smith@Example.test"})
		bob := e.NewUser(t, apptest.UserSpec{Username: "bob", Email: "bob@other.test"})
		day1 := e.Clock.Now()
		record(t, e, audit.Event{UserID: ann.ID, EventType: audit.Login})
		record(t, e, audit.Event{UserID: bob.ID, EventType: audit.LoginFailed, Failed: true})
		e.Clock.Advance(48 * time.Hour)
		day3 := e.Clock.Now()
		record(t, e, audit.Event{UserID: ann.ID, EventType: audit.DataExported, ResourceType: "user"})
		record(t, e, audit.Event{UserID: "discord:42", EventType: audit.BotCommandExecuted, SourceService: "chat_platform_bot"})
		reported := record(t, e, audit.Event{UserID: bob.ID, EventType: audit.Logout})
		e.Call(t, "POST", "/v1/users/me/audit/"+reported+"/report", bob.Token, map[string]any{"reason": "not_me"}, http.StatusCreated)

		list := func(q url.Values) []string {
			t.Helper()
			return field(auditEvents(t, e.Call(t, "GET", "/v1/admin/audit?"+q.Encode(), admin.Token, nil, http.StatusOK)), "event_type")
		}
		cases := []struct {
			q    url.Values
			want []string
		}{
			{url.Values{}, []string{"logout", "bot_command_executed", "data_exported", "login_failed", "login"}},
			{url.Values{"user_id": {ann.ID}}, []string{"data_exported", "login"}},
			{url.Values{"user_search": {"ann_s"}}, []string{"data_exported", "login"}},
			{url.Values{"user_search": {"ANN.SMITH@EX"}}, []string{"data_exported", "login"}},
			{url.Values{"user_search": {"EXAMPLE.TEST"}}, []string{}}, // the start of a username or email, not a part inside
			{url.Values{"user_search": {bob.ID}}, []string{"logout", "login_failed"}},
			{url.Values{"user_search": {"nobody"}}, []string{}},
			{url.Values{"user_search": {"%"}}, []string{}},
			{url.Values{"event_type": {"login"}}, []string{"login"}},
			{url.Values{"status": {"failure"}}, []string{"login_failed"}},
			{url.Values{"resource_type": {"user"}}, []string{"data_exported"}},
			{url.Values{"source_service": {"chat_platform_bot"}}, []string{"bot_command_executed"}},
			{url.Values{"is_reported": {"true"}}, []string{"logout"}},
			{url.Values{"is_reported": {"false"}, "user_id": {bob.ID}}, []string{"login_failed"}},
			{url.Values{"start_date": {day3.Format(time.RFC3339)}}, []string{"logout", "bot_command_executed", "data_exported"}},
			{url.Values{"end_date": {day1.Add(time.Hour).Format(time.RFC3339)}}, []string{"login_failed", "login"}},
			{url.Values{"start_date": {day1.Format(time.DateOnly)}, "end_date": {day1.Format(time.DateOnly)}}, []string{"login_failed", "login"}},
			{url.Values{"sort_field": {"event_type"}, "sort_direction": {"asc"}}, []string{"bot_command_executed", "data_exported", "login", "login_failed", "logout"}},
			{url.Values{"sort_field": {"event_type"}}, []string{"logout", "login_failed", "login", "data_exported", "bot_command_executed"}},
			{url.Values{"sort_field": {"status"}, "sort_direction": {"asc"}}, []string{"login_failed", "login", "data_exported", "bot_command_executed", "logout"}},
			{url.Values{"sort_field": {"created_at"}, "sort_direction": {"asc"}}, []string{"login", "login_failed", "data_exported", "bot_command_executed", "logout"}},
		}
		for _, c := range cases {
			if got := list(c.q); !slices.Equal(got, c.want) {
				t.Errorf("%s = %v, want %v", c.q.Encode(), got, c.want)
			}
		}
		// Sorting by user_id groups each user's events together.
		users := field(auditEvents(t, e.Call(t, "GET", "/v1/admin/audit?sort_field=user_id&sort_direction=asc", admin.Token, nil, http.StatusOK)), "user_id")
		if !slices.IsSorted(users) {
			t.Errorf("user_id asc = %v", users)
		}
		for _, q := range []string{"event_type=x", "status=x", "source_service=x", "sort_field=username", "sort_direction=up",
			"is_reported=yes", "start_date=yesterday", "end_date=2026-13-01", "start_date=2026-11-23&end_date=2026-11-22"} {
			e.Call(t, "GET", "/v1/admin/audit?"+q, admin.Token, nil, http.StatusBadRequest)
		}
		e.Call(t, "GET", "/v1/admin/audit", "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/admin/audit", ann.Token, nil, http.StatusForbidden)
	})
}

func TestAuditReports(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		u := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		if _, err := e.Server.DB.ExecContext(context.Background(), `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, u.ID); err != nil {
			t.Fatal(err)
		}
		ev := record(t, e, audit.Event{UserID: u.ID, EventType: audit.Login, IPAddress: "198.51.100.7"})
		otherEv := record(t, e, audit.Event{UserID: other.ID, EventType: audit.Login})
		path := "/v1/users/me/audit/" + ev + "/report"

		e.Call(t, "POST", path, "", map[string]any{"reason": "not_me"}, http.StatusUnauthorized)
		e.Call(t, "POST", path, u.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "POST", path, u.Token, map[string]any{"reason": "bored"}, http.StatusBadRequest)
		e.Call(t, "POST", path, u.Token, `{"reason":`, http.StatusBadRequest)
		e.Call(t, "POST", path, u.Token, map[string]any{"reason": "not_me", "description": strings.Repeat("x", 2001)}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/users/me/audit/"+otherEv+"/report", u.Token, map[string]any{"reason": "not_me"}, http.StatusNotFound)
		e.Call(t, "POST", "/v1/users/me/audit/nope/report", u.Token, map[string]any{"reason": "not_me"}, http.StatusNotFound)

		r := e.Call(t, "POST", path, u.Token, map[string]any{"reason": "unknown_location", "description": "I was at home"}, http.StatusCreated)
		m := r.JSON()
		rep := m["report"].(map[string]any)
		if m["success"] != true || m["error"] != nil || rep["status"] != "pending" || rep["reason"] != "unknown_location" ||
			rep["audit_event_id"] != ev || rep["user_id"] != u.ID || rep["description"] != "I was at home" || rep["reviewed_by"] != nil {
			t.Fatalf("report = %s", r.Body)
		}
		repID := rep["id"].(string)
		e.Call(t, "POST", path, u.Token, map[string]any{"reason": "not_me"}, http.StatusConflict)
		if evs := auditEvents(t, e.Call(t, "GET", "/v1/users/me/audit?event_type=login", u.Token, nil, http.StatusOK)); evs[0]["is_reported"] != true {
			t.Fatalf("event not marked reported: %v", evs[0])
		}

		mine := e.Call(t, "GET", "/v1/users/me/audit/reports", u.Token, nil, http.StatusOK).Array()
		if len(mine) != 1 || mine[0].(map[string]any)["id"] != repID {
			t.Fatalf("my reports = %v", mine)
		}
		if got := e.Call(t, "GET", "/v1/users/me/audit/reports", other.Token, nil, http.StatusOK).Array(); len(got) != 0 {
			t.Fatalf("other's reports = %v", got)
		}
		e.Call(t, "GET", "/v1/users/me/audit/reports", "", nil, http.StatusUnauthorized)

		e.Call(t, "GET", "/v1/admin/audit/reports", u.Token, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/admin/audit/reports?status=open", admin.Token, nil, http.StatusBadRequest)
		if got := e.Call(t, "GET", "/v1/admin/audit/reports?status=pending", admin.Token, nil, http.StatusOK).Array(); len(got) != 1 {
			t.Fatalf("pending = %v", got)
		}
		if got := e.Call(t, "GET", "/v1/admin/audit/reports?status=resolved", admin.Token, nil, http.StatusOK).Array(); len(got) != 0 {
			t.Fatalf("resolved = %v", got)
		}

		rp := "/v1/admin/audit/reports/" + repID
		readOnly, _ := e.NewAPIKey(t, "", "audit:read")
		e.Call(t, "PATCH", rp, "", map[string]any{"status": "resolved"}, http.StatusUnauthorized)
		e.Call(t, "PATCH", rp, readOnly, map[string]any{"status": "resolved"}, http.StatusForbidden)
		e.Call(t, "PATCH", rp, admin.Token, map[string]any{"status": "closed"}, http.StatusBadRequest)
		e.Call(t, "PATCH", rp, admin.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PATCH", rp, admin.Token, map[string]any{"status": 3}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/admin/audit/reports/nope", admin.Token, map[string]any{"status": "resolved"}, http.StatusNotFound)
		if got, _ := mailtest.Outbox(context.Background(), e.Server.DB, u.Email); len(got) != 0 {
			t.Fatalf("mail before review: %v", got)
		}

		e.Clock.Advance(time.Hour)
		r = e.Call(t, "PATCH", rp, admin.Token, map[string]any{"status": "resolved", "resolution_notes": "Login from your new phone."}, http.StatusOK)
		rep = r.JSON()
		if rep["status"] != "resolved" || rep["reviewed_by"] != admin.ID || rep["resolution_notes"] != "Login from your new phone." ||
			rep["reviewed_at"] != e.Clock.Now().Format(time.RFC3339) {
			t.Fatalf("reviewed = %s", r.Body)
		}
		msgs, err := mailtest.Outbox(context.Background(), e.Server.DB, u.Email)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("outbox = %v, %v", msgs, err)
		}
		if msgs[0].Kind != mail.KindAuditReportStatusChanged || msgs[0].Locale != "de" ||
			!strings.Contains(msgs[0].Text, repID) || !strings.Contains(msgs[0].Text, "Login from your new phone.") {
			t.Fatalf("mail = %+v", msgs[0])
		}
		// The same values again change nothing and send nothing.
		e.Call(t, "PATCH", rp, admin.Token, map[string]any{"status": "resolved"}, http.StatusOK)
		// Notes only; a resolved report may be reopened.
		r = e.Call(t, "PATCH", rp, e.SystemKey, map[string]any{"status": "pending", "resolution_notes": nil}, http.StatusOK)
		if rep := r.JSON(); rep["status"] != "pending" || rep["resolution_notes"] != nil {
			t.Fatalf("reopened = %s", r.Body)
		}
		if msgs, _ := mailtest.Outbox(context.Background(), e.Server.DB, u.Email); len(msgs) != 2 {
			t.Fatalf("outbox after reopen = %d", len(msgs))
		}
		if got := e.Call(t, "GET", "/v1/admin/audit/reports?status=pending", admin.Token, nil, http.StatusOK).Array(); len(got) != 1 {
			t.Fatalf("pending again = %v", got)
		}
	})
}

func TestInternalAudit(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		u := e.NewUser(t, apptest.UserSpec{})
		writer, _ := e.NewAPIKey(t, "", "audit:write")
		post := func(tok string, hdr map[string]string, body any, want int) *apptest.Resp {
			t.Helper()
			r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/internal/audit", Token: tok, Header: hdr, Body: body})
			if r.Status != want {
				t.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
			}
			return r
		}
		appKey := map[string]string{"X-ID-App-Key": e.SystemKey}
		body := map[string]any{"user_id": u.ID, "event_type": "password_changed", "resource_type": "user", "resource_id": u.ID,
			"status": "success", "source_service": "id", "metadata": map[string]any{"via": "settings"}, "actor_id": admin.ID,
			"description": "Password changed", "ip_address": "203.0.113.9", "user_agent": "Firefox"}

		r := post("", appKey, body, http.StatusCreated)
		ev := r.JSON()
		if ev["user_id"] != u.ID || ev["event_type"] != "password_changed" || ev["actor_id"] != admin.ID || ev["source_service"] != "id" ||
			ev["ip_address"] != "203.0.113.9" || ev["user_agent"] != "Firefox" || ev["metadata"].(map[string]any)["via"] != "settings" ||
			ev["is_reported"] != false || ev["status"] != "success" {
			t.Fatalf("event = %s", r.Body)
		}
		if got := field(auditEvents(t, e.Call(t, "GET", "/v1/users/me/audit", u.Token, nil, http.StatusOK)), "id"); !slices.Equal(got, []string{ev["id"].(string)}) {
			t.Fatalf("user sees %v", got)
		}
		post(admin.Token, nil, body, http.StatusCreated)
		post(writer, nil, body, http.StatusCreated)
		post(e.SystemKey, nil, body, http.StatusCreated)

		post("", nil, body, http.StatusUnauthorized)
		post("", map[string]string{"X-ID-App-Key": "hm_notakey"}, body, http.StatusUnauthorized)
		userKey, _ := e.NewAPIKey(t, u.ID)
		post("", map[string]string{"X-ID-App-Key": userKey}, body, http.StatusUnauthorized)
		post(u.Token, nil, body, http.StatusUnauthorized)

		with := func(k string, v any) map[string]any {
			c := maps.Clone(body)
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
			return c
		}
		unknown := with("user_id", "no-such-user")
		unknown["source_service"] = "api"
		post("", appKey, unknown, http.StatusBadRequest)
		api := with("source_service", "api")
		post("", appKey, api, http.StatusCreated)
		noUser := with("user_id", nil)
		noUser["source_service"] = "api"
		post("", appKey, noUser, http.StatusBadRequest)
		post("", appKey, with("actor_id", "no-such-actor"), http.StatusBadRequest)
		post("", appKey, with("event_type", "made_up"), http.StatusBadRequest)
		post("", appKey, with("status", "ok"), http.StatusBadRequest)
		post("", appKey, with("source_service", "fax"), http.StatusBadRequest)
		post("", appKey, with("ip_address", "not-an-ip"), http.StatusBadRequest)
		post("", appKey, with("metadata", []any{1}), http.StatusBadRequest)
		post("", appKey, `{"event_type":`, http.StatusBadRequest)

		bot := map[string]any{"user_id": "discord:1234567890", "event_type": "bot_command_executed", "resource_type": "command",
			"status": "failure", "error_message": "missing permission", "source_service": "chat_platform_bot", "metadata": map[string]any{"command": "/track"}}
		r = post("", appKey, bot, http.StatusCreated)
		if ev := r.JSON(); ev["user_id"] != "discord:1234567890" || ev["status"] != "failure" || ev["error_message"] != "missing permission" || ev["ip_address"] != nil {
			t.Fatalf("bot event = %s", r.Body)
		}
		bot["user_id"] = nil
		bot["source_service"] = "stream_platform_bot"
		if r := post("", appKey, bot, http.StatusCreated); r.JSON()["user_id"] != nil {
			t.Fatalf("null user = %s", r.Body)
		}
	})
}

// withGeoIP serves a tiny GeoIP database and believes X-Forwarded-For from
// the loopback test client.
func withGeoIP(t *testing.T) apptest.Option {
	path := filepath.Join(t.TempDir(), "city.mmdb")
	err := geoiptest.WriteDB(path, []geoiptest.Entry{
		{CIDR: "81.2.69.0/24", Location: geoip.Location{CountryCode: "GB", CountryName: "United Kingdom", City: "London", Region: "England"}},
		{CIDR: "2001:db8::/32", Location: geoip.Location{CountryCode: "DE", CountryName: "Germany"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return func(c *config.Config) {
		c.GeoIPDB = path
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	}
}

func TestAuditGeolocation(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		// The export audits data_exported with the client address seen through the trusted proxy.
		r := e.Do(t, apptest.Req{Method: "GET", Path: "/v1/user/export", Token: u.Token, Header: map[string]string{"X-Forwarded-For": "81.2.69.142"}})
		if r.Status != http.StatusOK {
			t.Fatalf("export: %d %s", r.Status, r.Body)
		}
		evs := auditEvents(t, e.Call(t, "GET", "/v1/users/me/audit?event_type=data_exported", u.Token, nil, http.StatusOK))
		if len(evs) != 1 {
			t.Fatalf("events = %v", evs)
		}
		ev := evs[0]
		if ev["ip_address"] != "81.2.69.142" || ev["country_code"] != "GB" || ev["country_name"] != "United Kingdom" || ev["city"] != "London" || ev["region"] != "England" {
			t.Fatalf("geolocated event = %v", ev)
		}
		// The internal endpoint locates the end user's address it is given.
		r = e.Do(t, apptest.Req{Method: "POST", Path: "/v1/internal/audit", Header: map[string]string{"X-ID-App-Key": e.SystemKey},
			Body: map[string]any{"user_id": u.ID, "event_type": "login", "status": "success", "source_service": "id", "ip_address": "2001:db8::1"}})
		if m := r.JSON(); r.Status != http.StatusCreated || m["country_code"] != "DE" || m["country_name"] != "Germany" || m["city"] != nil {
			t.Fatalf("internal = %d %s", r.Status, r.Body)
		}
		// Private addresses are not located.
		r = e.Do(t, apptest.Req{Method: "POST", Path: "/v1/internal/audit", Header: map[string]string{"X-ID-App-Key": e.SystemKey},
			Body: map[string]any{"user_id": u.ID, "event_type": "login", "status": "success", "source_service": "id", "ip_address": "10.1.2.3"}})
		if m := r.JSON(); m["country_code"] != nil {
			t.Fatalf("private = %s", r.Body)
		}
	}, withGeoIP(t))
}

// openZip opens a ZIP archive and returns its files by name.
func openZip(t *testing.T, body []byte) map[string][]byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatalf("not a ZIP archive (%d bytes): %v", len(body), err)
	}
	files := map[string][]byte{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name] = b
	}
	return files
}

func TestExport(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		u := e.NewUser(t, apptest.UserSpec{Username: "export_me", Roles: []string{"role_user", "role_developer"}})
		exec := func(q string, args ...any) {
			t.Helper()
			if _, err := e.Server.DB.ExecContext(ctx, q, args...); err != nil {
				t.Fatalf("%v: %s", err, q)
			}
		}
		now := e.Clock.Now()
		exec(`UPDATE users SET preferred_locale = 'de', privacy_mode = TRUE, last_login_at = $2 WHERE id = $1`, u.ID, db.TS(now))
		exec(`UPDATE sessions SET ip_address = '203.0.113.77', browser_name = 'Firefox', os_name = 'Linux' WHERE id = $1`, u.SessionID)
		_, revoked := e.NewSession(t, u.ID)
		exec(`UPDATE sessions SET revoked_at = $2 WHERE id = $1`, revoked, db.TS(now))
		_, expired := e.NewSession(t, u.ID)
		exec(`UPDATE sessions SET expires_at = $2 WHERE id = $1`, expired, db.TS(now.Add(-time.Minute)))
		key, _ := e.NewAPIKey(t, u.ID, "gps:read")

		e.Call(t, "GET", "/v1/user/export", "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/user/export", e.SystemKey, nil, http.StatusUnauthorized)

		r := e.Call(t, "GET", "/v1/user/export", u.Token, nil, http.StatusOK)
		if ct := r.Header.Get("Content-Type"); ct != "application/zip" {
			t.Fatalf("Content-Type = %q", ct)
		}
		if cd := r.Header.Get("Content-Disposition"); cd != `attachment; filename="hmid-data-export-2026-11-22.zip"` {
			t.Fatalf("Content-Disposition = %q", cd)
		}
		files := openZip(t, r.Body)
		if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, []string{"README.txt", "data.json", "report.pdf"}) {
			t.Fatalf("files = %v", got)
		}
		if !bytes.HasPrefix(files["report.pdf"], []byte("%PDF")) || !strings.Contains(string(files["README.txt"]), "data.json") {
			t.Fatal("report.pdf or README.txt malformed")
		}
		raw := files["data.json"]
		if bytes.Contains(raw, []byte("203.0.113.77")) || bytes.Contains(raw, []byte(key)) {
			t.Fatalf("raw IP or full key in data.json: %s", raw)
		}
		var d map[string]any
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		wantKeys := []string{"apiKeys", "connectedApps", "deletionStatus", "exportInfo", "exportLogs", "ownedApps", "passkeys", "platformAccounts", "roles", "sessions", "twoFactorAuth", "user"}
		if got := slices.Sorted(maps.Keys(d)); !slices.Equal(got, wantKeys) {
			t.Fatalf("data.json keys = %v", got)
		}
		info := d["exportInfo"].(map[string]any)
		if info["format"] != "zip" || info["version"] != "1.0" || info["exportedAt"] != "2026-11-22T12:00:00Z" {
			t.Fatalf("exportInfo = %v", info)
		}
		user := d["user"].(map[string]any)
		if user["id"] != u.ID || user["username"] != "export_me" || user["privacyMode"] != true || user["avatarsEnabled"] != true ||
			user["createdAt"] != "2026-11-22T12:00:00Z" || user["lastLoginAt"] != "2026-11-22T12:00:00Z" {
			t.Fatalf("user = %v", user)
		}
		pas := d["platformAccounts"].([]any)
		if len(pas) != 1 {
			t.Fatalf("platformAccounts = %v", pas)
		}
		if pa := pas[0].(map[string]any); pa["username"] != "export_me" || pa["email"] != "export_me@example.test" || pa["isPrimary"] != true || pa["platform"] == "" {
			t.Fatalf("platform account = %v", pa)
		}
		sessions := d["sessions"].([]any)
		if len(sessions) != 1 {
			t.Fatalf("only the active session: %v", sessions)
		}
		s := sessions[0].(map[string]any)
		if s["id"] != u.SessionID || s["ipAddress"] == "" || s["browserName"] != "Firefox" || s["osName"] != "Linux" || s["provider"] != "email" ||
			s["deviceType"] != "desktop" || s["providerName"] == "" {
			t.Fatalf("session = %v", s)
		}
		keys := d["apiKeys"].([]any)
		if len(keys) != 1 {
			t.Fatalf("apiKeys = %v", keys)
		}
		if k := keys[0].(map[string]any); k["name"] != "test key" || !strings.HasPrefix(key, strings.TrimSuffix(k["keyPrefix"].(string), "…")) ||
			fmt.Sprint(k["scopes"]) != "[gps:read]" || k["isActive"] != true {
			t.Fatalf("api key = %v", k)
		}
		if got := fmt.Sprint(d["roles"]); got != "[Developer User]" {
			t.Fatalf("roles = %v", got)
		}
		if tf := d["twoFactorAuth"].(map[string]any); tf["enabled"] != false {
			t.Fatalf("twoFactorAuth = %v", tf)
		}
		if ds := d["deletionStatus"].(map[string]any); ds["isDeleted"] != false || ds["isScheduledForDeletion"] != false {
			t.Fatalf("deletionStatus = %v", ds)
		}
		for _, k := range []string{"connectedApps", "ownedApps", "exportLogs"} {
			if l := d[k].([]any); len(l) != 0 {
				t.Fatalf("%s = %v", k, l)
			}
		}

		// The export is in the history and the audit log.
		logs := e.Call(t, "GET", "/v1/user/export/logs", u.Token, nil, http.StatusOK).JSON()
		if logs["total"] != 1.0 || logs["hasMore"] != false {
			t.Fatalf("logs = %v", logs)
		}
		l := logs["logs"].([]any)[0].(map[string]any)
		if l["exportFormat"] != "zip" || l["locale"] != "de" || l["fileSizeBytes"] != float64(len(r.Body)) || l["ipAddress"] != "127.0.0.1" ||
			l["userAgent"] != "Go-http-client/1.1" || l["exportedAt"] != "2026-11-22T12:00:00Z" || l["id"] == "" {
			t.Fatalf("log = %v", l)
		}
		evs := auditEvents(t, e.Call(t, "GET", "/v1/users/me/audit?event_type=data_exported", u.Token, nil, http.StatusOK))
		if len(evs) != 1 || evs[0]["resource_id"] != u.ID {
			t.Fatalf("audit = %v", evs)
		}

		// An API key of the user exports too, and the archive lists the earlier export.
		e.Clock.Advance(24 * time.Hour)
		r = e.Call(t, "GET", "/v1/user/export", key, nil, http.StatusOK)
		if cd := r.Header.Get("Content-Disposition"); cd != `attachment; filename="hmid-data-export-2026-11-23.zip"` {
			t.Fatalf("Content-Disposition = %q", cd)
		}
		if err := json.Unmarshal(openZip(t, r.Body)["data.json"], &d); err != nil {
			t.Fatal(err)
		}
		if l := d["exportLogs"].([]any); len(l) != 1 || l[0].(map[string]any)["exportedAt"] != "2026-11-22T12:00:00Z" {
			t.Fatalf("exportLogs = %v", l)
		}
	})
}

func TestExportLogsPaging(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		base := e.Clock.Now()
		for i := range 105 {
			if _, err := e.Server.DB.ExecContext(context.Background(), `INSERT INTO export_logs (id, user_id, exported_at, ip_address, user_agent, export_format, file_size_bytes, locale, created_at)
				VALUES ($1, $2, $3, '192.0.2.1', 'ua', 'zip', $4, 'en', $3)`, fmt.Sprintf("log-%03d", i), u.ID, db.TS(base.Add(time.Duration(i)*time.Minute)), 1000+i); err != nil {
				t.Fatal(err)
			}
		}
		get := func(tok, q string) (ids []string, total float64, more bool) {
			t.Helper()
			m := e.Call(t, "GET", "/v1/user/export/logs"+q, tok, nil, http.StatusOK).JSON()
			for _, l := range m["logs"].([]any) {
				ids = append(ids, l.(map[string]any)["id"].(string))
			}
			return ids, m["total"].(float64), m["hasMore"].(bool)
		}
		ids, total, more := get(u.Token, "")
		if len(ids) != 50 || total != 105 || !more || ids[0] != "log-104" {
			t.Fatalf("default = %d %v %v %v", len(ids), total, more, ids[:1])
		}
		if ids, _, more := get(u.Token, "?limit=0"); len(ids) != 1 || !more || ids[0] != "log-104" {
			t.Fatalf("limit 0 = %v", ids)
		}
		if ids, _, _ := get(u.Token, "?limit=500"); len(ids) != 100 {
			t.Fatalf("limit 500 = %d", len(ids))
		}
		if ids, _, _ := get(u.Token, "?limit=2&offset=-3"); !slices.Equal(ids, []string{"log-104", "log-103"}) {
			t.Fatalf("offset -3 = %v", ids)
		}
		if ids, _, more := get(u.Token, "?limit=50&offset=100"); len(ids) != 5 || more || ids[4] != "log-000" {
			t.Fatalf("last page = %v %v", ids, more)
		}
		if ids, _, more := get(u.Token, "?limit=x&offset=y"); len(ids) != 50 || !more {
			t.Fatalf("unparsable = %d", len(ids))
		}
		if ids, total, more := get(other.Token, ""); len(ids) != 0 || total != 0 || more {
			t.Fatalf("other user = %v", ids)
		}
		e.Call(t, "GET", "/v1/user/export/logs", "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/user/export/logs", e.SystemKey, nil, http.StatusUnauthorized)
	})
}

// TestAuditFilterAcceptsOwnTypes: every event type hmid writes itself (bans
// and platform changes extend the spec's list) can be filtered on, on the
// admin list and on the user's own list.
func TestAuditFilterAcceptsOwnTypes(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		u := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "POST", "/v1/users/"+u.ID+"/ban", admin.Token, map[string]any{"reason": "spam"}, http.StatusCreated)
		e.Call(t, "DELETE", "/v1/users/"+u.ID+"/ban", admin.Token, nil, http.StatusOK)
		e.Call(t, "PATCH", "/v1/platforms/discord/settings", admin.Token, map[string]any{"registration_enabled": false}, http.StatusOK)
		for _, typ := range []string{audit.UserBanned, audit.UserUnbanned, audit.PlatformUpdated} {
			evs := auditEvents(t, e.Call(t, "GET", "/v1/admin/audit?event_type="+typ, admin.Token, nil, http.StatusOK))
			if len(evs) != 1 || evs[0]["event_type"] != typ {
				t.Fatalf("event_type=%s: %v", typ, evs)
			}
		}
		for _, typ := range []string{audit.UserBanned, audit.UserUnbanned} {
			if evs := auditEvents(t, e.Call(t, "GET", "/v1/users/"+u.ID+"/audit?event_type="+typ, admin.Token, nil, http.StatusOK)); len(evs) != 1 {
				t.Fatalf("user audit event_type=%s: %v", typ, evs)
			}
		}
	})
}
