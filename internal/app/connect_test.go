package app_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"hmid/internal/apptest"
)

// A ban through the REST API revokes the user's OAuth tokens, not only their sessions.
func TestBanRevokesOAuthTokens(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		owner := e.NewUser(t, apptest.UserSpec{})
		u := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, owner.Token, map[string]any{"is_first_party": false})
		tok := tokens(t, e, u.Token, c, authzParams(c.ID))
		at := tok["access_token"].(string)
		e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusOK)
		e.Call(t, "POST", "/v1/users/"+u.ID+"/ban", e.Admin(t).Token, map[string]any{"reason": "abuse", "duration_seconds": 3600}, http.StatusCreated)
		e.Call(t, "GET", "/v1/oauth/userinfo", at, nil, http.StatusUnauthorized)
		var revoked int
		if err := e.Server.DB.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM oauth_tokens WHERE user_id = $1 AND revoked_at IS NULL`, u.ID).Scan(&revoked); err != nil || revoked != 0 {
			t.Fatalf("live tokens after ban = %d, %v", revoked, err)
		}
	})
}

// The export lists the user's connected and owned apps and their two-factor state.
func TestExportIncludesAppsAndTwoFactor(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, u.Token, map[string]any{"name": "My Own App"})
		tokens(t, e, u.Token, c, authzParams(c.ID))
		r := e.Call(t, "GET", "/v1/user/export", u.Token, nil, http.StatusOK)
		raw := openZip(t, r.Body)["data.json"]
		var d struct {
			ConnectedApps []struct{ Name string } `json:"connectedApps"`
			OwnedApps     []struct{ Name string } `json:"ownedApps"`
			TwoFactorAuth struct{ Enabled bool }  `json:"twoFactorAuth"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		if len(d.ConnectedApps) != 1 || d.ConnectedApps[0].Name != "My Own App" || len(d.OwnedApps) != 1 {
			t.Fatalf("apps = %+v", d)
		}
	})
}

// Without explicit coordinates the nearest station is found from the latest GPS point.
func TestPegelNearestFromLatestGPSPoint(t *testing.T) {
	up := pegelUpstream(t, new(atomicBool), new(atomicInt))
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key, _ := e.NewAPIKey(t, "", "pegel:read", "gps:write")
		e.Call(t, "GET", "/v1/pegel/nearest", key, nil, http.StatusNotFound)
		e.Call(t, "POST", "/v1/gps", key, map[string]any{"latitude": 50.94, "longitude": 6.96, "altitude": 50, "heading": 0,
			"timestamp": e.Clock.Now().Add(-time.Minute).Unix(), "speed_kmh": 0, "speed_mps": 0, "speed_mph": 0, "speed_knots": 0}, http.StatusCreated)
		n := e.Call(t, "GET", "/v1/pegel/nearest", key, nil, http.StatusOK).JSON()
		if n["shortname"] != "KÖLN" {
			t.Fatalf("nearest = %v", n)
		}
	}, pegelURL(up))
}
