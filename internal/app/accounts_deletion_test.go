package app_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/audit"
	"hmid/internal/db"
	"hmid/internal/deletion"
)

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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
		var wg sync.WaitGroup
		results := make([]int, 2)
		for i, s := range []*deletion.Service{e.Server.DeletionService, second} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := s.Purge(ctx)
				if err != nil && !errors.Is(err, deletion.ErrBusy) {
					t.Errorf("purger %d: %v", i, err)
				}
				results[i] = n
			}()
		}
		wg.Wait()
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
