package app_test

import (
	"net/http"
	"testing"

	"hmid/internal/apptest"
	"hmid/internal/users"
)

func TestPlatformAccounts(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		d, discord := providerUser(t, e, "discord")
		github := addAccount(t, e, d.ID, "github")
		other := e.NewUser(t, apptest.UserSpec{})
		base := "/v1/users/" + d.ID + "/accounts"

		e.Call(t, "GET", base, "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", base, other.Token, nil, http.StatusForbidden)
		e.Call(t, "GET", "/v1/users/nobody/accounts", e.SystemKey, nil, http.StatusNotFound)
		list := e.Call(t, "GET", base, d.Token, nil, http.StatusOK).JSON()["data"].([]any)
		if len(list) != 2 {
			t.Fatalf("accounts = %v", list)
		}
		primary := map[string]bool{}
		for _, a := range list {
			m := a.(map[string]any)
			primary[m["platform_slug"].(string)] = m["is_primary"].(bool)
			if m["is_oauth"] != true || m["platform_name"] == "" {
				t.Fatalf("account = %v", m)
			}
		}
		if !primary["discord"] || primary["github"] {
			t.Fatalf("primary = %v", primary)
		}

		// The primary account cannot be unlinked; after switching, the old one can.
		e.Call(t, "DELETE", base+"/"+discord, d.Token, nil, http.StatusBadRequest)
		e.Call(t, "PUT", base+"/"+github+"/primary", other.Token, nil, http.StatusForbidden)
		e.Call(t, "PUT", base+"/nope/primary", d.Token, nil, http.StatusNotFound)
		r := e.Call(t, "PUT", base+"/"+github+"/primary", d.Token, nil, http.StatusOK).JSON()
		if data := r["data"].(map[string]any); data["is_primary"] != true || data["platform_slug"] != "github" {
			t.Fatalf("primary = %v", r)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM users WHERE id = $1 AND primary_platform_account_id = $2`, d.ID, github); n != 1 {
			t.Fatal("users.primary_platform_account_id not updated")
		}
		if n := count(t, e, `SELECT COUNT(*) FROM platform_accounts WHERE user_id = $1 AND is_primary = TRUE`, d.ID); n != 1 {
			t.Fatal("more than one primary flag")
		}
		e.Call(t, "DELETE", base+"/"+discord, other.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", base+"/"+discord, d.Token, nil, http.StatusNoContent)
		e.Call(t, "DELETE", base+"/"+discord, d.Token, nil, http.StatusNotFound)
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE user_id = $1 AND event_type = 'account_unlinked' AND resource_id = $2`, d.ID, discord); n != 1 {
			t.Fatal("no account_unlinked event")
		}
		// The last remaining account cannot be unlinked (even when not flagged primary).
		execSQL(t, e, `UPDATE users SET primary_platform_account_id = NULL WHERE id = $1`, d.ID)
		execSQL(t, e, `UPDATE platform_accounts SET is_primary = FALSE WHERE user_id = $1`, d.ID)
		r = e.Call(t, "DELETE", base+"/"+github, d.Token, nil, http.StatusBadRequest).JSON()
		if msg, _ := r["message"].(string); msg == "" {
			t.Fatal("no message")
		}

		// The email account cannot be unlinked; another user's account id is not found.
		u := e.NewUser(t, apptest.UserSpec{})
		extra := addAccount(t, e, u.ID, "twitch")
		list = e.Call(t, "GET", "/v1/users/"+u.ID+"/accounts", u.Token, nil, http.StatusOK).JSON()["data"].([]any)
		var emailAcct string
		for _, a := range list {
			if m := a.(map[string]any); m["platform_slug"] == "email" {
				emailAcct = m["id"].(string)
				if m["is_oauth"] != false || m["platform_id"] != users.PlatformID("email") || m["email"] != u.Email {
					t.Fatalf("email account = %v", m)
				}
			}
		}
		e.Call(t, "PUT", "/v1/users/"+u.ID+"/accounts/"+extra+"/primary", u.Token, nil, http.StatusOK)
		e.Call(t, "DELETE", "/v1/users/"+u.ID+"/accounts/"+emailAcct, u.Token, nil, http.StatusBadRequest)
		e.Call(t, "DELETE", "/v1/users/"+u.ID+"/accounts/"+github, u.Token, nil, http.StatusNotFound)
		admin := e.Admin(t)
		e.Call(t, "PUT", "/v1/users/"+u.ID+"/accounts/"+emailAcct+"/primary", admin.Token, nil, http.StatusOK)
		e.Call(t, "DELETE", "/v1/users/"+u.ID+"/accounts/"+extra, admin.Token, nil, http.StatusNoContent)
	})
}

