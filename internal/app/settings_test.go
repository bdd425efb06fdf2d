package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
	"hmid/internal/policy"
)

func TestSettings(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		plain := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "GET", "/v1/settings", plain.Token, nil, http.StatusForbidden)
		e.Call(t, "POST", "/v1/settings", plain.Token, map[string]any{"key": "a", "value": 1}, http.StatusForbidden)
		e.Call(t, "POST", "/v1/settings", admin.Token, map[string]any{"key": "bad key", "value": 1}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/settings", admin.Token, map[string]any{"key": "a"}, http.StatusBadRequest)
		r := e.Call(t, "POST", "/v1/settings", admin.Token, map[string]any{"key": "site.title", "value": map[string]any{"en": "Fleet"}, "description": "Title", "is_public": true}, http.StatusCreated)
		if v := r.JSON()["data"].(map[string]any)["value"].(map[string]any); v["en"] != "Fleet" {
			t.Fatalf("value = %v", v)
		}
		e.Call(t, "POST", "/v1/settings", admin.Token, map[string]any{"key": "site.title", "value": 1}, http.StatusConflict)
		e.Call(t, "POST", "/v1/settings", admin.Token, map[string]any{"key": "secret.thing", "value": nil}, http.StatusCreated)
		pub := e.Call(t, "GET", "/v1/settings/public", "", nil, http.StatusOK).JSON()["data"].([]any)
		if len(pub) != 1 || pub[0].(map[string]any)["key"] != "site.title" {
			t.Fatalf("public = %v", pub)
		}
		all := e.Call(t, "GET", "/v1/settings", admin.Token, nil, http.StatusOK).JSON()["data"].([]any)
		if len(all) != 2 {
			t.Fatalf("all = %v", all)
		}
		e.Call(t, "GET", "/v1/settings/site.title", admin.Token, nil, http.StatusOK)
		e.Call(t, "GET", "/v1/settings/nope", admin.Token, nil, http.StatusNotFound)
		e.Call(t, "PUT", "/v1/settings/site.title", admin.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PUT", "/v1/settings/nope", admin.Token, map[string]any{"value": 2}, http.StatusNotFound)
		u := e.Call(t, "PUT", "/v1/settings/site.title", admin.Token, map[string]any{"value": "Fleet 2", "is_public": false}, http.StatusOK).JSON()["data"].(map[string]any)
		if u["value"] != "Fleet 2" || u["is_public"] != false || u["description"] != "Title" {
			t.Fatalf("updated = %v", u)
		}
		if n := len(e.Call(t, "GET", "/v1/settings/public", "", nil, http.StatusOK).JSON()["data"].([]any)); n != 0 {
			t.Fatalf("public after unpublish = %d", n)
		}
		e.Call(t, "DELETE", "/v1/settings/site.title", plain.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/settings/site.title", admin.Token, nil, http.StatusNoContent)
		e.Call(t, "DELETE", "/v1/settings/site.title", admin.Token, nil, http.StatusNotFound)
	})
}

