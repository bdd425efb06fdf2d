package app_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/audit"
)

// TestSetupFirstAdministrator walks the setup link of a server without a
// super admin: the form, refusals that change nothing, the administrator
// created, and the link (and any other) dead afterwards.
func TestSetupFirstAdministrator(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		taken := e.NewUser(t, apptest.UserSpec{Username: "early_bird", Email: "bird@example.test"})
		link, err := e.Server.Setup.Link(ctx, e.URL)
		if err != nil || !strings.Contains(link, "/setup?token=hm_su_") {
			t.Fatalf("link %q: %v", link, err)
		}
		other, _ := e.Server.Setup.Link(ctx, e.URL)
		u, _ := url.Parse(link)
		tok := u.Query().Get("token")
		b := newBrowser(t, e)
		if p := b.get("/setup?token=hm_su_nothing"); p.status != http.StatusBadRequest || !strings.Contains(p.body, "does not work") {
			t.Fatalf("bad token: %d %s", p.status, p.body)
		}
		p := b.get(u.RequestURI())
		if p.status != http.StatusOK || !strings.Contains(p.body, `action="/setup"`) || !strings.Contains(p.body, `autocomplete="new-password"`) {
			t.Fatalf("form: %d %s", p.status, p.body)
		}
		de := newBrowser(t, e)
		de.lang = "de"
		if q := de.get(u.RequestURI()); q.status != http.StatusOK || !strings.Contains(q.body, "Ersten Administrator anlegen") || !strings.Contains(q.body, "Passwort wiederholen") {
			t.Fatalf("German form: %d %s", q.status, q.body)
		}
		submit := func(email, pw, again string) page {
			return b.post(t, p.body, "/setup", url.Values{"token": {tok}, "email": {email}, "password": {pw}, "password_confirm": {again}})
		}
		admins := func() int {
			return count(t, e, `SELECT COUNT(*) FROM users WHERE is_super_admin`)
		}
		for _, c := range []struct {
			email, pw, again string
			want             int
		}{
			{"root@example.test", "long-enough-1", "long-enough-2", http.StatusBadRequest},
			{"root@example.test", "short", "short", http.StatusBadRequest},
			{"not an address", "long-enough-1", "long-enough-1", http.StatusBadRequest},
			{taken.Email, "long-enough-1", "long-enough-1", http.StatusConflict},
		} {
			if q := submit(c.email, c.pw, c.again); q.status != c.want {
				t.Fatalf("%+v: %d %s", c, q.status, q.body)
			}
			if admins() != 0 {
				t.Fatal("a refused setup created an administrator")
			}
		}
		if q := submit("Root@Example.test", "long-enough-1", "long-enough-1"); q.status != http.StatusOK || !strings.Contains(q.body, "root@example.test") {
			t.Fatalf("setup: %d %s", q.status, q.body)
		}
		if admins() != 1 || count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = $1 AND source_service = 'id'`, audit.UserCreated) != 1 {
			t.Fatal("no administrator, or no audit event")
		}
		res := e.Call(t, "POST", "/v1/auth/login", "", map[string]string{"email": "root@example.test", "password": "long-enough-1"}, http.StatusOK).JSON()
		tokAdmin, _ := res["session_token"].(string)
		if tokAdmin == "" {
			tokAdmin, _ = res["token"].(string)
		}
		if me := e.Call(t, "GET", "/v1/users/me", tokAdmin, nil, http.StatusOK).JSON()["data"].(map[string]any); me["is_super_admin"] != true {
			t.Fatalf("not super admin: %v", me)
		}
		// Both links are dead now: one used, the other because an administrator exists.
		for _, l := range []string{link, other} {
			lu, _ := url.Parse(l)
			if q := b.get(lu.RequestURI()); q.status != http.StatusBadRequest {
				t.Fatalf("link after setup: %d", q.status)
			}
		}
		if again, _ := e.Server.Setup.Link(ctx, e.URL); again != "" || count(t, e, `SELECT COUNT(*) FROM setup_tokens`) != 0 {
			t.Fatalf("a link with an administrator: %q", again)
		}
	})
}
