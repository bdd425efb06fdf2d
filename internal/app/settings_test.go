package app_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/config"
)

func TestSettings(t *testing.T) {
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
