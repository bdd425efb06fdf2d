package app_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
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

// execSQL runs a fixture statement.
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

// outbox returns the mails to addr, newest first.
func outbox(t testing.TB, e *apptest.Env, to string) []mail.Message {
	t.Helper()
	msgs, err := mailtest.Outbox(context.Background(), e.Server.DB, to)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
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

// cb is the redirect URI every test client registers.
const cb = "https://app.example/cb"

// testClient is a registered OAuth client.
type testClient struct {
	ID, Secret string
}

// mkClient registers a client owned by the holder of tok; extra overrides body fields.
func mkClient(t *testing.T, e *apptest.Env, tok string, extra map[string]any) testClient {
	t.Helper()
	body := map[string]any{"name": "Test App", "redirect_uris": []string{cb}}
	for k, v := range extra {
		body[k] = v
	}
	d := e.Call(t, "POST", "/v1/oauth/clients", tok, body, http.StatusCreated).JSON()["data"].(map[string]any)
	c := testClient{ID: d["id"].(string)}
	if s, ok := d["client_secret"].(string); ok {
		c.Secret = s
	}
	return c
}

// authzParams are the parameters of a plain confidential-client authorization request.
func authzParams(clientID string, extra ...string) url.Values {
	q := url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {cb}, "scope": {"openid profile email"}, "state": {"st4te"}}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "" {
			q.Del(extra[i])
		} else {
			q.Set(extra[i], extra[i+1])
		}
	}
	return q
}

func authorize(t *testing.T, e *apptest.Env, tok string, q url.Values, hdr map[string]string) *apptest.Resp {
	t.Helper()
	return e.Do(t, apptest.Req{Method: "GET", Path: "/v1/oauth/authorize?" + q.Encode(), Token: tok, Header: hdr})
}

// location returns the Location of a 302 answer.
func location(t *testing.T, r *apptest.Resp) *url.URL {
	t.Helper()
	if r.Status != http.StatusFound {
		t.Fatalf("status %d, want 302; body %s", r.Status, r.Body)
	}
	u, err := url.Parse(r.Header.Get("Location"))
	if err != nil {
		t.Fatalf("Location: %v", err)
	}
	return u
}

// redirectError asserts a 302 to cb carrying error code want, the state and iss.
func redirectError(t *testing.T, e *apptest.Env, r *apptest.Resp, want string) {
	t.Helper()
	u := location(t, r)
	q := u.Query()
	if !strings.HasPrefix(u.String(), cb+"?") || q.Get("error") != want || q.Get("iss") != e.URL || q.Get("state") != "st4te" || q.Get("error_description") == "" {
		t.Fatalf("redirect %s, want error=%s with state and iss", u, want)
	}
}

// consent approves or denies a pending authorization and returns the redirect.
func consent(t *testing.T, e *apptest.Env, tok, pendingID string, approved bool) *url.URL {
	t.Helper()
	r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/authorize/consent", Token: tok,
		Body: map[string]any{"pending_authorization_id": pendingID, "approved": approved}})
	return location(t, r)
}

// getCode runs the authorization request (approving consent if asked) and returns the code.
func getCode(t *testing.T, e *apptest.Env, tok string, q url.Values) string {
	t.Helper()
	r := authorize(t, e, tok, q, nil)
	if r.Status == http.StatusOK {
		id := r.JSON()["pending_authorization_id"].(string)
		u := consent(t, e, tok, id, true)
		return u.Query().Get("code")
	}
	u := location(t, r)
	code := u.Query().Get("code")
	if code == "" {
		t.Fatalf("no code in %s", u)
	}
	return code
}

// tokenReq posts form to the token endpoint with optional extra headers.
func tokenReq(t *testing.T, e *apptest.Env, form url.Values, hdr map[string]string) *apptest.Resp {
	t.Helper()
	return e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/token", Body: form, Header: hdr})
}

func basicAuth(id, secret string) map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret)))}
}

// exchange redeems code for c with client_secret_post and returns the token answer.
func exchange(t *testing.T, e *apptest.Env, c testClient, code string, extra ...string) *apptest.Resp {
	t.Helper()
	f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cb}, "client_id": {c.ID}}
	if c.Secret != "" {
		f.Set("client_secret", c.Secret)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "" {
			f.Del(extra[i])
		} else {
			f.Set(extra[i], extra[i+1])
		}
	}
	return tokenReq(t, e, f, nil)
}

func refreshReq(t *testing.T, e *apptest.Env, c testClient, rt string, extra ...string) *apptest.Resp {
	t.Helper()
	f := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {c.ID}}
	if c.Secret != "" {
		f.Set("client_secret", c.Secret)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		f.Set(extra[i], extra[i+1])
	}
	return tokenReq(t, e, f, nil)
}

// oauthErr asserts an OAuth error answer with status and code.
func oauthErr(t *testing.T, r *apptest.Resp, status int, code string) {
	t.Helper()
	m := r.JSON()
	if r.Status != status || m["error"] != code || m["error_description"] == "" {
		t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, status, code)
	}
}

// tokens runs the whole flow for c and returns the token answer.
func tokens(t *testing.T, e *apptest.Env, userTok string, c testClient, q url.Values) map[string]any {
	t.Helper()
	code := getCode(t, e, userTok, q)
	r := exchange(t, e, c, code)
	if r.Status != http.StatusOK {
		t.Fatalf("exchange: %d %s", r.Status, r.Body)
	}
	return r.JSON()
}

func ban(t *testing.T, e *apptest.Env, userID string) {
	t.Helper()
	if _, err := e.Server.DB.ExecContext(context.Background(), `INSERT INTO bans (id, user_id, banned_at, is_permanent) VALUES ($1, $2, $3, TRUE)`,
		"ban-"+userID, userID, db.TS(e.Clock.Now())); err != nil {
		t.Fatal(err)
	}
	if err := e.Server.Epoch.Bump(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// auditCount counts the audit events of eventType about resourceID.
func auditCount(t *testing.T, e *apptest.Env, eventType, resourceID string) int {
	t.Helper()
	return count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = $1 AND resource_id = $2`, eventType, resourceID)
}