func TestSystemConfig(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		list := e.Call(t, "GET", "/v1/system-config", admin.Token, nil, http.StatusOK).Array()
		if len(list) < 3 {
			t.Fatalf("config = %v", list)
		}
		em := e.Call(t, "GET", "/v1/system-config?prefix=email.", admin.Token, nil, http.StatusOK).Array()
		if len(em) != 1 || em[0].(map[string]any)["key"] != "email.supported_locales" {
			t.Fatalf("prefix filter = %v", em)
		}
		// A prefix with LIKE wildcards matches literally.
		if n := len(e.Call(t, "GET", "/v1/system-config?prefix=%25", admin.Token, nil, http.StatusOK).Array()); n != 0 {
			t.Fatalf("%% prefix matched %d", n)
		}
		loc := e.Call(t, "GET", "/v1/system-config/email.supported_locales", admin.Token, nil, http.StatusOK).JSON()
		if v := loc["value"].([]any); len(v) != 2 || v[0] != "en" || v[1] != "de" {
			t.Fatalf("locales = %v", loc)
		}
		e.Call(t, "GET", "/v1/system-config/nope", admin.Token, nil, http.StatusNotFound)
		e.Call(t, "PATCH", "/v1/system-config/nope", admin.Token, map[string]any{"value": 1}, http.StatusNotFound)
		e.Call(t, "PATCH", "/v1/system-config/email.supported_locales", admin.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/system-config/email.supported_locales", admin.Token, map[string]any{"value": "en"}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/system-config/email.supported_locales", admin.Token, map[string]any{"value": []string{}}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/system-config/email.supported_locales", e.NewUser(t, apptest.UserSpec{}).Token, map[string]any{"value": []string{"en"}}, http.StatusForbidden)
		up := e.Call(t, "PATCH", "/v1/system-config/email.supported_locales", admin.Token, map[string]any{"value": []string{"en", "de", "fr"}}, http.StatusOK).JSON()
		if len(up["value"].([]any)) != 3 {
			t.Fatalf("updated = %v", up)
		}
		locales, err := e.Server.Settings.SupportedLocales(t.Context())
		if err != nil || len(locales) != 3 {
			t.Fatalf("SupportedLocales = %v, %v", locales, err)
		}
	})
}

// pegelUpstream serves PEGELONLINE REST API v2 JSON for three stations.
const pegelJSON = `[
 {"uuid":"a6ee8177-107b-47dd-bcfd-30960ccc6e9c","number":"501010","shortname":"MAXAU","longname":"MAXAU","km":362.3,"agency":"KARLSRUHE","longitude":8.304,"latitude":49.039,"water":{"shortname":"RHEIN","longname":"RHEIN"},
  "timeseries":[{"shortname":"Q","longname":"ABFLUSS","unit":"m3/s","currentMeasurement":{"timestamp":"2026-11-22T12:00:00+01:00","value":1200.0,"trend":1}},
                {"shortname":"W","longname":"WASSERSTAND ROHDATEN","unit":"cm","equidistance":15,"currentMeasurement":{"timestamp":"2026-11-22T12:00:00+01:00","value":455.0,"trend":-1,"stateMnwMhw":"normal","stateNswHsw":"normal"},"gaugeZero":{"unit":"m. ü. NHN","value":97.76,"validFrom":"2019-11-01"}}]},
 {"uuid":"593647aa-9fea-43ec-a7d6-6476a76ae868","number":"2730010","shortname":"KÖLN","longname":"KÖLN","km":688.0,"agency":"DUISBURG","longitude":6.963,"latitude":50.937,"water":{"shortname":"RHEIN","longname":"RHEIN"},
  "timeseries":[{"shortname":"W","longname":"WASSERSTAND ROHDATEN","unit":"cm","currentMeasurement":{"timestamp":"2026-11-22T12:00:00+01:00","value":310.0,"trend":0}}]},
 {"uuid":"70272185-b2b3-4178-96b8-43bea330dcae","number":"33400","shortname":"HANN.-MÜNDEN","longname":"HANN.-MÜNDEN","km":0.0,"agency":"HANN. MÜNDEN","longitude":9.642,"latitude":51.421,"water":{"shortname":"WESER","longname":"WESER"},"timeseries":[]}
]`

type (
	atomicBool = atomic.Bool
	atomicInt  = atomic.Int64
)

func pegelURL(up *httptest.Server) apptest.Option {
	return func(c *config.Config) { c.PegelURL = up.URL }
}

