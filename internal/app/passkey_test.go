package app_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
	"hmid/internal/mail"
	"hmid/internal/mail/mailtest"
	"hmid/internal/passkey"
	"hmid/internal/passkey/passkeytest"
	"hmid/internal/web/signin"
)

// onLocalhost serves the test instance as http://localhost:PORT: a
// relying-party id is a domain, never an IP address.
func onLocalhost(c *config.Config) {
	c.PublicURL = strings.Replace(c.PublicURL, "127.0.0.1", "localhost", 1)
}

// pkClient is the audit origin of the service calls of these tests.
var pkClient = passkey.Client{IPAddress: "192.0.2.1", UserAgent: "test", SourceService: "id"}

// newAuthenticator is a software authenticator for e's relying party.
func newAuthenticator(e *apptest.Env) *passkeytest.Authenticator {
	origin := strings.Replace(e.URL, "127.0.0.1", "localhost", 1)
	return passkeytest.New("localhost", origin)
}

// registerPasskey adds a passkey of a to userID through the ceremony.
func registerPasskey(t *testing.T, e *apptest.Env, userID string, a *passkeytest.Authenticator) passkey.Passkey {
	t.Helper()
	ctx := context.Background()
	opts, err := e.Server.Passkeys.BeginRegistration(ctx, userID, "browser-1")
	if err != nil {
		t.Fatalf("BeginRegistration: %v", err)
	}
	body, err := a.Create(opts)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := e.Server.Passkeys.FinishRegistration(ctx, userID, "browser-1", body, "", pkClient)
	if err != nil {
		t.Fatalf("FinishRegistration: %v", err)
	}
	return pk
}

