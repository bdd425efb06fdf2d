package app_test

import (
	"net/http"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/auth"
)

// TestLoginDeviceCookieTwoFactor: with two-factor authentication the device
// cookie comes with the session, after the code, not after the password
// alone.
func TestLoginDeviceCookieTwoFactor(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const pw = "correct horse battery"
		u := e.NewUser(t, apptest.UserSpec{Password: pw})
		secret, _ := tfEnable(t, e, u)
		device := func(r *apptest.Resp) *http.Cookie {
			for _, c := range (&http.Response{Header: r.Header}).Cookies() {
				if c.Name == auth.DeviceCookieName {
					return c
				}
			}
			return nil
		}
		r := e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": u.Email, "password": pw}, http.StatusOK)
		if r.JSON()["two_factor_required"] != true || device(r) != nil {
			t.Fatalf("password step: %s %v", r.Body, r.Header)
		}
		e.Clock.Advance(31 * time.Second) // a fresh TOTP step
		r = e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": u.Email, "password": pw, "code": tfCode(t, secret, e.Clock.Now())}, http.StatusOK)
		if c := device(r); c == nil || c.Value == "" || !c.HttpOnly {
			t.Fatalf("no device cookie after the code: %v", r.Header)
		}
	})
}