func pegelUpstream(t *testing.T, fail *atomic.Bool, calls *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/stations.json" || r.URL.Query().Get("includeCurrentMeasurement") != "true" || r.URL.Query().Get("includeTimeseries") != "true" {
			http.NotFound(w, r)
			return
		}
		if fail.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(pegelJSON))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestPegel(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	var calls atomic.Int64
	up := pegelUpstream(t, &fail, &calls)
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		calls.Store(0)
		fail.Store(false)
		reader, _ := e.NewAPIKey(t, "", "pegel:read")
		e.Call(t, "GET", "/v1/pegel/stations", e.NewUser(t, apptest.UserSpec{}).Token, nil, http.StatusForbidden)
		st := e.Call(t, "GET", "/v1/pegel/stations", reader, nil, http.StatusOK).Array()
		if len(st) != 3 {
			t.Fatalf("stations = %d", len(st))
		}
		rhein := e.Call(t, "GET", "/v1/pegel/stations?water=rhein", reader, nil, http.StatusOK).Array()
		if len(rhein) != 2 {
			t.Fatalf("rhein = %v", rhein)
		}
		// A water with no station is an empty list, not null.
		if b := strings.TrimSpace(string(e.Call(t, "GET", "/v1/pegel/stations?water=NOPE", reader, nil, http.StatusOK).Body)); b != "[]" {
			t.Fatalf("stations of an unknown water = %s, want []", b)
		}
		for _, s := range rhein {
			m := s.(map[string]any)
			if m["shortname"] == "MAXAU" && (m["level_cm"] != 455.0 || m["trend"] != -1.0) {
				t.Fatalf("MAXAU level = %v", m)
			}
		}
		// Karlsruhe is about 8 km from Maxau.
		n := e.Call(t, "GET", "/v1/pegel/nearest?latitude=49.0069&longitude=8.4037", reader, nil, http.StatusOK).JSON()
		if n["shortname"] != "MAXAU" || n["distance_km"].(float64) < 7 || n["distance_km"].(float64) > 9 {
			t.Fatalf("nearest = %v", n)
		}
		e.Call(t, "GET", "/v1/pegel/nearest?latitude=49.0069&longitude=8.4037&water=WESER", reader, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/pegel/nearest?latitude=49.0069&longitude=8.4037&water=WESER&radius=400", reader, nil, http.StatusOK)
		e.Call(t, "GET", "/v1/pegel/nearest?latitude=91&longitude=8", reader, nil, http.StatusBadRequest)
		e.Call(t, "GET", "/v1/pegel/nearest?latitude=49&longitude=8&radius=-1", reader, nil, http.StatusBadRequest)
		e.Call(t, "GET", "/v1/pegel/nearest?latitude=49", reader, nil, http.StatusBadRequest)
		if c := calls.Load(); c != 1 {
			t.Fatalf("upstream calls = %d, want 1 (cached)", c)
		}
		// Upstream down: the stale cache is served after the TTL.
		fail.Store(true)
		e.Clock.Advance(6 * time.Minute)
		e.Call(t, "GET", "/v1/pegel/stations", reader, nil, http.StatusOK)
		if c := calls.Load(); c != 2 {
			t.Fatalf("upstream calls = %d, want 2", c)
		}
	}, func(c *config.Config) { c.PegelURL = up.URL })
}

func TestPegelUnavailable(t *testing.T) {
	t.Parallel()
	var fail atomic.Bool
	var calls atomic.Int64
	fail.Store(true)
	up := pegelUpstream(t, &fail, &calls)
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		reader, _ := e.NewAPIKey(t, "", "pegel:read")
		r := e.Call(t, "GET", "/v1/pegel/stations", reader, nil, http.StatusServiceUnavailable)
		if r.JSON()["error"] != "ServiceUnavailable" {
			t.Fatalf("body = %s", r.Body)
		}
	}, func(c *config.Config) { c.PegelURL = up.URL })
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		reader, _ := e.NewAPIKey(t, "", "pegel:read")
		e.Call(t, "GET", "/v1/pegel/stations", reader, nil, http.StatusServiceUnavailable)
		e.Call(t, "GET", "/v1/pegel/nearest", reader, nil, http.StatusServiceUnavailable)
	})
}