// signCount reads a passkey's stored counter.
func signCount(t *testing.T, e *apptest.Env, id string) int64 {
	t.Helper()
	var n int64
	if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT sign_count FROM passkeys WHERE id = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPasskeyRegistrationAndREST(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		a := newAuthenticator(e)
		pk := registerPasskey(t, e, u.ID, a)
		if pk.Name != "Passkey" || pk.BackupEligible || pk.AAGUID != "00000000-0000-0000-0000-000000000000" {
			t.Fatalf("stored passkey = %+v", pk)
		}
		got, err := mailtest.Outbox(context.Background(), e.Server.DB, u.Email)
		if err != nil || len(got) != 1 || got[0].Kind != mail.KindPasskeyAdded {
			t.Fatalf("mails after add = %+v, %v", got, err)
		}
		// The same credential again (excludeCredentials ignored) is a conflict.
		opts, _ := e.Server.Passkeys.BeginRegistration(context.Background(), u.ID, "browser-1")
		again, _ := a.Create(opts)
		if _, err := e.Server.Passkeys.FinishRegistration(context.Background(), u.ID, "browser-1", again, "", pkClient); !apperr.Is(err, apperr.Conflict) {
			t.Fatalf("second registration of one credential: %v", err)
		}

		r := e.Call(t, "GET", "/v1/users/me/passkeys", u.Token, nil, 200)
		var list struct {
			Data []map[string]any `json:"data"`
		}
		r.Decode(t, &list)
		if len(list.Data) != 1 || list.Data[0]["id"] != pk.ID || list.Data[0]["last_used_at"] != nil {
			t.Fatalf("list = %s", r.Body)
		}
		for _, k := range []string{"public_key", "credential_id", "sign_count"} {
			if strings.Contains(string(r.Body), k) {
				t.Fatalf("list shows key material %q: %s", k, r.Body)
			}
		}
		e.Call(t, "GET", "/v1/users/me/passkeys", other.Token, nil, 200)
		e.Call(t, "PATCH", "/v1/users/me/passkeys/"+pk.ID, u.Token, map[string]any{"name": "  My   laptop "}, 200)
		e.Call(t, "PATCH", "/v1/users/me/passkeys/"+pk.ID, u.Token, map[string]any{"name": ""}, 400)
		e.Call(t, "PATCH", "/v1/users/me/passkeys/"+pk.ID, u.Token, map[string]any{"name": strings.Repeat("x", 101)}, 400)
		e.Call(t, "PATCH", "/v1/users/me/passkeys/"+pk.ID, u.Token, map[string]any{"name": 5}, 400)
		e.Call(t, "PATCH", "/v1/users/me/passkeys/"+pk.ID, u.Token, `{"name":`, 400)
		e.Call(t, "PATCH", "/v1/users/me/passkeys/"+pk.ID, other.Token, map[string]any{"name": "mine now"}, 404)
		e.Call(t, "DELETE", "/v1/users/me/passkeys/"+pk.ID, other.Token, nil, 404)
		r = e.Call(t, "GET", "/v1/users/me/passkeys", u.Token, nil, 200)
		if !strings.Contains(string(r.Body), `"name":"My laptop"`) {
			t.Fatalf("rename not kept: %s", r.Body)
		}

		// Operators.
		admin := e.Admin(t)
		e.Call(t, "GET", "/v1/users/"+u.ID+"/passkeys", other.Token, nil, 403)
		e.Call(t, "DELETE", "/v1/users/"+u.ID+"/passkeys/"+pk.ID, other.Token, nil, 403)
		r = e.Call(t, "GET", "/v1/users/"+u.ID+"/passkeys", admin.Token, nil, 200)
		if !strings.Contains(string(r.Body), pk.ID) {
			t.Fatalf("operator list = %s", r.Body)
		}
		e.Call(t, "GET", "/v1/users/no-such-user/passkeys", admin.Token, nil, 404)
		e.Call(t, "DELETE", "/v1/users/"+other.ID+"/passkeys/"+pk.ID, admin.Token, nil, 404)
		e.Call(t, "DELETE", "/v1/users/"+u.ID+"/passkeys/"+pk.ID, admin.Token, nil, 204)
		e.Call(t, "DELETE", "/v1/users/me/passkeys/"+pk.ID, u.Token, nil, 404)
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'passkey_removed' AND actor_id = $2`, u.ID, admin.ID); n != 1 {
			t.Fatalf("passkey_removed by the operator audited %d times", n)
		}
		got, _ = mailtest.Outbox(context.Background(), e.Server.DB, u.Email)
		if len(got) != 2 || (got[0].Kind != mail.KindPasskeyRemoved && got[1].Kind != mail.KindPasskeyRemoved) {
			t.Fatalf("mails after remove = %+v", got)
		}
	}, onLocalhost)
}

func TestPasskeyRegistrationBadInput(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		u := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		svc := e.Server.Passkeys
		for name, body := range map[string]string{"empty": "", "not json": "garbage", "empty object": "{}", "bad base64": `{"id":"!","rawId":"!","type":"public-key","response":{"clientDataJSON":"!","attestationObject":"!"}}`} {
			if _, err := svc.FinishRegistration(ctx, u.ID, "browser-1", []byte(body), "", pkClient); !apperr.Is(err, apperr.Validation) {
				t.Errorf("%s: %v", name, err)
			}
		}
		// Begun for one user, finished for another, or in another browser.
		a := newAuthenticator(e)
		opts, _ := svc.BeginRegistration(ctx, u.ID, "browser-1")
		body, _ := a.Create(opts)
		if _, err := svc.FinishRegistration(ctx, u.ID, "browser-2", body, "", pkClient); !apperr.Is(err, apperr.Validation) {
			t.Errorf("other browser: %v", err)
		}
		if _, err := svc.FinishRegistration(ctx, other.ID, "browser-1", body, "", pkClient); !apperr.Is(err, apperr.Validation) {
			t.Errorf("other user: %v", err)
		}
		// A wrong origin does not verify.
		evil := passkeytest.New(a.RPID, "https://evil.example")
		opts, _ = svc.BeginRegistration(ctx, u.ID, "browser-1")
		body, _ = evil.Create(opts)
		if _, err := svc.FinishRegistration(ctx, u.ID, "browser-1", body, "", pkClient); !apperr.Is(err, apperr.Validation) {
			t.Errorf("wrong origin: %v", err)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM passkeys`); n != 0 {
			t.Fatalf("%d passkeys stored from bad input", n)
		}
	}, onLocalhost)
}

