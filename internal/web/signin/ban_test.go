package signin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/db"
)

// TestBannedLoginMessage: a banned person reads, in their language, until
// when the account is blocked (a localized date, not an RFC 3339 stamp) and
// the operator's reason, without the API's "This is not allowed:" prefix.
func TestBannedLoginMessage(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		until := time.Date(2026, 11, 29, 3, 38, 1, 0, time.UTC)
		if _, err := e.Server.DB.ExecContext(context.Background(), `INSERT INTO bans (id, user_id, banned_at, expires_at, is_permanent, reason) VALUES ('b1', $1, $2, $3, FALSE, 'Spam in the harbour chat')`,
			u.ID, db.TS(e.Clock.Now()), db.TS(until)); err != nil {
			t.Fatal(err)
		}
		b := newBrowser(t, e)
		b.lang = "de-DE,de;q=0.9"
		p := b.login(u.Email, pw, "")
		want(t, p, 403, "Ihr Konto ist bis 29.11.2026, 03:38 UTC gesperrt. Angegebener Grund: Spam in the harbour chat")
		b.lang = "en"
		p = b.login(u.Email, pw, "")
		want(t, p, 403, "Your account is blocked until Nov 29, 2026, 03:38 UTC. Reason given: Spam in the harbour chat")
		for _, bad := range []string{"2026-11-29T03:38:01Z", "This is not allowed", "Das ist nicht erlaubt", "this account is banned"} {
			if strings.Contains(p.Body, bad) {
				t.Errorf("the page shows %q", bad)
			}
		}
		// A permanent ban without a reason.
		if _, err := e.Server.DB.ExecContext(context.Background(), `UPDATE bans SET expires_at = NULL, is_permanent = TRUE, reason = NULL WHERE id = 'b1'`); err != nil {
			t.Fatal(err)
		}
		want(t, b.login(u.Email, pw, ""), 403, "Your account is blocked permanently.")
		// The API keeps its message.
		r := e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": u.Email, "password": pw}, 403)
		if !strings.Contains(r.JSON()["message"].(string), "this account is banned permanently") {
			t.Fatalf("API: %s", r.Body)
		}
	})
}