func TestPublicStats(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		key, _ := e.NewAPIKey(t, "", "trips:write", "gps:write", "devices:write")
		e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "POST", "/v1/trips", key, map[string]any{"name": "t1"}, http.StatusCreated)
		e.Call(t, "POST", "/v1/gps", key, map[string]any{"latitude": 1, "longitude": 2, "altitude": 0, "heading": 0,
			"timestamp": e.Clock.Now().Unix(), "speed_kmh": 0, "speed_mps": 0, "speed_mph": 0, "speed_knots": 0}, http.StatusCreated)
		st := e.Call(t, "GET", "/v1/stats/public", "", nil, http.StatusOK).JSON()["data"].(map[string]any)
		trips := st["trips"].(map[string]any)
		if st["users"].(map[string]any)["total"].(float64) != 1 || trips["total"].(float64) != 1 ||
			trips["by_status"].(map[string]any)["draft"].(float64) != 1 || st["gps_points"].(map[string]any)["total"].(float64) != 1 {
			t.Fatalf("stats = %v", st)
		}
		// Cached: a new trip is not counted until the cache expires.
		e.Call(t, "POST", "/v1/trips", key, map[string]any{"name": "t2"}, http.StatusCreated)
		st = e.Call(t, "GET", "/v1/stats/public", "", nil, http.StatusOK).JSON()["data"].(map[string]any)
		if st["trips"].(map[string]any)["total"].(float64) != 1 {
			t.Fatalf("stats not cached: %v", st["trips"])
		}
		e.Clock.Advance(2 * time.Minute)
		st = e.Call(t, "GET", "/v1/stats/public", "", nil, http.StatusOK).JSON()["data"].(map[string]any)
		if st["trips"].(map[string]any)["total"].(float64) != 2 {
			t.Fatalf("stats after expiry: %v", st["trips"])
		}
	})
}

// setPolicy changes a policy through PATCH /v1/system-config/{key}.
func setPolicy(t *testing.T, e *apptest.Env, tok, key string, value any) {
	t.Helper()
	e.Call(t, "PATCH", "/v1/system-config/"+key, tok, map[string]any{"value": value}, http.StatusOK)
}

// TestPolicyEntries: the policies are typed system-config entries with the
// spec's values as defaults; a value out of range or of the wrong type is a
// 400 naming the bounds and changes nothing; a change is audited and in
// force at once.
func TestPolicyEntries(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		want := map[string]any{
			policy.KeySessionAbsolute: float64(2592000), policy.KeySessionIdle: float64(0),
			policy.KeyAccessToken: float64(3600), policy.KeyRefreshToken: float64(2592000),
			policy.KeyPasswordMinLength: float64(8), policy.KeyRefuseCommon: true,
			policy.KeyLoginPerAccount: float64(5), policy.KeyLoginWindow: float64(900),
		}
		for key, v := range want {
			got := e.Call(t, "GET", "/v1/system-config/"+key, admin.Token, nil, http.StatusOK).JSON()
			if got["value"] != v || got["description"] == "" {
				t.Errorf("%s = %v, want %v", key, got, v)
			}
		}
		if n := len(e.Call(t, "GET", "/v1/system-config?prefix=login.", admin.Token, nil, http.StatusOK).Array()); n != 6 {
			t.Fatalf("login.* entries = %d, want 6", n)
		}
		bad := []struct {
			key   string
			value any
			msg   string
		}{
			{policy.KeySessionAbsolute, 10, "from 300 to 31536000"},
			{policy.KeySessionIdle, 30, "or 0 for off"},
			{policy.KeyAccessToken, 86401, "from 60 to 86400"},
			{policy.KeyAccessToken, 90.5, "whole number"},
			{policy.KeyRefreshToken, "3600", "must be a number"},
			{policy.KeyPasswordMinLength, 4, "from 8 to 64"},
			{policy.KeyRefuseCommon, 0, "must be a boolean"},
			{policy.KeyLoginPerIP, 0, "from 1 to 10000"},
		}
		for _, b := range bad {
			r := e.Call(t, "PATCH", "/v1/system-config/"+b.key, admin.Token, map[string]any{"value": b.value}, http.StatusBadRequest)
			if m := r.JSON(); m["error"] != "ValidationError" || !strings.Contains(m["message"].(string), b.msg) {
				t.Errorf("%s = %v: %s, want a message with %q", b.key, b.value, r.Body, b.msg)
			}
		}
		if got := e.Server.Policy.Current(); *got != policy.Default {
			t.Fatalf("refused values changed the policy: %+v", got)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'system_config_updated'`); n != 0 {
			t.Fatalf("refused values were audited: %d", n)
		}

		up := e.Call(t, "PATCH", "/v1/system-config/"+policy.KeyAccessToken, admin.Token, map[string]any{"value": 600}, http.StatusOK).JSON()
		if up["value"] != float64(600) {
			t.Fatalf("updated = %v", up)
		}
		if got := e.Server.Policy.Current().AccessTokenTTL; got != 10*time.Minute {
			t.Fatalf("access token lifetime in force = %v, want 10m", got)
		}
		var meta, source, user string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT metadata, source_service, user_id FROM audit_events
			WHERE event_type = 'system_config_updated' AND resource_id = $1`, policy.KeyAccessToken).Scan(&meta, &source, &user); err != nil {
			t.Fatalf("audit event: %v", err)
		}
		if !strings.Contains(meta, `"old_value":3600`) || !strings.Contains(meta, `"new_value":600`) || source != "api" || user != admin.ID {
			t.Fatalf("audit event = %s %s %s", meta, source, user)
		}
	})
}

