package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sync/atomic"

	"github.com/valyala/fasthttp"

	"hmid/internal/auth"
	"hmid/internal/passkey"
	"hmid/internal/passkey/passkeytest"
	"hmid/internal/web"
)

func init() {
	register(Scenario{Name: "passkey-login",
		About: "one op = a passwordless passkey sign-in through the login page's endpoints: POST /login/passkey/options, an ES256 assertion, POST /login/passkey to a session (compare password-login)",
		Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			if e.Server == nil || !e.Server.Passkeys.Available() {
				return nil, errors.New("passkey-login registers its passkeys in the in-process server (on localhost): run it without -target")
			}
			workers := make([]*passkeyWorker, e.Concurrency)
			for w := range workers {
				pw, err := e.newPasskeyWorker(ctx, w)
				if err != nil {
					return nil, fmt.Errorf("worker %d: %w", w, err)
				}
				workers[w] = pw
			}
			return func(ctx context.Context, w int) error { return e.passkeyLogin(ctx, workers[w]) }, nil
		}})
}

// passkeyWorker is one worker's browser: a user with a passkey on a
// software authenticator, and the CSRF cookie and token of its login page.
type passkeyWorker struct {
	from   string
	auth   *passkeytest.Authenticator
	cookie string // hmid_csrf
	csrf   string // the login form's token
	userID string
}

// passkeySignins numbers the sign-ins of the run, for their addresses.
var passkeySignins atomic.Int64

var csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// newPasskeyWorker makes worker's user, registers its passkey through the
// service (the ceremony as the security page runs it) and opens the login
// page once for the CSRF cookie and token.
func (e *Env) newPasskeyWorker(ctx context.Context, w int) (*passkeyWorker, error) {
	u, err := e.newUser(ctx, "")
	if err != nil {
		return nil, err
	}
	svc := e.Server.Passkeys
	pw := &passkeyWorker{from: clientAddr(w), auth: passkeytest.New(svc.RPID(), svc.Origin()), userID: u.ID}
	opts, err := svc.BeginRegistration(ctx, u.ID, "bench")
	if err != nil {
		return nil, err
	}
	body, err := pw.auth.Create(opts)
	if err != nil {
		return nil, err
	}
	if _, err := svc.FinishRegistration(ctx, u.ID, "bench", body, "", passkey.Client{}); err != nil {
		return nil, err
	}
	a, err := e.sendFrom(ctx, pw.from, http.MethodGet, "/login", "", nil)
	if err != nil {
		return nil, err
	}
	m := csrfField.FindSubmatch(a.body)
	pw.cookie = a.cookies[web.CSRFCookie]
	if a.status != http.StatusOK || m == nil || pw.cookie == "" {
		return nil, fmt.Errorf("GET /login: status %d, CSRF cookie %t", a.status, pw.cookie != "")
	}
	pw.csrf = string(m[1])
	return pw, nil
}

// passkeyLogin signs pw's user in with the passkey and fails unless it ends
// with a session cookie.
func (e *Env) passkeyLogin(ctx context.Context, pw *passkeyWorker) error {
	// Each sign-in comes from an address of its own: the server lets one
	// address begin only a few passkey sign-ins a minute, as a person
	// needs, and the bench stands for many people.
	pw.from = clientAddr(int(passkeySignins.Add(1) % 65536))
	a, err := e.postForm(ctx, pw, "/login/passkey/options", url.Values{"csrf_token": {pw.csrf}})
	if err != nil {
		return err
	}
	if a.status != http.StatusOK {
		return fmt.Errorf("POST /login/passkey/options: status %d: %.200s", a.status, a.body)
	}
	cred, err := pw.auth.Get(a.body)
	if err != nil {
		return err
	}
	a, err = e.postForm(ctx, pw, "/login/passkey", url.Values{"csrf_token": {pw.csrf}, "credential": {string(cred)}})
	if err != nil {
		return err
	}
	if a.status != http.StatusOK || a.cookies[auth.CookieName] == "" {
		return fmt.Errorf("POST /login/passkey: status %d, session cookie %t: %.200s", a.status, a.cookies[auth.CookieName] != "", a.body)
	}
	return nil
}

// postForm posts form to path with pw's CSRF cookie, from pw's address.
func (e *Env) postForm(ctx context.Context, pw *passkeyWorker, path string, form url.Values) (answer, error) {
	if err := ctx.Err(); err != nil {
		return answer{}, err
	}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI(e.URL + path)
	req.Header.SetMethod(http.MethodPost)
	req.Header.SetContentType("application/x-www-form-urlencoded")
	req.SetBodyString(form.Encode())
	req.Header.SetCookie(web.CSRFCookie, pw.cookie)
	req.Header.Set("X-Forwarded-For", pw.from)
	return e.do(req)
}
