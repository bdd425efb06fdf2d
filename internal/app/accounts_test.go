package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apptest"
	"hmid/internal/audit"
	"hmid/internal/db"
	"hmid/internal/deletion"
	"hmid/internal/mail"
	"hmid/internal/mail/mailtest"
	"hmid/internal/password"
	"hmid/internal/users"
)

// fakeRevoker records the users whose OAuth tokens were revoked.
type fakeRevoker struct {
	mu    sync.Mutex
	users []string
}

func (f *fakeRevoker) RevokeUserTokens(_ context.Context, userID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.users = append(f.users, userID)
	return nil
}

func TestBanLifecycle(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		rev := &fakeRevoker{}
		e.Server.BanService.Tokens = rev
		mod := roleUser(t, e, "users:ban", "users:read")
		u := e.NewUser(t, apptest.UserSpec{})
		path := "/v1/users/" + u.ID + "/ban"

		r := e.Call(t, "GET", path, u.Token, nil, http.StatusOK).JSON()
		if r["is_banned"] != false || r["active_ban"] != nil {
			t.Fatalf("status = %v", r)
		}
		e.Call(t, "POST", path, u.Token, map[string]any{"reason": "x"}, http.StatusForbidden)
		e.Call(t, "POST", path, "", nil, http.StatusUnauthorized)
		for _, bad := range []any{0, -5, "soon", 1.5, int64(1) << 40} {
			e.Call(t, "POST", path, mod.Token, map[string]any{"duration_seconds": bad}, http.StatusBadRequest)
		}
		e.Call(t, "POST", "/v1/users/"+mod.ID+"/ban", mod.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/users/nobody/ban", mod.Token, map[string]any{}, http.StatusNotFound)

		// A timed ban: sessions revoked, OAuth tokens revoked, expires by time.
		b := e.Call(t, "POST", path, mod.Token, map[string]any{"reason": "spam", "duration_seconds": 3600}, http.StatusCreated).JSON()["data"].(map[string]any)
		if b["is_permanent"] != false || b["reason"] != "spam" || b["banned_by"] != mod.ID || b["status"] != "active" ||
			b["expires_at"] != apptest.Start.Add(time.Hour).Format(time.RFC3339) {
			t.Fatalf("ban = %v", b)
		}
		if len(rev.users) != 1 || rev.users[0] != u.ID {
			t.Fatalf("revoked = %v", rev.users)
		}
		e.Call(t, "GET", path, u.Token, nil, http.StatusUnauthorized)
		if n := count(t, e, `SELECT COUNT(*) FROM sessions WHERE user_id = $1 AND revoked_at IS NULL`, u.ID); n != 0 {
			t.Fatalf("live sessions = %d", n)
		}
		// A fresh session of a banned user is refused as well.
		fresh, _ := e.NewSession(t, u.ID)
		e.Call(t, "GET", path, fresh, nil, http.StatusUnauthorized)
		e.Call(t, "POST", path, mod.Token, map[string]any{}, http.StatusConflict)
		r = e.Call(t, "GET", path, mod.Token, nil, http.StatusOK).JSON()
		if r["is_banned"] != true || r["active_ban"].(map[string]any)["id"] != b["id"] {
			t.Fatalf("status = %v", r)
		}

		e.Clock.Advance(time.Hour + time.Second)
		r = e.Call(t, "GET", path, fresh, nil, http.StatusOK).JSON()
		if r["is_banned"] != false {
			t.Fatalf("expired ban still active: %v", r)
		}
		e.Call(t, "DELETE", path, mod.Token, nil, http.StatusNotFound)

		// A permanent ban (no body), lifted by an unban.
		b2 := e.Call(t, "POST", path, mod.Token, nil, http.StatusCreated).JSON()["data"].(map[string]any)
		if b2["is_permanent"] != true || b2["expires_at"] != nil || b2["reason"] != nil {
			t.Fatalf("ban = %v", b2)
		}
		e.Call(t, "DELETE", path, u.Token, nil, http.StatusUnauthorized)
		e.Call(t, "DELETE", "/v1/users/nobody/ban", mod.Token, nil, http.StatusNotFound)
		r = e.Call(t, "DELETE", path, mod.Token, nil, http.StatusOK).JSON()
		if r["success"] != true {
			t.Fatalf("unban = %v", r)
		}
		e.Call(t, "DELETE", path, mod.Token, nil, http.StatusNotFound)
		again, _ := e.NewSession(t, u.ID)
		e.Call(t, "GET", path, again, nil, http.StatusOK)

		// History: newest first, with how each ban ended.
		e.Call(t, "GET", "/v1/users/"+u.ID+"/bans", again, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/users/nobody/bans", mod.Token, nil, http.StatusNotFound)
		hist := e.Call(t, "GET", "/v1/users/"+u.ID+"/bans", mod.Token, nil, http.StatusOK).JSON()["data"].([]any)
		if len(hist) != 2 {
			t.Fatalf("history = %v", hist)
		}
		lifted, expired := hist[0].(map[string]any), hist[1].(map[string]any)
		if lifted["status"] != "lifted" || lifted["is_active"] != false || lifted["unbanned_by"] != mod.ID || lifted["unbanned_at"] == nil {
			t.Fatalf("lifted = %v", lifted)
		}
		if expired["status"] != "expired" || expired["is_active"] != false || expired["unbanned_at"] != nil {
			t.Fatalf("expired = %v", expired)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type IN ('user_banned', 'user_unbanned') AND actor_id = $2`, u.ID, mod.ID); n != 3 {
			t.Fatalf("ban audit events = %d", n)
		}
	})
}

func TestBanSuperAdmin(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		mod := roleUser(t, e, "users:ban")
		super := e.Admin(t)
		super2 := e.Admin(t)
		e.Call(t, "POST", "/v1/users/"+super.ID+"/ban", mod.Token, map[string]any{}, http.StatusForbidden)
		e.Call(t, "POST", "/v1/users/"+super.ID+"/ban", super.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/users/"+super.ID+"/ban", super2.Token, map[string]any{"reason": "rogue"}, http.StatusCreated)
		e.Call(t, "GET", "/v1/users/"+super.ID+"/ban", super.Token, nil, http.StatusUnauthorized)
		// A system key bans and lifts too (banned_by is null then).
		e.Call(t, "DELETE", "/v1/users/"+super.ID+"/ban", e.SystemKey, nil, http.StatusOK)
		b := e.Call(t, "POST", "/v1/users/"+mod.ID+"/ban", e.SystemKey, map[string]any{}, http.StatusCreated).JSON()["data"].(map[string]any)
		if b["banned_by"] != nil {
			t.Fatalf("ban = %v", b)
		}
	})
}

// softDelete marks a user deleted now with the 7-day grace period, as
// DELETE /v1/users/{id} does.
func softDelete(t testing.TB, e *apptest.Env, id string) {
	t.Helper()
	now := e.Clock.Now()
	execSQL(t, e, `UPDATE users SET deleted_at = $1, scheduled_deletion_at = $2 WHERE id = $3`, db.TS(now), db.TS(now.Add(deletion.GracePeriod)), id)
	if err := e.Server.Epoch.Bump(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// purge runs the purge job once, waiting out a run of the background job.
func purge(t testing.TB, e *apptest.Env) int {
	t.Helper()
	for {
		n, err := e.Server.DeletionService.Purge(context.Background())
		if errors.Is(err, deletion.ErrBusy) {
			time.Sleep(time.Millisecond)
			continue
		}
		if err != nil {
			t.Fatalf("purge: %v", err)
		}
		return n
	}
}

func TestDeletionStatusAndCancel(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		reader := roleUser(t, e, "users:read")
		writer := roleUser(t, e, "users:write")
		st := "/v1/admin/users/" + u.ID + "/deletion-status"
		cancel := "/v1/admin/users/" + u.ID + "/cancel-deletion"

		e.Call(t, "GET", st, "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", st, u.Token, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/admin/users/nobody/deletion-status", reader.Token, nil, http.StatusNotFound)
		r := e.Call(t, "GET", st, reader.Token, nil, http.StatusOK).JSON()
		if r["is_scheduled_for_deletion"] != false || r["is_deleted"] != false || r["deleted_at"] != nil || r["scheduled_deletion_at"] != nil {
			t.Fatalf("status = %v", r)
		}
		e.Call(t, "POST", cancel, writer.Token, nil, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/admin/users/nobody/cancel-deletion", writer.Token, nil, http.StatusNotFound)

		softDelete(t, e, u.ID)
		e.Call(t, "GET", "/v1/users/"+u.ID+"/ban", u.Token, nil, http.StatusUnauthorized)
		r = e.Call(t, "GET", st, reader.Token, nil, http.StatusOK).JSON()
		if r["is_scheduled_for_deletion"] != true || r["is_deleted"] != true ||
			r["scheduled_deletion_at"] != apptest.Start.Add(7*24*time.Hour).Format(time.RFC3339) {
			t.Fatalf("status = %v", r)
		}
		e.Call(t, "POST", cancel, reader.Token, nil, http.StatusForbidden)
		r = e.Call(t, "POST", cancel, writer.Token, nil, http.StatusOK).JSON()
		if r["success"] != true {
			t.Fatalf("cancel = %v", r)
		}
		r = e.Call(t, "GET", st, reader.Token, nil, http.StatusOK).JSON()
		if r["is_scheduled_for_deletion"] != false || r["is_deleted"] != false {
			t.Fatalf("status after cancel = %v", r)
		}
		e.Call(t, "POST", cancel, writer.Token, nil, http.StatusBadRequest)
		// A restored user is not purged when the old date passes.
		e.Clock.Advance(8 * 24 * time.Hour)
		if n := purge(t, e); n != 0 {
			t.Fatalf("purged %d", n)
		}
		e.Call(t, "GET", st, reader.Token, nil, http.StatusOK)
	})
}

func TestPurgeAfterGracePeriod(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		admin := e.Admin(t)
		u := e.NewUser(t, apptest.UserSpec{})
		keep := e.NewUser(t, apptest.UserSpec{})
		e.NewAPIKey(t, u.ID)
		addAccount(t, e, u.ID, "discord")
		// History that names the user: a ban they received, a ban they gave,
		// audit events as subject and as actor, a mail, and a table of another
		// area referencing users without a cascade.
		e.Call(t, "POST", "/v1/users/"+u.ID+"/ban", admin.Token, map[string]any{"duration_seconds": 60}, http.StatusCreated)
		e.Clock.Advance(time.Minute + time.Second)
		execSQL(t, e, `UPDATE bans SET banned_by = $1 WHERE user_id = $1`, u.ID)
		if _, err := e.Server.Audit.Record(ctx, e.Server.DB, audit.Event{UserID: keep.ID, ActorID: u.ID, EventType: audit.UserUpdated, IPAddress: "192.0.2.1", UserAgent: "ua"}); err != nil {
			t.Fatal(err)
		}
		e.Call(t, "POST", "/v1/users/"+u.ID+"/email/request-change", admin.Token, map[string]any{"email": "gone@example.test"}, http.StatusOK)
		execSQL(t, e, `CREATE TABLE ext_notes (id TEXT PRIMARY KEY, user_id TEXT NOT NULL REFERENCES users (id), reviewer_id TEXT REFERENCES users (id))`)
		execSQL(t, e, `INSERT INTO ext_notes (id, user_id, reviewer_id) VALUES ('n1', $1, NULL), ('n2', $2, $1)`, u.ID, keep.ID)
		// Chains: rows owned by the user with rows of their own, and rows
		// hanging off the user's sessions (removed by cascade).
		execSQL(t, e, `CREATE TABLE ext_owned (id TEXT PRIMARY KEY, owner_id TEXT NOT NULL REFERENCES users (id))`)
		execSQL(t, e, `CREATE TABLE ext_child (id TEXT PRIMARY KEY, owned_id TEXT REFERENCES ext_owned (id))`)
		execSQL(t, e, `CREATE TABLE ext_session_log (id TEXT PRIMARY KEY, session_id TEXT NOT NULL REFERENCES sessions (id))`)
		execSQL(t, e, `INSERT INTO ext_owned (id, owner_id) VALUES ('o1', $1), ('o2', $2)`, u.ID, keep.ID)
		execSQL(t, e, `INSERT INTO ext_child (id, owned_id) VALUES ('c1', 'o1'), ('c2', 'o2')`)
		execSQL(t, e, `INSERT INTO ext_session_log (id, session_id) VALUES ('s1', $1), ('s2', $2)`, u.SessionID, keep.SessionID)

		softDelete(t, e, u.ID)
		e.Clock.Advance(deletion.GracePeriod - time.Second)
		if n := purge(t, e); n != 0 {
			t.Fatalf("purged %d inside the grace period", n)
		}
		e.Call(t, "GET", "/v1/admin/users/"+u.ID+"/deletion-status", admin.Token, nil, http.StatusOK)
		e.Clock.Advance(time.Second)
		if n := purge(t, e); n != 1 {
			t.Fatalf("purged %d, want 1", n)
		}
		e.Call(t, "GET", "/v1/admin/users/"+u.ID+"/deletion-status", admin.Token, nil, http.StatusNotFound)

		for q, want := range map[string]int{
			`SELECT COUNT(*) FROM users WHERE id = $1`:                                            0,
			`SELECT COUNT(*) FROM sessions WHERE user_id = $1`:                                    0,
			`SELECT COUNT(*) FROM platform_accounts WHERE user_id = $1`:                           0,
			`SELECT COUNT(*) FROM user_roles WHERE user_id = $1`:                                  0,
			`SELECT COUNT(*) FROM api_keys WHERE user_id = $1`:                                    0,
			`SELECT COUNT(*) FROM bans WHERE user_id = $1 OR banned_by = $1`:                      0,
			`SELECT COUNT(*) FROM email_change_requests WHERE user_id = $1`:                       0,
			`SELECT COUNT(*) FROM audit_events WHERE user_id = $1 OR actor_id = $1`:               0,
			`SELECT COUNT(*) FROM audit_events WHERE resource_id = $1`:                            0,
			`SELECT COUNT(*) FROM ext_notes WHERE user_id = $1 OR reviewer_id = $1`:               0,
			`SELECT COUNT(*) FROM ext_notes WHERE id = 'n2' AND reviewer_id IS NULL AND $1 <> ''`: 1,
			`SELECT COUNT(*) FROM ext_owned WHERE owner_id = $1 OR id = 'o2'`:                     1,
			`SELECT COUNT(*) FROM ext_child WHERE id = 'c2' AND $1 <> ''`:                         1,
			`SELECT COUNT(*) FROM ext_child WHERE id = 'c1' AND $1 <> ''`:                         0,
			`SELECT COUNT(*) FROM ext_session_log WHERE id <> 's2' OR $1 = ''`:                    0,
			`SELECT COUNT(*) FROM mail_outbox WHERE to_addr = 'gone@example.test' OR $1 = ''`:     0,
		} {
			if n := count(t, e, q, u.ID); n != want {
				t.Errorf("%s = %d, want %d", q, n, want)
			}
		}
		// The audit trail keeps anonymous rows: event type and time, no person.
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'user_banned' AND user_id IS NULL AND ip_address IS NULL AND user_agent IS NULL`); n != 1 {
			t.Fatalf("anonymised ban events = %d", n)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND actor_id IS NULL AND ip_address IS NULL`, keep.ID); n != 1 {
			t.Fatalf("anonymised actor events = %d", n)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'user_deleted' AND user_id IS NULL`); n != 1 {
			t.Fatalf("user_deleted events = %d", n)
		}
		// Other users are untouched.
		e.Call(t, "GET", "/v1/users/"+keep.ID+"/ban", keep.Token, nil, http.StatusOK)
	})
}

