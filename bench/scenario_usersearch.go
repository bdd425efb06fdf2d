package main

import (
	"context"
	"net/url"
	"sync"
)

// The users list of issue 22 over 100,000 users: a part of a username or an
// address anywhere (the trigram indexes of migration 0931), sorts by each
// listed column deep in their pages, and the filters by state, two-factor
// authentication and role. The target is a p99 under 50 ms.
func init() {
	register(Scenario{Name: "admin-users-search", About: "GET /v1/users: substring searches, sorts and filters over 100,000 users",
		Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			if err := e.seedAdminUsers(ctx); err != nil {
				return nil, err
			}
			if err := e.seedUserRoles(ctx); err != nil {
				return nil, err
			}
			key, err := e.apiKey(ctx, "users:read", "two_factor:manage")
			if err != nil {
				return nil, err
			}
			return e.rotate(key, adminUsersSearchPaths()), nil
		}})
}

// adminUsersSearchPaths are the requests of admin-users-search.
func adminUsersSearchPaths() []string {
	return []string{
		"/v1/users?search=" + url.QueryEscape("ber_4242"),                // inside a username: 11 matches
		"/v1/users?search=" + url.QueryEscape("R.777@EXAMP"),             // inside an address, any case: 1 match
		"/v1/users?search=" + url.QueryEscape("ember 3141"),              // inside a name: 11 matches
		"/v1/users?search=" + url.QueryEscape("mber_9") + "&page=40",     // a broad part, deep in its pages
		"/v1/users?search=zzq-nobody",                                    // no match
		"/v1/users?sort_field=email&sort_direction=asc&page=500",         // by address, offset 10,000
		"/v1/users?sort_field=username&sort_direction=desc&page=2000",    // by name, offset 40,000
		"/v1/users?sort_field=last_login_at&sort_direction=desc&page=3",  // by the last sign-in
		"/v1/users?status=banned&page=20",                                // 2,000 banned
		"/v1/users?status=scheduled_for_deletion&include_deleted=true",   // 1,000 deleted
		"/v1/users?two_factor=on&page=50",                                // 5,000 with 2FA
		"/v1/users?role_id=role_user&search=" + url.QueryEscape("ber_1"), // a role and a search
	}
}

var (
	userRolesOnce sync.Once
	userRolesErr  error
)

// seedUserRoles gives every tenth seeded user the User role.
func (e *Env) seedUserRoles(ctx context.Context) error {
	userRolesOnce.Do(func() {
		_, userRolesErr = e.Server.DB.ExecContext(ctx, `INSERT INTO user_roles (user_id, role_id, created_at)
			SELECT id, 'role_user', created_at FROM users WHERE id LIKE '00000000-0000-4000-8000-%0' ON CONFLICT DO NOTHING`)
		if userRolesErr == nil {
			userRolesErr = analyze(ctx, e.Server.DB, "user_roles")
		}
	})
	return userRolesErr
}