func TestPasskeyLoginRules(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		svc := e.Server.Passkeys
		u := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		a := newAuthenticator(e)
		pk := registerPasskey(t, e, u.ID, a)
		b := newAuthenticator(e)
		registerPasskey(t, e, other.ID, b)

		login := func(auth *passkeytest.Authenticator, binding, finishBinding, userID string) (passkey.Assertion, error) {
			opts, err := svc.BeginLogin(ctx, binding, userID)
			if err != nil {
				t.Fatalf("BeginLogin: %v", err)
			}
			body, err := auth.Get(opts)
			if err != nil {
				t.Fatal(err)
			}
			return svc.FinishLogin(ctx, finishBinding, userID, body, pkClient)
		}
		as, err := login(a, "browser-1", "browser-1", "")
		if err != nil || as.UserID != u.ID || !as.UserVerified || strings.Join(as.AMR, " ") != "hwk user mfa" {
			t.Fatalf("passwordless login = %+v, %v", as, err)
		}
		if signCount(t, e, pk.ID) != 1 {
			t.Fatalf("counter not stored")
		}
		// As the second factor of u.
		if _, err := login(a, "browser-1", "browser-1", u.ID); err != nil {
			t.Fatalf("second factor: %v", err)
		}

		// Replayed: the same answer twice.
		opts, _ := svc.BeginLogin(ctx, "browser-1", "")
		body, _ := a.Get(opts)
		if _, err := svc.FinishLogin(ctx, "browser-1", "", body, pkClient); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.FinishLogin(ctx, "browser-1", "", body, pkClient); !apperr.Is(err, apperr.Validation) {
			t.Fatalf("replay: %v", err)
		}
		before := signCount(t, e, pk.ID)

		refused := map[string]struct {
			run  func() error
			kind apperr.Kind
		}{
			"other browser": {func() error { _, err := login(a, "browser-1", "browser-2", ""); return err }, apperr.Validation},
			"expired": {func() error {
				opts, _ := svc.BeginLogin(ctx, "browser-1", "")
				e.Clock.Advance(passkey.CeremonyTTL + time.Second)
				body, _ := a.Get(opts)
				_, err := svc.FinishLogin(ctx, "browser-1", "", body, pkClient)
				return err
			}, apperr.Validation},
			"another user's passkey as u's second factor": {func() error { _, err := login(b, "browser-1", "browser-1", u.ID); return err }, apperr.Unauthorized},
			"unknown credential": {func() error {
				stranger := newAuthenticator(e)
				opts, _ := svc.BeginRegistration(ctx, u.ID, "x")
				_, _ = stranger.Create(opts) // takes u's handle, never finished
				_, err := login(stranger, "browser-1", "browser-1", "")
				return err
			}, apperr.Unauthorized},
			"user handle of another user": {func() error {
				c := a.Clone(a.Count)
				c.SetUserHandle([]byte(other.ID))
				_, err := login(c, "browser-1", "browser-1", "")
				return err
			}, apperr.Unauthorized},
			"wrong origin": {func() error {
				c := a.Clone(a.Count + 10)
				c.Origin = "https://evil.example"
				_, err := login(c, "browser-1", "browser-1", "")
				return err
			}, apperr.Unauthorized},
			"wrong rp id": {func() error {
				c := a.Clone(a.Count + 20)
				c.RPID = "evil.example"
				_, err := login(c, "browser-1", "browser-1", "")
				return err
			}, apperr.Unauthorized},
			"cloned (counter reset)": {func() error { _, err := login(a.Clone(0), "browser-1", "browser-1", ""); return err }, apperr.Unauthorized},
			"malformed": {func() error {
				opts, _ := svc.BeginLogin(ctx, "browser-1", "")
				_ = opts
				_, err := svc.FinishLogin(ctx, "browser-1", "", []byte(`{"id":"x","type":"public-key","response":{}}`), pkClient)
				return err
			}, apperr.Validation},
			"tampered client data": {func() error {
				opts, _ := svc.BeginLogin(ctx, "browser-1", "")
				var o struct {
					PublicKey struct{ Challenge string } `json:"publicKey"`
				}
				_ = json.Unmarshal(opts, &o)
				cd := a.ClientData("webauthn.create", o.PublicKey.Challenge) // a registration's type
				body, _ := a.Assert(cd)
				_, err := svc.FinishLogin(ctx, "browser-1", "", body, pkClient)
				return err
			}, apperr.Unauthorized},
		}
		sessionsBefore := count(t, e, `SELECT COUNT(*) FROM sessions`)
		for name, c := range refused {
			if err := c.run(); !apperr.Is(err, c.kind) {
				t.Errorf("%s: %v, want %s", name, err, c.kind)
			}
		}
		if got := signCount(t, e, pk.ID); got != before {
			t.Fatalf("a refused assertion moved the counter from %d to %d", before, got)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM sessions`); n != sessionsBefore {
			t.Fatalf("refusals created sessions")
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'passkey_login' AND status = 'failure' AND metadata LIKE '%clone_suspected%'`, u.ID); n != 1 {
			t.Fatalf("clone audited %d times", n)
		}
		// The genuine authenticator still works after the clone was refused.
		if _, err := login(a, "browser-1", "browser-1", ""); err != nil {
			t.Fatalf("genuine after clone: %v", err)
		}
	}, onLocalhost)
}