func TestForceDelete(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		deleter := roleUser(t, e, "users:delete")
		u := e.NewUser(t, apptest.UserSpec{})
		super := e.Admin(t)
		path := "/v1/admin/users/" + u.ID + "/force-delete"
		e.Call(t, "POST", path, "", map[string]any{"reason": "x"}, http.StatusUnauthorized)
		e.Call(t, "POST", path, u.Token, map[string]any{"reason": "x"}, http.StatusForbidden)
		e.Call(t, "POST", "/v1/admin/users/nobody/force-delete", deleter.Token, map[string]any{"reason": "x"}, http.StatusNotFound)
		e.Call(t, "POST", "/v1/admin/users/"+deleter.ID+"/force-delete", deleter.Token, map[string]any{"reason": "x"}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/admin/users/"+super.ID+"/force-delete", deleter.Token, map[string]any{"reason": "x"}, http.StatusForbidden)
		e.Call(t, "POST", path, deleter.Token, map[string]any{"reason": 5}, http.StatusBadRequest)

		// Works on an active user and on one in the grace period, at once.
		r := e.Call(t, "POST", path, deleter.Token, map[string]any{"reason": "requested by support ticket"}, http.StatusOK).JSON()
		if r["success"] != true {
			t.Fatalf("force-delete = %v", r)
		}
		e.Call(t, "GET", "/v1/users/"+u.ID+"/ban", u.Token, nil, http.StatusUnauthorized)
		e.Call(t, "POST", path, deleter.Token, map[string]any{"reason": "again"}, http.StatusNotFound)
		v := e.NewUser(t, apptest.UserSpec{})
		softDelete(t, e, v.ID)
		e.Call(t, "POST", "/v1/admin/users/"+v.ID+"/force-delete", super.Token, nil, http.StatusOK)
		if n := count(t, e, `SELECT COUNT(*) FROM users WHERE id IN ($1, $2)`, u.ID, v.ID); n != 0 {
			t.Fatalf("users left = %d", n)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'user_deleted' AND actor_id = $1`, deleter.ID); n != 1 {
			t.Fatalf("user_deleted events = %d", n)
		}
	})
}

func TestPurgeRunsOnOneInstance(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		var ids []string
		for range 6 {
			u := e.NewUser(t, apptest.UserSpec{})
			softDelete(t, e, u.ID)
			ids = append(ids, u.ID)
		}
		e.Clock.Advance(deletion.GracePeriod)

		// A second instance on the same database holds the lock: this one skips.
		other := e.Server.DB
		if e.Engine.Name == "postgres" {
			var err error
			if other, err = db.OpenWith(ctx, e.Engine.URL, db.Options{}); err != nil {
				t.Fatal(err)
			}
			defer other.Close()
		}
		var release func()
		for {
			var ok bool
			var err error
			if release, ok, err = other.TryLock(ctx, deletion.LockName); err != nil {
				t.Fatal(err)
			} else if ok {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if _, err := e.Server.DeletionService.Purge(ctx); !errors.Is(err, deletion.ErrBusy) {
			t.Fatalf("purge while locked: %v", err)
		}
		release()

		// Two purgers at once (on PostgreSQL: two instances): every user is purged exactly once.
		second := &deletion.Service{DB: other, Clock: e.Clock, Audit: &audit.Writer{DB: other, Clock: e.Clock}, Epoch: e.Server.Epoch, Log: e.Server.Log}
		purgers := []*deletion.Service{e.Server.DeletionService, second}
		results := apptest.AtOnce(len(purgers), func(i int) int {
			n, err := purgers[i].Purge(ctx)
			if err != nil && !errors.Is(err, deletion.ErrBusy) {
				t.Errorf("purger %d: %v", i, err)
			}
			return n
		})
		// The background job's first run may also take part (its goroutine can
		// be scheduled late on a loaded machine), so the purges here add up to at
		// most the number of users, never more, and afterwards none is left.
		if total := results[0] + results[1] + purge(t, e); total > len(ids) {
			t.Fatalf("purged %v, more than the %d users", results, len(ids))
		}
		for _, id := range ids {
			if n := count(t, e, `SELECT COUNT(*) FROM users WHERE id = $1`, id); n != 0 {
				t.Fatalf("user %s not purged", id)
			}
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'user_deleted'`); n != len(ids) {
			t.Fatalf("user_deleted events = %d, want %d", n, len(ids))
		}
	})
}

