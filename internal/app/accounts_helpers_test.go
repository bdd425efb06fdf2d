package app_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"hmid/internal/access"
	"hmid/internal/apptest"
	"hmid/internal/db"
	"hmid/internal/mail"
	"hmid/internal/mail/mailtest"
	"hmid/internal/users"
)

// exec runs a fixture statement.
func execSQL(t testing.TB, e *apptest.Env, q string, args ...any) {
	t.Helper()
	if _, err := e.Server.DB.ExecContext(context.Background(), q, args...); err != nil {
		t.Fatalf("exec %s: %v", q, err)
	}
}

// count returns the integer a COUNT query answers.
func count(t testing.TB, e *apptest.Env, q string, args ...any) int {
	t.Helper()
	var n int
	if err := e.Server.DB.QueryRowContext(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	return n
}

// roleUser makes a user holding a new role with exactly perms (plus the User role).
func roleUser(t testing.TB, e *apptest.Env, perms ...string) apptest.User {
	t.Helper()
	return roleUserWith(t, e, apptest.UserSpec{}, perms...)
}

// roleUserWith is roleUser for a user made from spec (a password to sign
// in to the pages with, say); the new role and the User role come first.
func roleUserWith(t testing.TB, e *apptest.Env, spec apptest.UserSpec, perms ...string) apptest.User {
	t.Helper()
	spec.Roles = append([]string{roleWith(t, e, perms...), "role_user"}, spec.Roles...)
	return e.NewUser(t, spec)
}

// roleWith makes a role with exactly perms and returns its id.
func roleWith(t testing.TB, e *apptest.Env, perms ...string) string {
	t.Helper()
	id := "role_t_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	now := db.TS(e.Clock.Now())
	execSQL(t, e, `INSERT INTO roles (id, name, description, is_system, requires_two_factor, created_at, updated_at) VALUES ($1, $1, '', FALSE, FALSE, $2, $2)`, id, now)
	for _, p := range perms {
		res, act, _ := strings.Cut(p, ":")
		execSQL(t, e, `INSERT INTO role_permissions (role_id, permission_id, created_at) VALUES ($1, $2, $3)`, id, access.PermissionID(res, act), now)
	}
	return id
}

// providerUser makes a user who signed up through slug (no email account),
// with a session; it returns the user and their platform account id.
func providerUser(t testing.TB, e *apptest.Env, slug string) (apptest.User, string) {
	t.Helper()
	ctx := context.Background()
	var uid, aid string
	name := "p_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	err := e.Server.DB.Tx(ctx, func(tx *db.Tx) error {
		var err error
		uid, aid, err = users.Create(ctx, tx, db.TS(e.Clock.Now()), users.NewAccount{
			PlatformSlug: slug, PlatformUserID: uuid.NewString(), Username: name, Name: name,
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	u := apptest.User{ID: uid, Username: name}
	u.Token, u.SessionID = e.NewSession(t, uid)
	return u, aid
}

// addAccount links another platform account to a user directly.
func addAccount(t testing.TB, e *apptest.Env, userID, slug string) string {
	t.Helper()
	id := uuid.NewString()
	now := db.TS(e.Clock.Now())
	execSQL(t, e, `INSERT INTO platform_accounts (id, user_id, platform_id, platform_user_id, username, is_primary, created_at, updated_at)
		VALUES ($1, $2, $3, $4, 'someone', FALSE, $5, $5)`, id, userID, users.PlatformID(slug), uuid.NewString(), now)
	return id
}

var mailToken = regexp.MustCompile(`token=([0-9A-Za-z]+)`)

// tokenFrom reads the newest mail to addr, checks its kind and returns the token of its link.
func tokenFrom(t testing.TB, e *apptest.Env, addr, kind string) (string, mail.Message) {
	t.Helper()
	msgs, err := mailtest.Outbox(context.Background(), e.Server.DB, addr)
	if err != nil || len(msgs) == 0 {
		t.Fatalf("no mail to %s: %v", addr, err)
	}
	m := msgs[0]
	if m.Kind != kind {
		t.Fatalf("mail to %s is %s, want %s", addr, m.Kind, kind)
	}
	sub := mailToken.FindStringSubmatch(m.Text)
	if sub == nil || strings.Count(m.Text, sub[1]) < 2 {
		t.Fatalf("mail without link and code: %s", m.Text)
	}
	return sub[1], m
}