func TestPasskeyPolicy(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		svc := e.Server.Passkeys
		admin := e.Admin(t)
		u := e.NewUser(t, apptest.UserSpec{})
		a := newAuthenticator(e)
		a.Synced = true
		pk := registerPasskey(t, e, u.ID, a)
		if !pk.BackupEligible || !pk.BackupState {
			t.Fatalf("synced flags not stored: %+v", pk)
		}
		if on, err := svc.Counts(ctx, u.ID); err != nil || !on {
			t.Fatalf("a passkey counts as second factor: %v %v", on, err)
		}
		r := e.Call(t, "GET", "/v1/users/me/2fa/requirement", u.Token, nil, 200)
		if r.JSON()["enabled"] != true {
			t.Fatalf("requirement with a passkey: %s", r.Body)
		}
		set := func(key string, v any) {
			e.Call(t, "PATCH", "/v1/system-config/"+key, admin.Token, map[string]any{"value": v}, 200)
		}
		e.Call(t, "PATCH", "/v1/system-config/passkey.user_verification", admin.Token, map[string]any{"value": "sometimes"}, 400)
		set("passkey.passwordless", false)
		if _, err := svc.BeginLogin(ctx, "b", ""); !apperr.Is(err, apperr.Forbidden) {
			t.Fatalf("passwordless off: %v", err)
		}
		if _, err := svc.BeginLogin(ctx, "b", u.ID); err != nil {
			t.Fatalf("second factor with passwordless off: %v", err)
		}
		set("passkey.passwordless", true)
		// A synced passkey for a user whose role requires two factors.
		set("passkey.refuse_synced_for_required", true)
		if _, err := e.Server.DB.ExecContext(ctx, `UPDATE roles SET requires_two_factor = TRUE WHERE id = 'role_user'`); err != nil {
			t.Fatal(err)
		}
		if on, _ := svc.Counts(ctx, u.ID); on {
			t.Fatalf("a synced passkey counted although refused")
		}
		opts, _ := svc.BeginLogin(ctx, "b", "")
		body, _ := a.Get(opts)
		if _, err := svc.FinishLogin(ctx, "b", "", body, pkClient); !apperr.Is(err, apperr.Forbidden) {
			t.Fatalf("synced refused: %v", err)
		}
		set("passkey.enabled", false)
		if _, err := svc.BeginRegistration(ctx, u.ID, "b"); !apperr.Is(err, apperr.Forbidden) {
			t.Fatalf("passkeys off: %v", err)
		}
	}, onLocalhost)
}