// TestPolicyTokenLifetimes: the server-wide lifetimes and a client's own
// apply to tokens issued after a change; null restores the server's.
func TestPolicyTokenLifetimes(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		u := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, e.SystemKey, map[string]any{"name": "Lifetimes"})
		first := tokens(t, e, u.Token, c, authzParams(c.ID))
		if first["expires_in"] != float64(3600) {
			t.Fatalf("default expires_in = %v", first["expires_in"])
		}
		setPolicy(t, e, admin.Token, policy.KeyAccessToken, 300)
		setPolicy(t, e, admin.Token, policy.KeyRefreshToken, 7200)
		tr := tokens(t, e, u.Token, c, authzParams(c.ID))
		if tr["expires_in"] != float64(300) {
			t.Fatalf("expires_in after the change = %v, want 300", tr["expires_in"])
		}
		// The refresh token expires with the new lifetime: after two hours it is refused.
		e.Clock.Advance(2*time.Hour + time.Second)
		oauthErr(t, refreshReq(t, e, c, tr["refresh_token"].(string)), http.StatusBadRequest, "invalid_grant")

		// Per client: bounds, then its own lifetime, then null for the server's.
		path := "/v1/oauth/clients/" + c.ID
		for _, v := range []any{59, 86401} {
			r := e.Call(t, "PATCH", path, e.SystemKey, map[string]any{"access_token_lifetime_seconds": v}, http.StatusBadRequest)
			if !strings.Contains(r.JSON()["message"].(string), "access_token_lifetime_seconds must be a whole number of seconds from 60 to 86400") {
				t.Fatalf("%v: %s", v, r.Body)
			}
		}
		for _, v := range []any{"600", 12.5} { // not a whole number: the body does not decode
			e.Call(t, "PATCH", path, e.SystemKey, map[string]any{"access_token_lifetime_seconds": v}, http.StatusBadRequest)
		}
		r := e.Call(t, "PATCH", path, e.SystemKey, map[string]any{"refresh_token_lifetime_seconds": 60}, http.StatusBadRequest)
		if !strings.Contains(r.JSON()["message"].(string), "refresh_token_lifetime_seconds must be") {
			t.Fatalf("refresh 60: %s", r.Body)
		}
		got := e.Call(t, "GET", path, e.SystemKey, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if got["access_token_lifetime_seconds"] != nil || got["refresh_token_lifetime_seconds"] != nil {
			t.Fatalf("refused lifetimes were stored: %v", got)
		}
		got = e.Call(t, "PATCH", path, e.SystemKey, map[string]any{"access_token_lifetime_seconds": 120, "refresh_token_lifetime_seconds": 86400}, http.StatusOK).JSON()["data"].(map[string]any)
		if got["access_token_lifetime_seconds"] != float64(120) || got["refresh_token_lifetime_seconds"] != float64(86400) {
			t.Fatalf("client = %v", got)
		}
		tr = tokens(t, e, u.Token, c, authzParams(c.ID))
		if tr["expires_in"] != float64(120) {
			t.Fatalf("client's own expires_in = %v, want 120", tr["expires_in"])
		}
		// Rotation issues with the client's lifetimes too.
		e.Clock.Advance(3 * time.Hour) // past the server's refresh lifetime, within the client's
		r = refreshReq(t, e, c, tr["refresh_token"].(string))
		if r.Status != http.StatusOK || r.JSON()["expires_in"] != float64(120) {
			t.Fatalf("refresh with the client's lifetime: %d %s", r.Status, r.Body)
		}
		e.Call(t, "PATCH", path, e.SystemKey, map[string]any{"access_token_lifetime_seconds": nil}, http.StatusOK)
		if tr = tokens(t, e, u.Token, c, authzParams(c.ID)); tr["expires_in"] != float64(300) {
			t.Fatalf("expires_in after null = %v, want the server's 300", tr["expires_in"])
		}
		created := mkClient(t, e, e.SystemKey, map[string]any{"name": "Short", "access_token_lifetime_seconds": 900})
		if got := e.Call(t, "GET", "/v1/oauth/clients/"+created.ID, e.SystemKey, nil, http.StatusOK).JSON()["data"].(map[string]any); got["access_token_lifetime_seconds"] != float64(900) {
			t.Fatalf("created with a lifetime: %v", got)
		}
	})
}

