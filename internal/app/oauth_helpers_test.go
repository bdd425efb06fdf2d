package app_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/db"
)

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

func auditCount(t *testing.T, e *apptest.Env, eventType, resourceID string) int {
	t.Helper()
	var n int
	if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM audit_events WHERE event_type = $1 AND resource_id = $2`, eventType, resourceID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