// TestPasskeyTwoInstances: a ceremony begun on one instance is finished on
// the other, once (the challenge lives in the shared Redis). Both serve one
// public URL, as behind a load balancer.
func TestPasskeyTwoInstances(t *testing.T) {
	t.Parallel()
	if dbtest.RedisURL() == "" {
		t.Skip("HMID_TEST_REDIS_URL not set")
	}
	const public = "http://localhost:8080"
	a, b := apptest.NewPair(t, dbtest.RedisURL(), func(c *config.Config) { c.PublicURL = public })
	ctx := context.Background()
	u := a.NewUser(t, apptest.UserSpec{})
	auth := passkeytest.New("localhost", public)
	opts, err := a.Server.Passkeys.BeginRegistration(ctx, u.ID, "browser-1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := auth.Create(opts)
	if _, err := b.Server.Passkeys.FinishRegistration(ctx, u.ID, "browser-1", body, "", pkClient); err != nil {
		t.Fatalf("registration begun on a, finished on b: %v", err)
	}
	opts, err = b.Server.Passkeys.BeginLogin(ctx, "browser-1", "")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = auth.Get(opts)
	if as, err := a.Server.Passkeys.FinishLogin(ctx, "browser-1", "", body, pkClient); err != nil || as.UserID != u.ID {
		t.Fatalf("login begun on b, finished on a: %+v %v", as, err)
	}
	for _, e := range []*apptest.Env{a, b} {
		if _, err := e.Server.Passkeys.FinishLogin(ctx, "browser-1", "", body, pkClient); !apperr.Is(err, apperr.Validation) {
			t.Fatalf("the same answer again: %v", err)
		}
	}
}

// TestPasskeyLifecycleHooks: the data export lists passkeys without key
// material; an administrator's second-factor reset removes them (also for a
// user whose only second factor is a passkey); deleting the account for
// good deletes them.
func TestPasskeyLifecycleHooks(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		u := e.NewUser(t, apptest.UserSpec{})
		a := newAuthenticator(e)
		registerPasskey(t, e, u.ID, a)
		e.Call(t, "PATCH", "/v1/users/me/passkeys/"+passkeyID(t, e, u.ID), u.Token, map[string]any{"name": "Blue key"}, 200)

		r := e.Call(t, "GET", "/v1/user/export", u.Token, nil, 200)
		raw := openZip(t, r.Body)["data.json"]
		var data struct {
			Passkeys []map[string]any `json:"passkeys"`
		}
		if err := json.Unmarshal(raw, &data); err != nil || len(data.Passkeys) != 1 || data.Passkeys[0]["name"] != "Blue key" {
			t.Fatalf("export passkeys = %+v (%v)", data.Passkeys, err)
		}
		cid := base64.RawURLEncoding.EncodeToString(a.CredentialID())
		if strings.Contains(string(raw), cid) || strings.Contains(string(raw), "publicKey") {
			t.Fatalf("the export holds key material")
		}

		e.Call(t, "POST", "/v1/users/"+u.ID+"/2fa/reset", admin.Token, map[string]any{"reason": "lost the key"}, 200)
		if n := count(t, e, `SELECT COUNT(*) FROM passkeys WHERE user_id = $1`, u.ID); n != 0 {
			t.Fatalf("%d passkeys left after the reset", n)
		}
		e.Call(t, "POST", "/v1/users/"+u.ID+"/2fa/reset", admin.Token, map[string]any{"reason": "again"}, 400)

		registerPasskey(t, e, u.ID, newAuthenticator(e))
		e.Call(t, "POST", "/v1/admin/users/"+u.ID+"/force-delete", admin.Token, map[string]any{"reason": "asked"}, 200)
		if n := count(t, e, `SELECT COUNT(*) FROM passkeys WHERE user_id = $1`, u.ID); n != 0 {
			t.Fatalf("%d passkeys left after deletion", n)
		}
	}, onLocalhost)
}

func passkeyID(t *testing.T, e *apptest.Env, userID string) string {
	t.Helper()
	var id string
	if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT id FROM passkeys WHERE user_id = $1`, userID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestPasskeyGraphQL: myPasskeys, renamePasskey and removePasskey are the
// twins of the REST routes.
func TestPasskeyGraphQL(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		pk := registerPasskey(t, e, u.ID, newAuthenticator(e))
		gql := func(tok, q string) map[string]any {
			t.Helper()
			return e.Call(t, "POST", "/v1/graphql", tok, map[string]any{"query": q}, 200).JSON()
		}
		r := gql(u.Token, `{ myPasskeys { id name backupEligible lastUsedAt transports } }`)
		list, _ := r["data"].(map[string]any)["myPasskeys"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["id"] != pk.ID {
			t.Fatalf("myPasskeys = %v", r)
		}
		r = gql(other.Token, `mutation { renamePasskey(id: "`+pk.ID+`", name: "mine") { id } }`)
		if r["errors"] == nil {
			t.Fatalf("another user renamed the passkey: %v", r)
		}
		r = gql(u.Token, `mutation { renamePasskey(id: "`+pk.ID+`", name: "Desk key") { name } }`)
		if r["data"].(map[string]any)["renamePasskey"].(map[string]any)["name"] != "Desk key" {
			t.Fatalf("renamePasskey = %v", r)
		}
		r = gql(u.Token, `mutation { removePasskey(id: "`+pk.ID+`") { success } }`)
		if r["data"].(map[string]any)["removePasskey"].(map[string]any)["success"] != true {
			t.Fatalf("removePasskey = %v", r)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM passkeys`); n != 0 {
			t.Fatalf("%d passkeys after removePasskey", n)
		}
	}, onLocalhost)
}