// TestPolicySessions: a sign-in after a change gets the new absolute
// lifetime; an idle timeout ends sessions left unused that long, counted
// from the change for sessions idle before it, and use keeps a session alive.
func TestPolicySessions(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		setPolicy(t, e, admin.Token, policy.KeySessionAbsolute, 3600)
		e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": "abs@example.com", "password": "correct horse battery"}, http.StatusCreated)
		login := e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": "abs@example.com", "password": "correct horse battery"}, http.StatusOK).JSON()
		exp, err := time.Parse(time.RFC3339Nano, login["expires_at"].(string))
		if d := exp.Sub(e.Clock.Now()); err != nil || d < time.Hour-time.Second || d > time.Hour {
			t.Fatalf("expires_at = %v, want an hour from now (%v)", login["expires_at"], e.Clock.Now())
		}

		idleBefore := e.NewUser(t, apptest.UserSpec{}) // its session was last used now
		e.Clock.Advance(2 * time.Hour)                 // idle for two hours before the timeout exists
		active := e.NewUser(t, apptest.UserSpec{})
		e.Call(t, "GET", "/v1/users/me", active.Token, nil, http.StatusOK)
		setPolicy(t, e, admin.Token, policy.KeySessionIdle, 600)
		// Idle before the change does not count: the session still works.
		e.Call(t, "GET", "/v1/users/me", idleBefore.Token, nil, http.StatusOK)
		for i := 0; i < 3; i++ { // used every five minutes: alive
			e.Clock.Advance(5 * time.Minute)
			e.Call(t, "GET", "/v1/users/me", active.Token, nil, http.StatusOK)
		}
		e.Clock.Advance(11 * time.Minute)
		e.Call(t, "GET", "/v1/users/me", active.Token, nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/users/me", admin.Token, nil, http.StatusUnauthorized) // the admin was idle too
		if n := count(t, e, `SELECT COUNT(*) FROM sessions WHERE user_id = $1 AND revoked_at IS NULL`, active.ID); n != 1 {
			t.Fatalf("an idle session is not revoked, only refused: %d", n)
		}
		// The system key turns the timeout off again; the sessions work again
		// (they were refused, not ended) and a new sign-in works throughout.
		e.Call(t, "PATCH", "/v1/system-config/"+policy.KeySessionIdle, e.SystemKey, map[string]any{"value": 0}, http.StatusOK)
		e.Call(t, "GET", "/v1/users/me", active.Token, nil, http.StatusOK)
	})
}