func TestEmailChangeFullCycle(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		execSQL(t, e, `UPDATE users SET preferred_locale = 'de' WHERE id = $1`, u.ID)
		base := "/v1/users/" + u.ID + "/email"

		r := e.Call(t, "GET", base+"/pending", u.Token, nil, http.StatusOK).JSON()
		if r["pending"] != false || r["new_email"] != nil || r["expires_at"] != nil {
			t.Fatalf("pending before request = %v", r)
		}
		r = e.Call(t, "POST", base+"/request-change", u.Token, map[string]any{"email": "New.Address@Example.test"}, http.StatusOK).JSON()
		if r["expires_at"] != apptest.Start.Add(24*time.Hour).Format(time.RFC3339) || r["message"] == "" {
			t.Fatalf("request = %v", r)
		}
		tok, m := tokenFrom(t, e, "new.address@example.test", mail.KindEmailChangeVerify)
		if m.Locale != "de" || !strings.Contains(m.Text, e.URL+"/account/email/verify?token="+tok) {
			t.Fatalf("mail locale %s, text %s", m.Locale, m.Text)
		}
		r = e.Call(t, "GET", base+"/pending", u.Token, nil, http.StatusOK).JSON()
		if r["pending"] != true || r["new_email"] != "new.address@example.test" {
			t.Fatalf("pending = %v", r)
		}

		// Another user cannot use the token, and it stays valid for the owner.
		other := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "POST", "/v1/users/email/verify", other.Token, map[string]any{"token": tok}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/users/email/verify", "", map[string]any{"token": tok}, http.StatusUnauthorized)
		e.Call(t, "POST", "/v1/users/email/verify", u.Token, map[string]any{"token": ""}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/users/email/verify", u.Token, map[string]any{"token": "nope"}, http.StatusBadRequest)
		r = e.Call(t, "POST", "/v1/users/email/verify", u.Token, map[string]any{"token": tok}, http.StatusOK).JSON()
		if r["success"] != true {
			t.Fatalf("verify = %v", r)
		}
		// Single use.
		e.Call(t, "POST", "/v1/users/email/verify", u.Token, map[string]any{"token": tok}, http.StatusBadRequest)

		if n := count(t, e, `SELECT COUNT(*) FROM users WHERE id = $1 AND email = 'new.address@example.test'`, u.ID); n != 1 {
			t.Fatal("users.email not changed")
		}
		if n := count(t, e, `SELECT COUNT(*) FROM platform_accounts WHERE user_id = $1 AND platform_id = $2 AND platform_user_id = 'new.address@example.test' AND email = 'new.address@example.test'`,
			u.ID, users.PlatformID("email")); n != 1 {
			t.Fatal("email platform account not changed")
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'user_updated'`, u.ID); n != 1 {
			t.Fatalf("audit events = %d", n)
		}
		r = e.Call(t, "GET", base+"/pending", u.Token, nil, http.StatusOK).JSON()
		if r["pending"] != false {
			t.Fatalf("pending after verify = %v", r)
		}
		e.Call(t, "DELETE", base+"/pending", u.Token, nil, http.StatusNotFound)
	})
}

func TestEmailChangeErrors(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		admin := e.Admin(t)
		req := "/v1/users/" + u.ID + "/email/request-change"

		e.Call(t, "POST", req, "", map[string]any{"email": "a@b.test"}, http.StatusUnauthorized)
		e.Call(t, "POST", req, other.Token, map[string]any{"email": "a@b.test"}, http.StatusForbidden)
		e.Call(t, "GET", "/v1/users/"+u.ID+"/email/pending", other.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/users/"+u.ID+"/email/pending", other.Token, nil, http.StatusForbidden)
		e.Call(t, "POST", "/v1/users/nobody/email/request-change", admin.Token, map[string]any{"email": "a@b.test"}, http.StatusNotFound)
		e.Call(t, "GET", "/v1/users/nobody/email/pending", admin.Token, nil, http.StatusNotFound)
		for _, bad := range []any{"", "not-an-email", "Name <a@b.test>", "a@b", strings.Repeat("a", 250) + "@b.test", 42} {
			e.Call(t, "POST", req, u.Token, map[string]any{"email": bad}, http.StatusBadRequest)
		}
		e.Call(t, "POST", req, u.Token, `{"email":`, http.StatusBadRequest)
		e.Call(t, "POST", req, u.Token, map[string]any{"email": strings.ToUpper(u.Email)}, http.StatusBadRequest)
		e.Call(t, "POST", req, u.Token, map[string]any{"email": other.Email}, http.StatusConflict)

		// Only accounts created with email can change their address.
		d, _ := providerUser(t, e, "discord")
		e.Call(t, "POST", "/v1/users/"+d.ID+"/email/request-change", d.Token, map[string]any{"email": "d@example.test"}, http.StatusBadRequest)

		// An admin may request for the user; the address taken before verification gives 409.
		e.Call(t, "POST", req, admin.Token, map[string]any{"email": "taken.later@example.test"}, http.StatusOK)
		tok, _ := tokenFrom(t, e, "taken.later@example.test", mail.KindEmailChangeVerify)
		e.NewUser(t, apptest.UserSpec{Email: "taken.later@example.test"})
		e.Call(t, "POST", "/v1/users/email/verify", u.Token, map[string]any{"token": tok}, http.StatusConflict)

		// A new request replaces the old one; the token expires after 24 hours.
		e.Call(t, "POST", req, u.Token, map[string]any{"email": "later@example.test"}, http.StatusOK)
		e.Call(t, "POST", "/v1/users/email/verify", u.Token, map[string]any{"token": tok}, http.StatusBadRequest)
		tok, _ = tokenFrom(t, e, "later@example.test", mail.KindEmailChangeVerify)
		e.Clock.Advance(24*time.Hour + time.Second)
		e.Call(t, "POST", "/v1/users/email/verify", u.Token, map[string]any{"token": tok}, http.StatusBadRequest)
		r := e.Call(t, "GET", "/v1/users/"+u.ID+"/email/pending", u.Token, nil, http.StatusOK).JSON()
		if r["pending"] != false {
			t.Fatalf("expired request still pending: %v", r)
		}
		e.Call(t, "DELETE", "/v1/users/"+u.ID+"/email/pending", u.Token, nil, http.StatusNotFound)

		// Cancel.
		e.Call(t, "POST", req, u.Token, map[string]any{"email": "cancel@example.test"}, http.StatusOK)
		tok, _ = tokenFrom(t, e, "cancel@example.test", mail.KindEmailChangeVerify)
		r = e.Call(t, "DELETE", "/v1/users/"+u.ID+"/email/pending", u.Token, nil, http.StatusOK).JSON()
		if r["success"] != true {
			t.Fatalf("cancel = %v", r)
		}
		e.Call(t, "POST", "/v1/users/email/verify", u.Token, map[string]any{"token": tok}, http.StatusBadRequest)
		e.Call(t, "DELETE", "/v1/users/"+u.ID+"/email/pending", u.Token, nil, http.StatusNotFound)
	})
}

func TestEmailMailsAreRateLimited(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		req := "/v1/users/" + u.ID + "/email/request-change"
		for i := range 5 {
			e.Call(t, "POST", req, u.Token, map[string]any{"email": "r" + string(rune('a'+i)) + "@example.test"}, http.StatusOK)
		}
		r := e.Call(t, "POST", req, u.Token, map[string]any{"email": "rz@example.test"}, http.StatusTooManyRequests)
		if r.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	})
}

func TestEmailLinkFullCycle(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		d, _ := providerUser(t, e, "discord")
		base := "/v1/users/" + d.ID + "/email-link"
		r := e.Call(t, "GET", base+"/pending", d.Token, nil, http.StatusOK).JSON()
		if r["pending"] != false || r["email"] != nil || r["expires_at"] != nil {
			t.Fatalf("pending = %v", r)
		}
		e.Call(t, "POST", base+"/request", d.Token, map[string]any{"email": "link@example.test", "password": "short"}, http.StatusBadRequest)
		e.Call(t, "POST", base+"/request", d.Token, map[string]any{"email": "bad", "password": "long enough"}, http.StatusBadRequest)
		taken := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "POST", base+"/request", d.Token, map[string]any{"email": taken.Email, "password": "long enough"}, http.StatusConflict)
		r = e.Call(t, "POST", base+"/request", d.Token, map[string]any{"email": "Link@Example.test", "password": "correct horse"}, http.StatusOK).JSON()
		if r["expires_at"] == nil {
			t.Fatalf("request = %v", r)
		}
		r = e.Call(t, "GET", base+"/pending", d.Token, nil, http.StatusOK).JSON()
		if r["pending"] != true || r["email"] != "link@example.test" {
			t.Fatalf("pending = %v", r)
		}
		tok, m := tokenFrom(t, e, "link@example.test", mail.KindEmailLinkVerify)
		if m.Locale != "en" || !strings.Contains(m.Text, "/account/email-link/verify?token="+tok) {
			t.Fatalf("mail %s %s", m.Locale, m.Text)
		}
		e.Call(t, "POST", "/v1/users/email-link/verify", taken.Token, map[string]any{"token": tok}, http.StatusBadRequest)
		r = e.Call(t, "POST", "/v1/users/email-link/verify", d.Token, map[string]any{"token": tok}, http.StatusOK).JSON()
		acct, _ := r["platform_account_id"].(string)
		if acct == "" {
			t.Fatalf("verify = %v", r)
		}
		e.Call(t, "POST", "/v1/users/email-link/verify", d.Token, map[string]any{"token": tok}, http.StatusBadRequest)

		// The email account holds the password for the login (platform_user_id = address).
		var hash string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT password_hash FROM platform_accounts WHERE id = $1 AND user_id = $2 AND platform_id = $3 AND platform_user_id = 'link@example.test'`,
			acct, d.ID, users.PlatformID("email")).Scan(&hash); err != nil {
			t.Fatal(err)
		}
		if ok, err := password.Verify("correct horse", hash); err != nil || !ok {
			t.Fatalf("password hash does not verify: %v", err)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM users WHERE id = $1 AND email = 'link@example.test'`, d.ID); n != 1 {
			t.Fatal("user email not set")
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'account_linked' AND resource_id = $2`, d.ID, acct); n != 1 {
			t.Fatal("no account_linked event")
		}
		list := e.Call(t, "GET", "/v1/users/"+d.ID+"/accounts", d.Token, nil, http.StatusOK).JSON()["data"].([]any)
		if len(list) != 2 {
			t.Fatalf("accounts = %v", list)
		}
		// Now the user has an email account: linking again and a pending GET are refused / empty.
		e.Call(t, "POST", base+"/request", d.Token, map[string]any{"email": "second@example.test", "password": "correct horse"}, http.StatusBadRequest)
		e.Call(t, "DELETE", base+"/pending", d.Token, nil, http.StatusNotFound)
		// …and can change the address with the email-change flow.
		e.Call(t, "POST", "/v1/users/"+d.ID+"/email/request-change", d.Token, map[string]any{"email": "changed@example.test"}, http.StatusOK)
	})
}

