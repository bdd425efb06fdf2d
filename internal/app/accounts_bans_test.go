package app_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"hmid/internal/apptest"
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
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
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
