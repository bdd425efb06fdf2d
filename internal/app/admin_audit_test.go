package app_test

import (
	"context"
	"encoding/csv"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/audit"
	"hmid/internal/mail"
	"hmid/internal/mail/mailtest"
)

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