func TestEmailLinkErrors(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		d, _ := providerUser(t, e, "github")
		other := e.NewUser(t, apptest.UserSpec{})
		body := map[string]any{"email": "x@example.test", "password": "correct horse"}
		e.Call(t, "POST", "/v1/users/"+u.ID+"/email-link/request", u.Token, body, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/users/"+d.ID+"/email-link/request", "", body, http.StatusUnauthorized)
		e.Call(t, "POST", "/v1/users/"+d.ID+"/email-link/request", other.Token, body, http.StatusForbidden)
		e.Call(t, "GET", "/v1/users/"+d.ID+"/email-link/pending", other.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/users/"+d.ID+"/email-link/pending", other.Token, nil, http.StatusForbidden)
		admin := e.Admin(t)
		e.Call(t, "POST", "/v1/users/nobody/email-link/request", admin.Token, body, http.StatusNotFound)
		e.Call(t, "GET", "/v1/users/nobody/email-link/pending", admin.Token, nil, http.StatusNotFound)
		e.Call(t, "DELETE", "/v1/users/nobody/email-link/pending", admin.Token, nil, http.StatusNotFound)
		e.Call(t, "POST", "/v1/users/email-link/verify", d.Token, map[string]any{"token": "unknown"}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/users/email-link/verify", "", map[string]any{"token": "unknown"}, http.StatusUnauthorized)

		// Cancel, then verify fails; a request whose address is taken meanwhile gives 409.
		e.Call(t, "POST", "/v1/users/"+d.ID+"/email-link/request", d.Token, body, http.StatusOK)
		tok, _ := tokenFrom(t, e, "x@example.test", mail.KindEmailLinkVerify)
		r := e.Call(t, "DELETE", "/v1/users/"+d.ID+"/email-link/pending", d.Token, nil, http.StatusOK).JSON()
		if r["message"] == "" {
			t.Fatalf("cancel = %v", r)
		}
		e.Call(t, "POST", "/v1/users/email-link/verify", d.Token, map[string]any{"token": tok}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/users/"+d.ID+"/email-link/request", admin.Token, body, http.StatusOK)
		tok, _ = tokenFrom(t, e, "x@example.test", mail.KindEmailLinkVerify)
		e.NewUser(t, apptest.UserSpec{Email: "x@example.test"})
		e.Call(t, "POST", "/v1/users/email-link/verify", d.Token, map[string]any{"token": tok}, http.StatusConflict)
		e.Clock.Advance(24*time.Hour + time.Second)
		e.Call(t, "POST", "/v1/users/email-link/verify", d.Token, map[string]any{"token": tok}, http.StatusBadRequest)
	})
}

func TestPlatformAccounts(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		d, discord := providerUser(t, e, "discord")
		github := addAccount(t, e, d.ID, "github")
		other := e.NewUser(t, apptest.UserSpec{})
		base := "/v1/users/" + d.ID + "/accounts"

		e.Call(t, "GET", base, "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", base, other.Token, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/users/nobody/accounts", e.SystemKey, nil, http.StatusNotFound)
		list := e.Call(t, "GET", base, d.Token, nil, http.StatusOK).JSON()["data"].([]any)
		if len(list) != 2 {
			t.Fatalf("accounts = %v", list)
		}
		primary := map[string]bool{}
		for _, a := range list {
			m := a.(map[string]any)
			primary[m["platform_slug"].(string)] = m["is_primary"].(bool)
			if m["is_oauth"] != true || m["platform_name"] == "" {
				t.Fatalf("account = %v", m)
			}
		}
		if !primary["discord"] || primary["github"] {
			t.Fatalf("primary = %v", primary)
		}

		// The primary account cannot be unlinked; after switching, the old one can.
		e.Call(t, "DELETE", base+"/"+discord, d.Token, nil, http.StatusBadRequest)
		e.Call(t, "PUT", base+"/"+github+"/primary", other.Token, nil, http.StatusForbidden)
		e.Call(t, "PUT", base+"/nope/primary", d.Token, nil, http.StatusNotFound)
		r := e.Call(t, "PUT", base+"/"+github+"/primary", d.Token, nil, http.StatusOK).JSON()
		if data := r["data"].(map[string]any); data["is_primary"] != true || data["platform_slug"] != "github" {
			t.Fatalf("primary = %v", r)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM users WHERE id = $1 AND primary_platform_account_id = $2`, d.ID, github); n != 1 {
			t.Fatal("users.primary_platform_account_id not updated")
		}
		if n := count(t, e, `SELECT COUNT(*) FROM platform_accounts WHERE user_id = $1 AND is_primary = TRUE`, d.ID); n != 1 {
			t.Fatal("more than one primary flag")
		}
		e.Call(t, "DELETE", base+"/"+discord, other.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", base+"/"+discord, d.Token, nil, http.StatusNoContent)
		e.Call(t, "DELETE", base+"/"+discord, d.Token, nil, http.StatusNotFound)
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'account_unlinked' AND resource_id = $2`, d.ID, discord); n != 1 {
			t.Fatal("no account_unlinked event")
		}
		// The last remaining account cannot be unlinked (even when not flagged primary).
		execSQL(t, e, `UPDATE users SET primary_platform_account_id = NULL WHERE id = $1`, d.ID)
		execSQL(t, e, `UPDATE platform_accounts SET is_primary = FALSE WHERE user_id = $1`, d.ID)
		r = e.Call(t, "DELETE", base+"/"+github, d.Token, nil, http.StatusBadRequest).JSON()
		if msg, _ := r["message"].(string); msg == "" {
			t.Fatal("no message")
		}

		// The email account cannot be unlinked; another user's account id is not found.
		u := e.NewUser(t, apptest.UserSpec{})
		extra := addAccount(t, e, u.ID, "twitch")
		list = e.Call(t, "GET", "/v1/users/"+u.ID+"/accounts", u.Token, nil, http.StatusOK).JSON()["data"].([]any)
		var emailAcct string
		for _, a := range list {
			if m := a.(map[string]any); m["platform_slug"] == "email" {
				emailAcct = m["id"].(string)
				if m["is_oauth"] != false || m["platform_id"] != users.PlatformID("email") || m["email"] != u.Email {
					t.Fatalf("email account = %v", m)
				}
			}
		}
		e.Call(t, "PUT", "/v1/users/"+u.ID+"/accounts/"+extra+"/primary", u.Token, nil, http.StatusOK)
		e.Call(t, "DELETE", "/v1/users/"+u.ID+"/accounts/"+emailAcct, u.Token, nil, http.StatusBadRequest)
		e.Call(t, "DELETE", "/v1/users/"+u.ID+"/accounts/"+github, u.Token, nil, http.StatusNotFound)
		admin := e.Admin(t)
		e.Call(t, "PUT", "/v1/users/"+u.ID+"/accounts/"+emailAcct+"/primary", admin.Token, nil, http.StatusOK)
		e.Call(t, "DELETE", "/v1/users/"+u.ID+"/accounts/"+extra, admin.Token, nil, http.StatusNoContent)
	})
}

func TestPlatforms(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		all := e.Call(t, "GET", "/v1/platforms", "", nil, http.StatusOK).JSON()["data"].([]any)
		if len(all) != len(users.DefaultPlatforms) {
			t.Fatalf("platforms = %d", len(all))
		}
		p := e.Call(t, "GET", "/v1/platforms/Discord", "", nil, http.StatusOK).JSON()["data"].(map[string]any)
		if p["slug"] != "discord" || p["is_oauth"] != true || p["enabled"] != true {
			t.Fatalf("platform = %v", p)
		}
		byID := e.Call(t, "GET", "/v1/platforms/"+users.PlatformID("email"), "", nil, http.StatusOK).JSON()["data"].(map[string]any)
		if byID["slug"] != "email" || byID["two_factor_supported"] != true {
			t.Fatalf("platform = %v", byID)
		}
		e.Call(t, "GET", "/v1/platforms/myspace", "", nil, http.StatusNotFound)

		u := e.NewUser(t, apptest.UserSpec{})
		admin := e.Admin(t)
		e.Call(t, "PATCH", "/v1/platforms/discord/enabled", "", map[string]any{"enabled": false}, http.StatusUnauthorized)
		e.Call(t, "PATCH", "/v1/platforms/discord/enabled", u.Token, map[string]any{"enabled": false}, http.StatusForbidden)
		e.Call(t, "PATCH", "/v1/platforms/discord/enabled", admin.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/platforms/discord/enabled", admin.Token, map[string]any{"enabled": "no"}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/platforms/myspace/enabled", admin.Token, map[string]any{"enabled": false}, http.StatusNotFound)
		d := e.Call(t, "PATCH", "/v1/platforms/discord/enabled", admin.Token, map[string]any{"enabled": false}, http.StatusOK).JSON()["data"].(map[string]any)
		if d["enabled"] != false || d["slug"] != "discord" || d["id"] != users.PlatformID("discord") {
			t.Fatalf("enabled = %v", d)
		}
		enabled := e.Call(t, "GET", "/v1/platforms/enabled", "", nil, http.StatusOK).JSON()["data"].([]any)
		if len(enabled) != len(users.DefaultPlatforms)-1 {
			t.Fatalf("enabled = %d", len(enabled))
		}
		for _, x := range enabled {
			if x.(map[string]any)["slug"] == "discord" {
				t.Fatal("disabled platform listed as enabled")
			}
		}

		s := "/v1/platforms/email/settings"
		e.Call(t, "PATCH", s, u.Token, map[string]any{}, http.StatusForbidden)
		r := e.Call(t, "PATCH", s, admin.Token, map[string]any{}, http.StatusOK).JSON()
		if r["message"] != "No changes requested" || r["success"] != true {
			t.Fatalf("settings = %v", r)
		}
		e.Call(t, "PATCH", "/v1/platforms/discord/settings", admin.Token, map[string]any{"two_factor_required": true}, http.StatusBadRequest)
		e.Call(t, "PATCH", s, admin.Token, map[string]any{"enabled": nil}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/platforms/myspace/settings", admin.Token, map[string]any{"enabled": true}, http.StatusNotFound)
		e.Call(t, "PATCH", "/v1/platforms/myspace/settings", admin.Token, map[string]any{}, http.StatusNotFound)
		r = e.Call(t, "PATCH", s, admin.Token, map[string]any{"two_factor_required": true, "registration_enabled": false, "enabled": true}, http.StatusOK).JSON()
		pl := r["platform"].(map[string]any)
		if pl["two_factor_required"] != true || pl["registration_enabled"] != false || pl["enabled"] != true || pl["slug"] != "email" {
			t.Fatalf("settings = %v", r)
		}
		// enabled did not change, so two events here plus one for disabling discord.
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'platform_updated' AND user_id = $1`, admin.ID); n != 3 {
			t.Fatalf("platform_updated events = %d", n)
		}
		p = e.Call(t, "GET", "/v1/platforms/email", "", nil, http.StatusOK).JSON()["data"].(map[string]any)
		if p["two_factor_required"] != true || p["registration_enabled"] != false {
			t.Fatalf("not stored: %v", p)
		}
	})
}

var verifyLink = regexp.MustCompile(`/verify-email\?token=(hm_ev_[0-9A-Za-z]+)`)

// verifyTokenTo returns the token of the newest mail to addr, a verification mail.
func verifyTokenTo(t *testing.T, e *apptest.Env, addr string) string {
	t.Helper()
	msgs, err := mailtest.Outbox(context.Background(), e.Server.DB, addr)
	if err != nil || len(msgs) == 0 || msgs[0].Kind != mail.KindEmailVerify {
		t.Fatalf("no verification mail to %s: %v %d", addr, err, len(msgs))
	}
	m := verifyLink.FindStringSubmatch(msgs[0].Text)
	if m == nil || !strings.Contains(msgs[0].Text, e.URL+m[0]) {
		t.Fatalf("mail without link: %s", msgs[0].Text)
	}
	return m[1]
}

// The registration mail's token verifies the address through POST
// /v1/auth/verify-email (no session needed); POST /v1/auth/verify-email/resend
// sends a new one for the signed-in user. Every answer is checked against
// api/openapi.yaml by the harness.
func TestRegisteredEmailVerificationEndpoints(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const addr = "reg.verify@example.test"
		r := e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": addr, "password": "correct horse battery"}, http.StatusCreated).JSON()
		sess := r["session_token"].(string)
		uid := r["user"].(map[string]any)["id"].(string)
		unverified := `SELECT COUNT(*) FROM platform_accounts WHERE user_id = $1 AND platform_id = $2 AND NOT email_verified`
		if count(t, e, unverified, uid, users.PlatformID("email")) != 1 {
			t.Fatal("registered address is verified already")
		}
		first := verifyTokenTo(t, e, addr)

		// Resend: session only, rate-limited per user, replaces the token.
		e.Call(t, "POST", "/v1/auth/verify-email/resend", "", nil, http.StatusUnauthorized)
		key, _ := e.NewAPIKey(t, uid)
		e.Call(t, "POST", "/v1/auth/verify-email/resend", key, nil, http.StatusForbidden)
		r = e.Call(t, "POST", "/v1/auth/verify-email/resend", sess, nil, http.StatusOK).JSON()
		if r["expires_at"] != apptest.Start.Add(24*time.Hour).Format(time.RFC3339) || r["message"] == "" {
			t.Fatalf("resend = %v", r)
		}
		tok := verifyTokenTo(t, e, addr)
		for range 4 {
			e.Call(t, "POST", "/v1/auth/verify-email/resend", sess, nil, http.StatusOK)
		}
		limited := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/verify-email/resend", Token: sess})
		if limited.Status != http.StatusTooManyRequests || limited.Header.Get("Retry-After") == "" || limited.Header.Get("RateLimit-Limit") != "5" {
			t.Fatalf("sixth resend: %d %v", limited.Status, limited.Header)
		}
		latest := verifyTokenTo(t, e, addr)

		// Bad tokens: 400, nothing changes.
		e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": first}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": tok}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": "garbage"}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": ""}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": 7}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/auth/verify-email", "", "{", http.StatusBadRequest)
		if count(t, e, unverified, uid, users.PlatformID("email")) != 1 {
			t.Fatal("a refused token verified the address")
		}

		// The newest token works once, without a session.
		r = e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": latest}, http.StatusOK).JSON()
		if r["success"] != true || r["message"] == "" {
			t.Fatalf("verify = %v", r)
		}
		if count(t, e, unverified, uid, users.PlatformID("email")) != 0 {
			t.Fatal("address not verified")
		}
		e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": latest}, http.StatusBadRequest)
		// Verified: no new mail (400, before the exhausted rate limit).
		e.Call(t, "POST", "/v1/auth/verify-email/resend", sess, nil, http.StatusBadRequest)

		// 409 when another user has verified the address in the meantime.
		const contested = "contested.api@example.test"
		r = e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": contested, "password": "correct horse battery"}, http.StatusCreated).JSON()
		other := r["user"].(map[string]any)["id"].(string)
		ctok := verifyTokenTo(t, e, contested)
		err := e.Server.DB.Tx(context.Background(), func(tx *db.Tx) error {
			_, _, err := users.Create(context.Background(), tx, db.TS(e.Clock.Now()), users.NewAccount{
				PlatformSlug: "google", PlatformUserID: uuid.NewString(), Name: "Owner", Email: contested, EmailVerified: true,
			})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		e.Call(t, "POST", "/v1/auth/verify-email", "", map[string]any{"token": ctok}, http.StatusConflict)
		e.Call(t, "POST", "/v1/auth/verify-email/resend", r["session_token"].(string), nil, http.StatusConflict)
		if count(t, e, unverified, other, users.PlatformID("email")) != 1 {
			t.Fatal("a contested address was verified")
		}
	})
}

// A ban through the REST API revokes the user's OAuth tokens, not only their sessions.
func TestBanRevokesOAuthTokens(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		owner := e.NewUser(t, apptest.UserSpec{})
		u := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, owner.Token, map[string]any{"is_first_party": false})
		tok := tokens(t, e, u.Token, c, authzParams(c.ID))
		at := tok["access_token"].(string)
		e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusOK)
		e.Call(t, "POST", "/v1/users/"+u.ID+"/ban", e.Admin(t).Token, map[string]any{"reason": "abuse", "duration_seconds": 3600}, http.StatusCreated)
		e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusUnauthorized)
		var revoked int
		if err := e.Server.DB.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM oauth_tokens WHERE user_id = $1 AND revoked_at IS NULL`, u.ID).Scan(&revoked); err != nil || revoked != 0 {
			t.Fatalf("live tokens after ban = %d, %v", revoked, err)
		}
	})
}