// TestPolicyPasswords: the minimum length and the common-password list
// apply to registration, password change and reset; a refusal changes
// nothing.
func TestPolicyPasswords(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		reg := func(email, pw string, want int) *apptest.Resp {
			t.Helper()
			return e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": email, "password": pw}, want)
		}
		for _, pw := range []string{"12345678", "Password1", "iloveyou", "qwertyuiop"} {
			r := reg("common@example.com", pw, http.StatusBadRequest)
			if !strings.Contains(r.JSON()["message"].(string), "most common passwords") {
				t.Fatalf("%q: %s", pw, r.Body)
			}
		}
		if n := count(t, e, `SELECT COUNT(*) FROM users WHERE email = 'common@example.com'`); n != 0 {
			t.Fatalf("a refused registration created a user")
		}
		setPolicy(t, e, admin.Token, policy.KeyPasswordMinLength, 12)
		reg("short@example.com", "horse staple", http.StatusCreated) // 12 characters
		r := reg("short2@example.com", "horse stapl", http.StatusBadRequest)
		if !strings.Contains(r.JSON()["message"].(string), "at least 12 characters") {
			t.Fatalf("min length 12: %s", r.Body)
		}
		setPolicy(t, e, admin.Token, policy.KeyRefuseCommon, false)
		setPolicy(t, e, admin.Token, policy.KeyPasswordMinLength, 8)
		reg("common@example.com", "12345678", http.StatusCreated)
		setPolicy(t, e, admin.Token, policy.KeyRefuseCommon, true)

		// Password change refuses a common new password with 400 at new_password.
		login := e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": "short@example.com", "password": "horse staple"}, http.StatusOK).JSON()
		tok := login["session_token"].(string)
		ch := e.Call(t, "POST", "/v1/users/me/password", tok, map[string]any{"current_password": "horse staple", "new_password": "Trustno1"}, http.StatusBadRequest)
		if msg := ch.JSON()["message"].(string); !strings.Contains(msg, "new_password") || !strings.Contains(msg, "most common") {
			t.Fatalf("change to a common password: %s", ch.Body)
		}
		e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": "short@example.com", "password": "horse staple"}, http.StatusOK)
	})
}

// TestPolicyLoginThrottle: the throttle's numbers are the login.* policies.
func TestPolicyLoginThrottle(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		admin := e.Admin(t)
		setPolicy(t, e, admin.Token, policy.KeyLoginPerAccount, 2)
		e.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": "thr@example.com", "password": "correct horse battery"}, http.StatusCreated)
		for i := 0; i < 2; i++ {
			e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": "thr@example.com", "password": "wrong password"}, http.StatusUnauthorized)
		}
		e.Call(t, "POST", "/v1/auth/login", "", map[string]any{"email": "thr@example.com", "password": "correct horse battery"}, http.StatusTooManyRequests)
	})
}

// TestPolicyAcrossInstances: a change made on one instance is in force on
// the other after its next tick, with Redis (a version counter) and without
// (PostgreSQL alone: the rows are read again).
func TestPolicyAcrossInstances(t *testing.T) {
	t.Parallel()
	for _, redis := range []string{dbtest.RedisURL(), ""} {
		name := "postgres"
		if redis != "" {
			name = "postgres+redis"
		}
		t.Run(name, func(t *testing.T) {
			a, b := apptest.NewPair(t, redis)
			ctx := context.Background()
			if err := b.Server.Policy.Tick(ctx); err != nil { // settle the version b has seen
				t.Fatal(err)
			}
			a.Call(t, "PATCH", "/v1/system-config/"+policy.KeyPasswordMinLength, a.SystemKey, map[string]any{"value": 30}, http.StatusOK)
			if got := a.Server.Policy.Current().Password.MinLength; got != 30 {
				t.Fatalf("instance a: %d", got)
			}
			if err := b.Server.Policy.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			if got := b.Server.Policy.Current().Password.MinLength; got != 30 {
				t.Fatalf("instance b after its tick: %d, want 30", got)
			}
			r := b.Call(t, "POST", "/v1/auth/register", "", map[string]any{"email": "x@example.com", "password": "correct horse battery"}, http.StatusBadRequest)
			if !strings.Contains(r.JSON()["message"].(string), "at least 30") {
				t.Fatalf("instance b: %s", r.Body)
			}
		})
	}
}

