package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"hmid/internal/auth"
	"hmid/internal/upstream"
)

func init() {
	register(Scenario{Name: "provider-login",
		About: "one request = a whole Discord sign-in: GET /login/discord, the fake Discord's authorize, the callback (PKCE code redemption, user API) to a session",
		Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			if e.Server == nil {
				return nil, errors.New("provider-login signs in at the bench's own fake Discord, which only the in-process server is configured for: run it without -target")
			}
			// Each worker signs in as a Discord account of its own, created
			// here by its first sign-in: the run measures returning users,
			// and no two workers update the same user.
			for w := range e.Concurrency {
				if err := e.providerLogin(ctx, w); err != nil {
					return nil, fmt.Errorf("first sign-in of account %d: %w", w, err)
				}
			}
			return e.providerLogin, nil
		}})
}

// providerLogin signs worker's Discord account in through hmid's pages, as
// a browser at the worker's client address does, and fails unless it ends
// signed in: 303 to "/" with a session cookie.
func (e *Env) providerLogin(ctx context.Context, worker int) error {
	from := clientAddr(worker)
	a, err := e.sendFrom(ctx, from, http.MethodGet, "/login/discord", "", nil)
	if err != nil {
		return err
	}
	binding := a.cookies[upstream.BindingCookie]
	if a.status != http.StatusSeeOther || binding == "" {
		return fmt.Errorf("GET /login/discord: status %d, binding cookie %t: %.200s", a.status, binding != "", a.body)
	}
	// The authorization URL always has a query (state, PKCE challenge).
	a, err = e.follow(ctx, "", a.location+"&"+benchUserParam+"="+strconv.Itoa(worker), nil)
	if err != nil {
		return err
	}
	if a.status != http.StatusFound {
		return fmt.Errorf("fake Discord authorize: status %d: %.200s", a.status, a.body)
	}
	a, err = e.follow(ctx, from, a.location, map[string]string{upstream.BindingCookie: binding})
	if err != nil {
		return err
	}
	if a.status != http.StatusSeeOther || a.location != "/" || a.cookies[auth.CookieName] == "" {
		return fmt.Errorf("GET /login/discord/callback: status %d, Location %q, session cookie %t: %.200s",
			a.status, a.location, a.cookies[auth.CookieName] != "", a.body)
	}
	return nil
}