// The export lists the user's connected and owned apps and their two-factor state.
func TestExportIncludesAppsAndTwoFactor(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, u.Token, map[string]any{"name": "My Own App"})
		tokens(t, e, u.Token, c, authzParams(c.ID))
		r := e.Call(t, "GET", "/v1/user/export", u.Token, nil, http.StatusOK)
		raw := openZip(t, r.Body)["data.json"]
		var d struct {
			ConnectedApps []struct{ Name string } `json:"connectedApps"`
			OwnedApps     []struct{ Name string } `json:"ownedApps"`
			TwoFactorAuth struct{ Enabled bool }  `json:"twoFactorAuth"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		if len(d.ConnectedApps) != 1 || d.ConnectedApps[0].Name != "My Own App" || len(d.OwnedApps) != 1 {
			t.Fatalf("apps = %+v", d)
		}
	})
}

// Without explicit coordinates the nearest station is found from the latest GPS point.
func TestPegelNearestFromLatestGPSPoint(t *testing.T) {
	t.Parallel()
	up := pegelUpstream(t, new(atomicBool), new(atomicInt))
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key, _ := e.NewAPIKey(t, "", "pegel:read", "gps:write")
		e.Call(t, "GET", "/v1/pegel/nearest", key, nil, http.StatusNotFound)
		e.Call(t, "POST", "/v1/gps", key, map[string]any{"latitude": 50.94, "longitude": 6.96, "altitude": 50, "heading": 0,
			"timestamp": e.Clock.Now().Add(-time.Minute).Unix(), "speed_kmh": 0, "speed_mps": 0, "speed_mph": 0, "speed_knots": 0}, http.StatusCreated)
		n := e.Call(t, "GET", "/v1/pegel/nearest", key, nil, http.StatusOK).JSON()
		if n["shortname"] != "KÖLN" {
			t.Fatalf("nearest = %v", n)
		}
	}, pegelURL(up))
}

// TestPerUserRequestsConcurrently: a person who sends the same request many
// times at once (a double click, a retrying client) replaces their one
// pending row each time; two requests never both insert it. Every answer is
// a success or a throttle, never a 500, and exactly one row is left.
func TestPerUserRequestsConcurrently(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		execSQL(t, e, `UPDATE platform_accounts SET email_verified = FALSE WHERE user_id = $1`, u.ID)
		d, _ := providerUser(t, e, "discord")
		for _, tc := range []struct {
			name, path, token, table, user string
			body                           any
		}{
			{"verification mail", "/v1/auth/verify-email/resend", u.Token, "email_verification_tokens", u.ID, nil},
			{"email change", "/v1/users/" + u.ID + "/email/request-change", u.Token, "email_change_requests", u.ID, map[string]any{"email": "changed@example.test"}},
			{"email link", "/v1/users/" + d.ID + "/email-link/request", d.Token, "email_link_requests", d.ID, map[string]any{"email": "linked@example.test", "password": "correct horse"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				statuses := apptest.AtOnce(12, func(int) int {
					return e.Do(t, apptest.Req{Method: "POST", Path: tc.path, Token: tc.token, Body: tc.body}).Status
				})
				ok := 0
				for _, s := range statuses {
					switch s {
					case http.StatusOK:
						ok++
					case http.StatusTooManyRequests:
					default:
						t.Errorf("statuses %v: want only 200 and 429", statuses)
					}
				}
				if ok == 0 {
					t.Errorf("statuses %v: none succeeded", statuses)
				}
				if n := count(t, e, `SELECT COUNT(*) FROM `+tc.table+` WHERE user_id = $1`, tc.user); n != 1 {
					t.Errorf("%s rows = %d, want 1", tc.table, n)
				}
				e.Clock.Advance(2 * time.Hour) // past every mail throttle
			})
		}
	})
}