// pageBrowser is an HTTP client with cookies, speaking to the pages as a
// browser without the script would, and posting what the script posts.
type pageBrowser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newPageBrowser(t *testing.T, e *apptest.Env) *pageBrowser {
	jar, _ := cookiejar.New(nil)
	return &pageBrowser{t: t, base: strings.Replace(e.URL, "127.0.0.1", "localhost", 1),
		c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *pageBrowser) do(method, path string, form url.Values) (int, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, b.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Origin", b.base)
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}

var hiddenRE = regexp.MustCompile(`name="(csrf_token|state)" value="([^"]*)"`)

// fields reads the hidden csrf_token and state of a page.
func fields(page string) url.Values {
	v := url.Values{}
	for _, m := range hiddenRE.FindAllStringSubmatch(page, -1) {
		if v.Get(m[1]) == "" {
			v.Set(m[1], m[2])
		}
	}
	return v
}

// TestPasskeyPages drives the ceremonies through the page endpoints the
// script calls: the second factor after the password, and the passwordless
// sign-in; the session's amr says what happened.
func TestPasskeyPages(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "correct horse battery"})
		a := newAuthenticator(e)
		registerPasskey(t, e, u.ID, a)
		b := newPageBrowser(t, e)

		_, page := b.do("GET", "/login", nil)
		if !strings.Contains(page, `autocomplete="username webauthn"`) || !strings.Contains(page, `/assets/passkey.js`) || !strings.Contains(page, `id="passkey-login"`) {
			t.Fatalf("login page: %s", page)
		}
		f := fields(page)
		f.Set("email", u.Email)
		f.Set("password", "correct horse battery")
		status, page := b.do("POST", "/login", f)
		if status != 200 || !strings.Contains(page, `id="passkey-second"`) || strings.Contains(page, `id="code"`) {
			t.Fatalf("two-factor step (%d): %s", status, page)
		}
		f = fields(page)
		status, opts := b.do("POST", "/login/passkey/options", f)
		if status != 200 {
			t.Fatalf("options: %d %s", status, opts)
		}
		body, err := a.Get([]byte(opts))
		if err != nil {
			t.Fatal(err)
		}
		f.Set("credential", string(body))
		status, out := b.do("POST", "/login/passkey", f)
		if status != 200 || !strings.Contains(out, `"redirect"`) {
			t.Fatalf("finish: %d %s", status, out)
		}
		var amr string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT amr FROM sessions WHERE user_id = $1 AND provider = 'email' ORDER BY created_at DESC LIMIT 1`, u.ID).Scan(&amr); err != nil {
			t.Fatal(err)
		}
		var got []string
		_ = json.Unmarshal([]byte(amr), &got)
		if strings.Join(got, " ") != "pwd hwk user mfa" {
			t.Fatalf("amr after password and passkey = %s", amr)
		}
		// The state is spent.
		if status, _ := b.do("POST", "/login/passkey/options", f); status != 400 {
			t.Fatalf("options for a spent state: %d", status)
		}

		// Passwordless, in a fresh browser.
		b = newPageBrowser(t, e)
		_, page = b.do("GET", "/login", nil)
		f = fields(page)
		_, opts = b.do("POST", "/login/passkey/options", f)
		body, _ = a.Get([]byte(opts))
		f.Set("credential", string(body))
		if status, out := b.do("POST", "/login/passkey", f); status != 200 {
			t.Fatalf("passwordless: %d %s", status, out)
		}
		if status, _ := b.do("GET", "/account", nil); status != 200 {
			t.Fatalf("account after the passkey sign-in: %d", status)
		}
		// The session's ID tokens say two factors: acr 2, amr hwk user mfa.
		u0, _ := url.Parse(b.base)
		var sessionTok string
		for _, c := range b.c.Jar.Cookies(u0) {
			if c.Name == "hmid_session" {
				sessionTok = c.Value
			}
		}
		client := rsClient(t, e, u.Token, nil)
		// (The issuer is the localhost URL, so the claims are read as they
		// are; the OIDC tests verify the signature.)
		raw, _ := tokens(t, e, sessionTok, client, authzParams(client.ID))["id_token"].(string)
		parts := strings.Split(raw, ".")
		var claims map[string]any
		if len(parts) != 3 {
			t.Fatalf("id_token %q", raw)
		}
		payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
		if err := json.Unmarshal(payload, &claims); err != nil {
			t.Fatal(err)
		}
		if claims["acr"] != "2" || strings.Join(toStrings(claims["amr"]), " ") != "hwk user mfa" {
			t.Fatalf("ID token of a passkey session: acr %v amr %v", claims["acr"], claims["amr"])
		}
		// Without the CSRF token: refused.
		if status, _ := b.do("POST", "/login/passkey/options", url.Values{}); status != 403 {
			t.Fatalf("options without CSRF: %d", status)
		}
	}, onLocalhost)
}

// TestPasskeyBeginThrottled: one address may begin a bounded number of
// passkey sign-ins per minute (each stores a challenge).
func TestPasskeyBeginThrottled(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		b := newPageBrowser(t, e)
		_, page := b.do("GET", "/login", nil)
		f := fields(page)
		start := time.Now()
		for i := range signin.BeginsPerMinute {
			if status, body := b.do("POST", "/login/passkey/options", f); status != 200 {
				t.Fatalf("begin %d: %d %s", i, status, body)
			}
		}
		// Redis's limiter reads Redis's own clock, so while the burst ran
		// (slowly under -race, beside parallel tests) real time gave back
		// one begin per emission interval; those may still pass, no more.
		regained := int(time.Since(start)/(time.Minute/signin.BeginsPerMinute)) + 1
		refused := false
		for range regained + 1 {
			status, _ := b.do("POST", "/login/passkey/options", f)
			if status == 429 {
				refused = true
				break
			}
			if status != 200 {
				t.Fatalf("begin past the allowance: %d", status)
			}
		}
		if !refused {
			t.Fatalf("begin past the allowance: still allowed after %d more", regained+1)
		}
		e.Advance(t, time.Minute)
		if status, _ := b.do("POST", "/login/passkey/options", f); status != 200 {
			t.Fatalf("begin a minute later: %d", status)
		}
	}, onLocalhost)
}

// TestPasskeyOnlyJSONLogin: for a user whose only second factor is a
// passkey, POST /v1/auth/login cannot finish with a code, so it says what
// does: 403 with reason passkey_required and the page that finishes the
// sign-in, in the person's language, with and without a code; nothing is
// created and no code is checked.
func TestPasskeyOnlyJSONLogin(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{Password: "passkey-person-pw"})
		registerPasskey(t, e, u.ID, newAuthenticator(e))
		loginPage := strings.Replace(e.URL, "127.0.0.1", "localhost", 1) + "/login"
		sessionsBefore := count(t, e, `SELECT COUNT(*) FROM sessions WHERE user_id = $1`, u.ID)
		for _, tc := range []struct {
			name, code, acceptLanguage, locale, want string
		}{
			{"no code", "", "", "", "only a browser can use it"},
			{"a code", "123456", "", "", "only a browser can use it"},
			{"a backup code", "abcd-efgh-ijkm", "", "", "only a browser can use it"},
			{"German by Accept-Language", "", "de-DE,de;q=0.9,en;q=0.8", "", "nur ein Browser kann ihn verwenden"},
			{"German by the user's locale", "123456", "en", "de", "nur ein Browser kann ihn verwenden"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				if tc.locale != "" {
					execSQL(t, e, `UPDATE users SET preferred_locale = $1 WHERE id = $2`, tc.locale, u.ID)
				}
				body := map[string]any{"email": u.Email, "password": "passkey-person-pw"}
				if tc.code != "" {
					body["code"] = tc.code
				}
				hdr := map[string]string{}
				if tc.acceptLanguage != "" {
					hdr["Accept-Language"] = tc.acceptLanguage
				}
				r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/auth/login", Body: body, Header: hdr})
				j := r.JSON()
				if r.Status != http.StatusForbidden || j["error"] != "Forbidden" || j["reason"] != "passkey_required" ||
					j["login_url"] != loginPage || !strings.Contains(j["message"].(string), tc.want) || !strings.Contains(j["message"].(string), loginPage) {
					t.Fatalf("login: %d %s", r.Status, r.Body)
				}
			})
		}
		if n := count(t, e, `SELECT COUNT(*) FROM sessions WHERE user_id = $1`, u.ID); n != sessionsBefore {
			t.Errorf("sessions = %d, want %d: a refused login created one", n, sessionsBefore)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'login_failed'`, u.ID); n != 0 {
			t.Errorf("login_failed events = %d: no code was checked", n)
		}
		// A wrong password is still only that.
		e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": u.Email, "password": "wrong-password!"}, http.StatusUnauthorized)
	}, onLocalhost)
}
