package main

import (
	"context"
	"fmt"
	"net/http"
)

func init() {
	register(
		Scenario{Name: "account-page", About: "GET /account/sessions: an account console page, rendered for the browser session of its cookie",
			Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
				u, err := e.newUser(ctx, "")
				if err != nil {
					return nil, err
				}
				cookies := map[string]string{"hmid_session": u.Session}
				return func(ctx context.Context, worker int) error {
					a, err := e.follow(ctx, clientAddr(worker), e.URL+"/account/sessions", cookies)
					if err == nil && a.status != http.StatusOK {
						err = fmt.Errorf("GET /account/sessions: status %d: %.200s", a.status, a.body)
					}
					return err
				}, nil
			}},
	)
}