func TestPlatforms(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		all := e.Call(t, "GET", "/v1/platforms", "", nil, http.StatusOK).JSON()["data"].([]any)
		if len(all) != len(users.DefaultPlatforms) {
			t.Fatalf("platforms = %d", len(all))
		}
		p := e.Call(t, "GET", "/v1/platforms/Discord", "", nil, http.StatusOK).JSON()["data"].(map[string]any)
		if p["slug"] != "discord" || p["is_oauth"] != true || p["enabled"] != true {
			t.Fatalf("platform = %v", p)
		}
		byID := e.Call(t, "GET", "/v1/platforms/"+users.PlatformID("email"), "", nil, http.StatusOK).JSON()["data"].(map[string]any)
		if byID["slug"] != "email" || byID["two_factor_supported"] != true {
			t.Fatalf("platform = %v", byID)
		}
		e.Call(t, "GET", "/v1/platforms/myspace", "", nil, http.StatusNotFound)

		u := e.NewUser(t, apptest.UserSpec{})
		admin := e.Admin(t)
		e.Call(t, "PATCH", "/v1/platforms/discord/enabled", "", map[string]any{"enabled": false}, http.StatusUnauthorized)
		e.Call(t, "PATCH", "/v1/platforms/discord/enabled", u.Token, map[string]any{"enabled": false}, http.StatusForbidden)
		e.Call(t, "PATCH", "/v1/platforms/discord/enabled", admin.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/platforms/discord/enabled", admin.Token, map[string]any{"enabled": "no"}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/platforms/myspace/enabled", admin.Token, map[string]any{"enabled": false}, http.StatusNotFound)
		d := e.Call(t, "PATCH", "/v1/platforms/discord/enabled", admin.Token, map[string]any{"enabled": false}, http.StatusOK).JSON()["data"].(map[string]any)
		if d["enabled"] != false || d["slug"] != "discord" || d["id"] != users.PlatformID("discord") {
			t.Fatalf("enabled = %v", d)
		}
		enabled := e.Call(t, "GET", "/v1/platforms/enabled", "", nil, http.StatusOK).JSON()["data"].([]any)
		if len(enabled) != len(users.DefaultPlatforms)-1 {
			t.Fatalf("enabled = %d", len(enabled))
		}
		for _, x := range enabled {
			if x.(map[string]any)["slug"] == "discord" {
				t.Fatal("disabled platform listed as enabled")
			}
		}

		s := "/v1/platforms/email/settings"
		e.Call(t, "PATCH", s, u.Token, map[string]any{}, http.StatusForbidden)
		r := e.Call(t, "PATCH", s, admin.Token, map[string]any{}, http.StatusOK).JSON()
		if r["message"] != "No changes requested" || r["success"] != true {
			t.Fatalf("settings = %v", r)
		}
		e.Call(t, "PATCH", "/v1/platforms/discord/settings", admin.Token, map[string]any{"two_factor_required": true}, http.StatusBadRequest)
		e.Call(t, "PATCH", s, admin.Token, map[string]any{"enabled": nil}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/platforms/myspace/settings", admin.Token, map[string]any{"enabled": true}, http.StatusNotFound)
		e.Call(t, "PATCH", "/v1/platforms/myspace/settings", admin.Token, map[string]any{}, http.StatusNotFound)
		r = e.Call(t, "PATCH", s, admin.Token, map[string]any{"two_factor_required": true, "registration_enabled": false, "enabled": true}, http.StatusOK).JSON()
		pl := r["platform"].(map[string]any)
		if pl["two_factor_required"] != true || pl["registration_enabled"] != false || pl["enabled"] != true || pl["slug"] != "email" {
			t.Fatalf("settings = %v", r)
		}
		// enabled did not change, so two events here plus one for disabling discord.
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'platform_updated' AND user_id = $1`, admin.ID); n != 3 {
			t.Fatalf("platform_updated events = %d", n)
		}
		p = e.Call(t, "GET", "/v1/platforms/email", "", nil, http.StatusOK).JSON()["data"].(map[string]any)
		if p["two_factor_required"] != true || p["registration_enabled"] != false {
			t.Fatalf("not stored: %v", p)
		}
	})
}
