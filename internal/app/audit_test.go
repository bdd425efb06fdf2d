package app_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// restAuditIDs are the ids GET /v1/admin/audit answers for the query q.
func restAuditIDs(t *testing.T, e *apptest.Env, tok, q string) []string {
	t.Helper()
	return field(auditEvents(t, e.Call(t, "GET", "/v1/admin/audit?"+q, tok, nil, http.StatusOK)), "id")
}

// download fetches a CSV file with the client c (a signed-in browser, or
// a bearer token when tok is set) and returns its answer and its records.
func download(t *testing.T, c *http.Client, target, tok string) (*http.Response, [][]string) {
	t.Helper()
	req, err := http.NewRequest("GET", target, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	if res.StatusCode != http.StatusOK {
		return res, nil
	}
	if !strings.Contains(string(raw), "\r\n") {
		t.Errorf("%s: lines do not end in CRLF (RFC 4180 §2)", target)
	}
	records, err := csv.NewReader(strings.NewReader(string(raw))).ReadAll()
	if err != nil {
		t.Fatalf("%s: not CSV: %v\n%s", target, err, raw)
	}
	return res, records
}

// csvIDs are the ids of a download's rows (the first column after the header).
func csvIDs(records [][]string) []string {
	out := []string{}
	for _, r := range records[1:] {
		out = append(out, r[0])
	}
	return out
}

// navRE finds the links of the console's side navigation.
var navRE = regexp.MustCompile(`(?s)<nav class="sidenav".*?</nav>`)
var hrefRE = regexp.MustCompile(`href="([^"]+)"`)

// navLinks are the hrefs of the side navigation of a console page.
func navLinks(body string) []string {
	out := []string{}
	for _, m := range hrefRE.FindAllStringSubmatch(navRE.FindString(body), -1) {
		out = append(out, m[1])
	}
	return out
}

func TestAdminAuditLog(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		op := operator(t, e, "audit:read")
		ann := e.NewUser(t, apptest.UserSpec{Username: "Ann_Smith", Email: "ann.smith@example.test"})
		bob := e.NewUser(t, apptest.UserSpec{Username: "bob", Email: "bob@other.test"})
		day1 := e.Clock.Now()
		chrome := "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"
		for i := range 7 {
			record(t, e, audit.Event{UserID: ann.ID, EventType: audit.Login, ResourceType: "user", ResourceID: ann.ID, IPAddress: "203.0.113.9", UserAgent: chrome, SourceService: "id"})
			if i%2 == 0 {
				record(t, e, audit.Event{UserID: bob.ID, EventType: audit.LoginFailed, ResourceType: "user", Failed: true, ErrorMessage: "wrong password"})
			}
		}
		e.Clock.Advance(48 * time.Hour)
		day3 := e.Clock.Now()
		record(t, e, audit.Event{UserID: ann.ID, EventType: audit.DataExported, ResourceType: "user", Description: "=HYPERLINK(\"http://evil.test\")"})
		record(t, e, audit.Event{UserID: "discord:42", EventType: audit.BotCommandExecuted, ResourceType: "command", SourceService: "chat_platform_bot"})
		record(t, e, audit.Event{UserID: bob.ID, ActorID: admin.ID, EventType: audit.UserBanned, ResourceType: "ban", SourceService: "backend"})
		reported := record(t, e, audit.Event{UserID: bob.ID, EventType: audit.Logout, ResourceType: "session"})
		e.Call(t, "POST", "/v1/users/me/audit/"+reported+"/report", bob.Token, map[string]any{"reason": "not_me"}, http.StatusCreated)
		b := signedInBrowser(t, e, op)

		// The page lists exactly the rows of GET /v1/admin/audit for every
		// filter, sort and page, and the CSV download holds every row of the
		// filter (all pages) in the same order.
		queries := []string{"", "user_id=" + ann.ID, "user_search=ann_s", "user_search=OTHER.TEST", "user_search=nobody",
			"event_type=login", "status=failure", "source_service=chat_platform_bot", "resource_type=session",
			"is_reported=true", "is_reported=false&user_id=" + bob.ID,
			"start_date=" + url.QueryEscape(day3.Format(time.RFC3339)), "end_date=" + day1.Format(time.DateOnly),
			"start_date=" + day1.Format(time.DateOnly) + "&end_date=" + day1.Format(time.DateOnly),
			"sort_field=event_type&sort_direction=asc", "sort_field=user_id", "sort_field=status&sort_direction=asc",
			"sort_field=created_at&sort_direction=asc", "limit=5&page=2", "event_type=login&limit=3&page=3", "page=99"}
		for _, q := range queries {
			p := b.get("/admin/audit?" + q)
			if p.status != http.StatusOK {
				t.Fatalf("%s: %d %s", q, p.status, p.body)
			}
			if got, want := activityIDs(p.body), restAuditIDs(t, e, admin.Token, q); !slices.Equal(got, want) {
				t.Errorf("page %s: %v, REST %v", q, got, want)
			}
			all := url.Values{}
			parsed, _ := url.ParseQuery(q)
			for k, v := range parsed {
				if k != "page" && k != "limit" {
					all[k] = v
				}
			}
			all.Set("limit", "100")
			want := restAuditIDs(t, e, admin.Token, all.Encode())
			all.Del("limit")
			res, records := download(t, b.c, e.URL+"/admin/audit/export?"+all.Encode(), "")
			if res.StatusCode != http.StatusOK || !slices.Equal(records[0], audit.CSVColumns) {
				t.Fatalf("CSV %s: %d %v", q, res.StatusCode, records)
			}
			if got := csvIDs(records); !slices.Equal(got, want) {
				t.Errorf("CSV %s: %v, REST %v", q, got, want)
			}
			// The REST route sends the same file.
			_, rest := download(t, http.DefaultClient, e.URL+"/v1/admin/audit/export?"+all.Encode(), op.Token)
			if !slices.EqualFunc(rest, records, slices.Equal) {
				t.Errorf("CSV %s: REST and page differ", q)
			}
		}

		// The page's download link carries the filter (not the page), and the
		// file is an attachment that is not cached.
		p := b.get("/admin/audit?event_type=login&status=success&limit=5&page=2")
		link := regexp.MustCompile(`href="(/admin/audit/export[^"]*)"`).FindStringSubmatch(p.body)
		if link == nil {
			t.Fatalf("no CSV link: %s", p.body)
		}
		if u, _ := url.Parse(strings.ReplaceAll(link[1], "&amp;", "&")); u.Query().Get("event_type") != "login" || u.Query().Get("status") != "success" ||
			u.Query().Has("page") || u.Query().Has("limit") {
			t.Errorf("CSV link %q", link[1])
		}
		res, records := download(t, b.c, e.URL+"/admin/audit/export?event_type=data_exported", "")
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") || res.Header.Get("Cache-Control") != "no-store" ||
			!strings.HasPrefix(res.Header.Get("Content-Disposition"), `attachment; filename="hmid-audit-`) {
			t.Errorf("CSV headers %v", res.Header)
		}
		// Every field is there; a formula from another service is defused.
		row := map[string]string{}
		for i, c := range records[0] {
			row[c] = records[1][i]
		}
		if row["user_id"] != ann.ID || row["event_type"] != "data_exported" || row["status"] != "success" || row["source_service"] != "api" ||
			row["resource_type"] != "user" || row["actor_id"] != "" || row["is_reported"] != "false" || row["metadata"] != "{}" ||
			row["description"] != `'=HYPERLINK("http://evil.test")` {
			t.Errorf("CSV row %v", row)
		}
		if _, err := time.Parse(time.RFC3339Nano, row["created_at"]); err != nil {
			t.Errorf("created_at %q", row["created_at"])
		}

		// Events read as words, with the user's name, who acted and the device.
		p = b.get("/admin/audit?event_type=user_banned")
		if !strings.Contains(p.body, "Account suspended") || !strings.Contains(p.body, ">bob</a>") ||
			!strings.Contains(p.body, "by "+admin.Username) || !strings.Contains(p.body, "via the backend dashboard") {
			t.Errorf("ban row: %s", p.body)
		}
		p = b.get("/admin/audit?event_type=login&limit=1&user_search=ann")
		if !strings.Contains(p.body, "Signed in") || !strings.Contains(p.body, "Chrome") || !strings.Contains(p.body, "203.0.113.9") ||
			!strings.Contains(p.body, ">Ann_Smith</a>") || !strings.Contains(p.body, "Events 1–1 of 7") {
			t.Errorf("login row: %s", p.body)
		}
		if p := b.get("/admin/audit?source_service=chat_platform_bot"); !strings.Contains(p.body, "discord:42") {
			t.Errorf("bot row: %s", p.body)
		}
		if p := b.get("/admin/audit?is_reported=true"); !strings.Contains(p.body, `href="/admin/audit/reports">Reported</a>`) ||
			!strings.Contains(p.body, "1 pending") {
			t.Errorf("reported row: %s", p.body)
		}
		// Paging keeps the filter and the sort.
		p = b.get("/admin/audit?event_type=login&sort_direction=asc&limit=3")
		next := activityLink(p.body, "next")
		if u, _ := url.Parse(next); u == nil || u.Query().Get("sort_direction") != "asc" || u.Query().Get("page") != "2" || u.Query().Get("limit") != "3" {
			t.Fatalf("next link %q", next)
		}
		if got, want := activityIDs(b.get(next).body), restAuditIDs(t, e, admin.Token, "event_type=login&sort_direction=asc&limit=3&page=2"); !slices.Equal(got, want) {
			t.Errorf("next page %v, REST %v", got, want)
		}

		// A filter the listing refuses is said at its field with the API's
		// status, on the page and for the download; no events are listed.
		for q, errID := range map[string]string{"event_type=nope": "f-event-err", "status=ok": "f-status-err", "source_service=x": "f-source-err",
			"start_date=yesterday": "f-from-err", "start_date=2026-11-23&end_date=2026-11-22": "f-to-err", "sort_field=username": "f-sort-err",
			"sort_direction=up": "f-dir-err", "is_reported=yes": "f-reported-err"} {
			for _, path := range []string{"/admin/audit?", "/admin/audit/export?"} {
				p := b.get(path + q)
				if p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="`+errID+`"`) || !strings.Contains(p.body, `aria-invalid="true"`) ||
					len(activityIDs(p.body)) != 0 {
					t.Errorf("%s%s: %d %s", path, q, p.status, p.body)
				}
			}
			r := e.Call(t, "GET", "/v1/admin/audit/export?"+q, op.Token, nil, http.StatusBadRequest)
			if m := r.JSON(); m["error"] != "ValidationError" {
				t.Errorf("REST export %s: %s", q, r.Body)
			}
		}

		// Exactly the rule of GET /v1/admin/audit: audit:read.
		user := e.NewUser(t, apptest.UserSpec{Password: "plain user password"})
		plain := signedInBrowser(t, e, user)
		for _, path := range []string{"/admin/audit", "/admin/audit/export", "/admin/audit/reports"} {
			if p := plain.get(path); p.status != http.StatusForbidden || !strings.Contains(p.body, "<html") {
				t.Errorf("%s without audit:read: %d", path, p.status)
			}
			if p := newBrowser(t, e).get(path); p.status != http.StatusSeeOther || !strings.HasPrefix(p.location, "/login?return_to=") {
				t.Errorf("%s signed out: %d %q", path, p.status, p.location)
			}
		}
		e.Call(t, "GET", "/v1/admin/audit/export?event_type=login", op.Token, nil, http.StatusOK) // the answer as api/openapi.yaml describes it
		e.Call(t, "GET", "/v1/admin/audit/export", user.Token, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/admin/audit/export", "", nil, http.StatusUnauthorized)
	})
}

func TestAdminAuditReports(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		reviewer := operator(t, e, "audit:read", "audit:write")
		reader := operator(t, e, "audit:read")
		u := e.NewUser(t, apptest.UserSpec{Username: "carol", Email: "carol@example.test"})
		other := e.NewUser(t, apptest.UserSpec{Username: "dave", Email: "dave@example.test"})
		// dave's report came first and is already resolved; carol's is pending.
		oldEv := record(t, e, audit.Event{UserID: other.ID, EventType: audit.Login, IPAddress: "198.51.100.3"})
		old := e.Call(t, "POST", "/v1/users/me/audit/"+oldEv+"/report", other.Token, map[string]any{"reason": "suspicious"}, http.StatusCreated).JSON()["report"].(map[string]any)["id"].(string)
		e.Call(t, "PATCH", "/v1/admin/audit/reports/"+old, admin.Token, map[string]any{"status": "resolved", "resolution_notes": "It was you."}, http.StatusOK)
		ev := record(t, e, audit.Event{UserID: u.ID, EventType: audit.APIKeyCreated, ResourceType: "api_key", IPAddress: "203.0.113.77"})
		rep := e.Call(t, "POST", "/v1/users/me/audit/"+ev+"/report", u.Token, map[string]any{"reason": "not_me", "description": "I made no key"}, http.StatusCreated).JSON()["report"].(map[string]any)["id"].(string)
		outbox := func() []mail.Message {
			msgs, err := mailtest.Outbox(context.Background(), e.Server.DB, u.Email)
			if err != nil {
				t.Fatal(err)
			}
			return msgs
		}
		restReport := func(id string) map[string]any {
			for _, r := range e.Call(t, "GET", "/v1/admin/audit/reports", admin.Token, nil, http.StatusOK).Array() {
				if m := r.(map[string]any); m["id"] == id {
					return m
				}
			}
			t.Fatalf("report %s not listed", id)
			return nil
		}

		b := signedInBrowser(t, e, reviewer)
		p := b.get("/admin/audit/reports")
		if p.status != http.StatusOK {
			t.Fatalf("queue: %d %s", p.status, p.body)
		}
		// Pending first, although newer; each with who reported what.
		if i, j := strings.Index(p.body, `id="report-`+rep+`"`), strings.Index(p.body, `id="report-`+old+`"`); i < 0 || j < 0 || i > j {
			t.Fatalf("queue order: %s", p.body)
		}
		if !strings.Contains(p.body, "API key created") || !strings.Contains(p.body, "carol") || !strings.Contains(p.body, "carol@example.test") ||
			!strings.Contains(p.body, "This wasn&#39;t me") || !strings.Contains(p.body, "I made no key") || !strings.Contains(p.body, "203.0.113.77") ||
			!strings.Contains(p.body, "It was you.") || !strings.Contains(p.body, "1 pending") {
			t.Errorf("queue: %s", p.body)
		}
		// The status filter is the REST route's.
		if p := b.get("/admin/audit/reports?status=resolved"); strings.Contains(p.body, `id="report-`+rep+`"`) || !strings.Contains(p.body, `id="report-`+old+`"`) {
			t.Errorf("resolved only: %s", p.body)
		}
		if p := b.get("/admin/audit/reports?status=open"); p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="r-status-err"`) {
			t.Errorf("bad status filter: %d %s", p.status, p.body)
		}

		action := "/admin/audit/reports/" + rep
		tok := formToken(t, p.body, action)
		if q := b.do("POST", action, url.Values{"status": {"resolved"}}); q.status != http.StatusForbidden || restReport(rep)["status"] != "pending" {
			t.Fatalf("review without CSRF: %d", q.status)
		}
		q := b.do("POST", action, url.Values{"csrf_token": {tok}, "status": {"closed"}, "resolution_notes": {"keep me"}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="status-`+rep+`-err"`) || !strings.Contains(q.body, "keep me") ||
			restReport(rep)["status"] != "pending" {
			t.Fatalf("bad status: %d %s", q.status, q.body)
		}
		q = b.do("POST", action, url.Values{"csrf_token": {tok}, "status": {"resolved"}, "resolution_notes": {strings.Repeat("x", audit.MaxReportText+1)}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="notes-`+rep+`-err"`) || restReport(rep)["resolution_notes"] != nil {
			t.Fatalf("long notes: %d", q.status)
		}
		if q := b.do("POST", "/admin/audit/reports/nope", url.Values{"csrf_token": {tok}, "status": {"resolved"}}); q.status != http.StatusNotFound {
			t.Fatalf("unknown report: %d", q.status)
		}
		if len(outbox()) != 0 {
			t.Fatal("a refused review sent mail")
		}

		// The review: status and notes, the reviewer recorded, the user mailed.
		e.Clock.Advance(time.Hour)
		q = b.do("POST", action, url.Values{"csrf_token": {tok}, "status": {"resolved"}, "resolution_notes": {"We revoked the key."}, "list_status": {"pending"}})
		if q.status != http.StatusSeeOther || q.location != "/admin/audit/reports?status=pending#report-"+rep {
			t.Fatalf("review: %d %q %s", q.status, q.location, q.body)
		}
		got := restReport(rep)
		if got["status"] != "resolved" || got["resolution_notes"] != "We revoked the key." || got["reviewed_by"] != reviewer.ID ||
			got["reviewed_at"] != e.Clock.Now().Format(time.RFC3339) {
			t.Fatalf("REST after review: %v", got)
		}
		msgs := outbox()
		if len(msgs) != 1 || msgs[0].Kind != mail.KindAuditReportStatusChanged || !strings.Contains(msgs[0].Text, rep) ||
			!strings.Contains(msgs[0].Text, "We revoked the key.") {
			t.Fatalf("outbox: %+v", msgs)
		}
		after := b.get("/admin/audit/reports")
		if !strings.Contains(after.body, "The review is saved") || strings.Contains(after.body, "1 pending") ||
			!strings.Contains(after.body, "Last reviewed") || !strings.Contains(after.body, "by "+reviewer.Username) {
			t.Errorf("after review: %s", after.body)
		}
		// Saving the same values again changes nothing and mails nothing.
		b.do("POST", action, url.Values{"csrf_token": {tok}, "status": {"resolved"}, "resolution_notes": {"We revoked the key."}})
		if len(outbox()) != 1 {
			t.Error("an unchanged review sent mail")
		}

		// audit:read reads the queue but gets no form, and the review is the
		// rule of PATCH /v1/admin/audit/reports/{id}: audit:write.
		rb := signedInBrowser(t, e, reader)
		rp := rb.get("/admin/audit/reports")
		if rp.status != http.StatusOK || strings.Contains(rp.body, `action="`+action+`"`) || !strings.Contains(rp.body, "audit:write") {
			t.Fatalf("read-only queue: %d %s", rp.status, rp.body)
		}
		if q := rb.do("POST", action, url.Values{"csrf_token": {formField(t, csrfRE, rp.body)}, "status": {"pending"}}); q.status != http.StatusForbidden ||
			restReport(rep)["status"] != "resolved" {
			t.Fatalf("review with audit:read only: %d", q.status)
		}
		e.Call(t, "PATCH", "/v1/admin/audit/reports/"+rep, reader.Token, map[string]any{"status": "pending"}, http.StatusForbidden)
	})
}

// An operator holding only audit:read sees the audit pages and nothing else
// of the admin console: the navigation offers the overview and the audit
// log, and every other admin page answers 403.
func TestAdminAuditReadOnlyOperator(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		op := operator(t, e, "audit:read")
		b := signedInBrowser(t, e, op)
		p := b.get("/admin/audit")
		if p.status != http.StatusOK {
			t.Fatalf("audit page: %d %s", p.status, p.body)
		}
		if got := navLinks(p.body); !slices.Equal(got, []string{"/admin", "/admin/audit", "/account"}) {
			t.Errorf("navigation %v, want the overview and the audit log (and the way back to the account)", got)
		}
		if p := b.get("/admin/audit/reports"); p.status != http.StatusOK {
			t.Errorf("reports page: %d", p.status)
		}
		tok := formField(t, csrfRE, p.body)
		routes := map[string]bool{}
		for _, r := range e.Server.Routes() {
			routes[r] = true
			method, path, _ := strings.Cut(r, " ")
			// A user's own audit log (/admin/users/{id}/audit) is an audit page too.
			if !strings.HasPrefix(path, "/admin/") || strings.HasPrefix(path, "/admin/audit") || strings.HasSuffix(path, "/audit") {
				continue
			}
			target := regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(path, "x")
			var form url.Values
			if method == http.MethodPost {
				// A valid token, so that only the route's rule can refuse.
				form = url.Values{"csrf_token": {tok}}
			}
			if q := b.do(method, target, form); q.status != http.StatusForbidden {
				t.Errorf("%s %s: %d, want 403", method, target, q.status)
			}
		}
		if routes["GET /admin"] {
			if p := b.get("/admin"); p.status != http.StatusOK {
				t.Errorf("overview: %d", p.status)
			}
		}
		// The other areas' pages never show, whichever of them this build has.
		for _, path := range []string{"/admin/users", "/admin/roles", "/admin/clients", "/admin/api-keys", "/admin/platforms",
			"/admin/config", "/admin/chat", "/admin/tracking"} {
			want := http.StatusNotFound
			if routes["GET "+path] {
				want = http.StatusForbidden
			}
			if q := b.get(path); q.status != want {
				t.Errorf("%s: %d, want %d", path, q.status, want)
			}
		}
	})
}