// TestPolicyGraphQLClientLifetimes: createOauthClient takes the lifetimes
// and the client shows them; out of range is refused, creating nothing.
func TestPolicyGraphQLClientLifetimes(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		owner := e.NewUser(t, apptest.UserSpec{})
		const q = `mutation($in: CreateOAuthClientInput!) {
  createOauthClient(input: $in) { client { id accessTokenLifetimeSeconds refreshTokenLifetimeSeconds } }
}`
		in := map[string]any{"name": "Timed", "redirectUris": []string{cb}, "allowedScopes": []string{"openid"},
			"accessTokenLifetimeSeconds": 900, "refreshTokenLifetimeSeconds": 86400}
		c := gqlData(t, e, owner.Token, q, map[string]any{"in": in})["createOauthClient"].(map[string]any)["client"].(map[string]any)
		if c["accessTokenLifetimeSeconds"] != float64(900) || c["refreshTokenLifetimeSeconds"] != float64(86400) {
			t.Fatalf("client = %v", c)
		}
		rest := e.Call(t, "GET", "/v1/oauth/clients/"+c["id"].(string), owner.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if rest["access_token_lifetime_seconds"] != float64(900) {
			t.Fatalf("REST view = %v", rest)
		}
		plain := gqlData(t, e, owner.Token, q, map[string]any{"in": map[string]any{"name": "Plain", "redirectUris": []string{cb}, "allowedScopes": []string{"openid"}}})
		if pc := plain["createOauthClient"].(map[string]any)["client"].(map[string]any); pc["accessTokenLifetimeSeconds"] != nil {
			t.Fatalf("a client without lifetimes = %v", pc)
		}
		in["accessTokenLifetimeSeconds"] = 30
		if code := gqlCode(t, e, owner.Token, q, map[string]any{"in": in}); code != "BAD_USER_INPUT" {
			t.Fatalf("out of range: %s", code)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM oauth_clients WHERE owner_id = $1`, owner.ID); n != 2 {
			t.Fatalf("clients = %d, want 2", n)
		}
	})
}

// TestPolicyConsoleForm: /admin/config shows the policies with their
// bounds; a value out of range comes back at its field with 400 and nothing
// changes; a good one is saved and audited from the backend.
func TestPolicyConsoleForm(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		op := operator(t, e, "settings:read", "settings:write")
		b := signedInBrowser(t, e, op)
		p := b.get("/admin/config")
		for _, want := range []string{`id="policy-h"`, `id="pol-session.idle_timeout_seconds"`, `min="0" max="31536000"`, "0 (off) or 300 to 31536000", `type="checkbox" id="pol-password.refuse_common" name="value" value="true"`} {
			if !strings.Contains(p.body, want) {
				t.Fatalf("config page lacks %s", want)
			}
		}
		action := "/admin/config/system/" + policy.KeyPasswordMinLength
		q := b.post(t, p.body, action, url.Values{"value": {"4"}})
		if q.status != http.StatusBadRequest || !strings.Contains(q.body, `id="pol-password.min_length-error"`) || !strings.Contains(q.body, "from 8 to 64") {
			t.Fatalf("out of range: %d %s", q.status, q.body)
		}
		if got := e.Server.Policy.Current().Password.MinLength; got != 8 {
			t.Fatalf("min length after a refusal = %d", got)
		}
		if q = b.post(t, p.body, action, url.Values{"value": {"10"}}); q.status != http.StatusSeeOther {
			t.Fatalf("save: %d %s", q.status, q.body)
		}
		if got := e.Server.Policy.Current().Password.MinLength; got != 10 {
			t.Fatalf("min length = %d, want 10", got)
		}
		if n := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'system_config_updated' AND source_service = 'backend' AND user_id = $1`, op.ID); n != 1 {
			t.Fatalf("audited from the backend: %d", n)
		}
	})
}
