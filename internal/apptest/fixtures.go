package apptest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"hmid/internal/db"
	"hmid/internal/password"
	"hmid/internal/token"
	"hmid/internal/users"
)

// User is a user made by NewUser, with a live session token.
type User struct {
	ID        string
	Username  string
	Email     string
	Password  string
	Token     string // hm_st_ session token
	SessionID string
}

// UserSpec describes a user to make; zero fields get defaults.
type UserSpec struct {
	Username   string
	Email      string
	Password   string   // hashed with cheap Argon2id parameters when set
	Roles      []string // role ids; default role_user
	SuperAdmin bool
}

var cheap = password.Params{Memory: 64, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16}

// NewUser inserts a user with an email-platform account and a session.
func (e *Env) NewUser(t testing.TB, s UserSpec) User {
	t.Helper()
	ctx := context.Background()
	id := uuid.NewString()
	if s.Username == "" {
		s.Username = "u_" + strings.ReplaceAll(id[:8], "-", "")
	}
	if s.Email == "" {
		s.Email = strings.ToLower(s.Username) + "@example.test"
	}
	if s.Roles == nil {
		s.Roles = []string{"role_user"}
	}
	hash := ""
	if s.Password != "" {
		var err error
		if hash, err = password.HashWith(cheap, s.Password); err != nil {
			t.Fatal(err)
		}
	}
	now := db.TS(e.Clock.Now())
	acct := uuid.NewString()
	d := e.Server.DB
	mustExec(t, d, `INSERT INTO users (id, username, email, name, is_super_admin, primary_platform_account_id, last_login_provider, created_at, updated_at)
		VALUES ($1, $2, $3, $2, $4, $5, 'email', $6, $6)`, id, s.Username, s.Email, s.SuperAdmin, acct, now)
	mustExec(t, d, `INSERT INTO platform_accounts (id, user_id, platform_id, platform_user_id, username, email, password_hash, email_verified, is_primary, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $4, $6, TRUE, TRUE, $7, $7)`, acct, id, users.PlatformID("email"), strings.ToLower(s.Email), s.Username, nullIfEmpty(hash), now)
	for _, r := range s.Roles {
		mustExec(t, d, `INSERT INTO user_roles (user_id, role_id, created_at) VALUES ($1, $2, $3)`, id, r, now)
	}
	u := User{ID: id, Username: s.Username, Email: s.Email, Password: s.Password}
	u.Token, u.SessionID = e.NewSession(t, id)
	_ = ctx
	return u
}

// NewSession inserts a 30-day session for userID and returns its token and id.
func (e *Env) NewSession(t testing.TB, userID string) (tok, id string) {
	t.Helper()
	tok = token.New(token.PrefixSession)
	id = uuid.NewString()
	now := e.Clock.Now()
	mustExec(t, e.Server.DB, `INSERT INTO sessions (id, user_id, token_hash, ip_address, user_agent, device_type, browser_name, os_name, provider, auth_time, created_at, expires_at, last_activity_at)
		VALUES ($1, $2, $3, '127.0.0.1', 'Go-http-client/1.1', 'desktop', '', '', 'email', $4, $4, $5, $4)`,
		id, userID, token.Hash(tok), db.TS(now), db.TS(now.Add(30*24*time.Hour)))
	return tok, id
}

// NewAPIKey inserts an API key owned by userID ("" for none) with scopes.
func (e *Env) NewAPIKey(t testing.TB, userID string, scopes ...string) (key, id string) {
	t.Helper()
	key = token.New(token.PrefixAPIKey)
	id = uuid.NewString()
	if scopes == nil {
		scopes = []string{}
	}
	now := db.TS(e.Clock.Now())
	mustExec(t, e.Server.DB, `INSERT INTO api_keys (id, user_id, name, description, key_hash, key_prefix, scopes, is_active, is_system, created_at, updated_at)
		VALUES ($1, $2, 'test key', '', $3, $4, $5, TRUE, FALSE, $6, $6)`, id, nullIfEmpty(userID), token.Hash(key), token.KeyPrefix(key), db.JSON(scopes), now)
	return key, id
}

// Admin returns a super-admin user.
func (e *Env) Admin(t testing.TB) User {
	return e.NewUser(t, UserSpec{SuperAdmin: true, Roles: []string{"role_admin", "role_user"}})
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func mustExec(t testing.TB, d *db.DB, q string, args ...any) {
	t.Helper()
	if _, err := d.ExecContext(context.Background(), q, args...); err != nil {
		t.Fatalf("fixture: %v\n%s", err, q)
	}
}

// RolePermissions returns the permissions of a role as the REST API lists
// them, each as resource:action.
func (e *Env) RolePermissions(t testing.TB, roleID string) []string {
	t.Helper()
	var out []string
	for _, p := range e.Call(t, "GET", "/v1/roles/"+roleID+"/permissions", e.SystemKey, nil, http.StatusOK).JSON()["data"].([]any) {
		m := p.(map[string]any)
		out = append(out, m["resource"].(string)+":"+m["action"].(string))
	}
	return out
}
