package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/integrations"
)

// fakeStreamPlatform speaks the Twitch OAuth token endpoint and the Helix
// endpoints hmid uses, with one user and rotating tokens.
type fakeStreamPlatform struct {
	*httptest.Server
	mu            sync.Mutex
	access        map[string]bool
	refresh       map[string]bool
	n             int
	lastCallback  string
	rejectRefresh bool
}

func newFakeStreamPlatform(t *testing.T) *fakeStreamPlatform {
	f := &fakeStreamPlatform{access: map[string]bool{}, refresh: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth2/token", f.token)
	mux.HandleFunc("GET /helix/users", f.helix(func(r *http.Request) any {
		return map[string]any{"data": []any{map[string]any{"id": "141981764", "login": "twitchdev", "display_name": "TwitchDev",
			"profile_image_url": "https://static-cdn.example/twitchdev.png", "type": "", "broadcaster_type": "partner"}}}
	}))
	mux.HandleFunc("GET /helix/channels/followers", f.helix(func(r *http.Request) any {
		if r.URL.Query().Get("broadcaster_id") != "141981764" {
			return nil
		}
		return map[string]any{"total": 8, "data": []any{}, "pagination": map[string]any{}}
	}))
	mux.HandleFunc("GET /helix/subscriptions", f.helix(func(r *http.Request) any {
		if r.URL.Query().Get("broadcaster_id") != "141981764" {
			return nil
		}
		return map[string]any{"total": 3, "points": 3, "data": []any{}}
	}))
	mux.HandleFunc("GET /helix/streams", f.helix(func(r *http.Request) any {
		if r.URL.Query().Get("user_id") != "141981764" {
			return nil
		}
		return map[string]any{"data": []any{map[string]any{"id": "1", "user_id": "141981764", "type": "live", "title": "Building hmid",
			"game_name": "Software and Game Development", "viewer_count": 42}}}
	}))
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

func (f *fakeStreamPlatform) token(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f.mu.Lock()
	defer f.mu.Unlock()
	bad := func(msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"status": 400, "message": msg})
	}
	if r.PostForm.Get("client_id") != "cid" || r.PostForm.Get("client_secret") != "csecret" {
		bad("invalid client")
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		if r.PostForm.Get("code") != "good-code" {
			bad("Invalid authorization code")
			return
		}
		f.lastCallback = r.PostForm.Get("redirect_uri")
	case "refresh_token":
		if f.rejectRefresh || !f.refresh[r.PostForm.Get("refresh_token")] {
			bad("Invalid refresh token")
			return
		}
		delete(f.refresh, r.PostForm.Get("refresh_token"))
	default:
		bad("unsupported grant")
		return
	}
	f.n++
	at, rt := "access-"+string(rune('a'+f.n)), "refresh-"+string(rune('a'+f.n))
	f.access[at], f.refresh[rt] = true, true
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": at, "refresh_token": rt, "expires_in": 14400,
		"scope": []string{"moderator:read:followers", "chat:read"}, "token_type": "bearer"})
}

func (f *fakeStreamPlatform) helix(body func(*http.Request) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		ok := r.Header.Get("Client-Id") == "cid" && f.access[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		f.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		b := body(r)
		if b == nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(b)
	}
}

func TestIntegrations(t *testing.T) {
	fake := newFakeStreamPlatform(t)
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		const base = "/v1/integrations"

		e.Call(t, "GET", base, "", nil, http.StatusUnauthorized)
		if a := e.Call(t, "GET", base, u.Token, nil, http.StatusOK).Array(); len(a) != 0 {
			t.Fatalf("integrations before connecting: %v", a)
		}
		if a := e.Call(t, "GET", base, e.SystemKey, nil, http.StatusOK).Array(); len(a) != 0 {
			t.Fatalf("system key list: %v", a)
		}
		pl := e.Call(t, "GET", base+"/platforms", u.Token, nil, http.StatusOK).JSON()["platforms"].([]any)[0].(map[string]any)
		if pl["slug"] != "streamplatform" || pl["enabled"] != true || len(pl["features"].([]any)) == 0 {
			t.Fatalf("platforms %v", pl)
		}
		sc := e.Call(t, "GET", base+"/platform/streamplatform/scopes", u.Token, nil, http.StatusOK).JSON()
		if sc["platform"] != "streamplatform" || len(sc["scopes"].([]any)) != len(integrations.Scopes) {
			t.Fatalf("scopes %v", sc)
		}
		e.Call(t, "GET", base+"/platform/myspace/scopes", u.Token, nil, http.StatusNotFound)
		e.Call(t, "GET", base+"/platform/myspace", u.Token, nil, http.StatusNotFound)

		// Connect.
		connect := base + "/platform/streamplatform/connect"
		e.Call(t, "POST", base+"/platform/myspace/connect", u.Token, map[string]any{"redirect_uri": "https://app.example/done"}, http.StatusNotFound)
		e.Call(t, "POST", connect, u.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "POST", connect, u.Token, map[string]any{"redirect_uri": "javascript:alert(1)"}, http.StatusBadRequest)
		e.Call(t, "POST", connect, u.Token, map[string]any{"redirect_uri": "https://app.example/done", "scopes": []string{"everything"}}, http.StatusBadRequest)
		e.Call(t, "POST", connect, e.SystemKey, map[string]any{"redirect_uri": "https://app.example/done"}, http.StatusForbidden)
		start := func(tok string) (authURL *url.URL, state string) {
			t.Helper()
			r := e.Call(t, "POST", connect, tok, map[string]any{"redirect_uri": "https://app.example/done?from=settings", "scopes": []string{"chat:read"}}, http.StatusOK).JSON()
			u, err := url.Parse(r["authorization_url"].(string))
			if err != nil {
				t.Fatal(err)
			}
			return u, r["state"].(string)
		}
		au, state := start(u.Token)
		q := au.Query()
		if au.Host != strings.TrimPrefix(fake.URL, "http://") || au.Path != "/oauth2/authorize" || q.Get("client_id") != "cid" ||
			q.Get("response_type") != "code" || q.Get("state") != state || q.Get("redirect_uri") != e.URL+"/v1/integrations/callback/streamplatform" ||
			q.Get("scope") != "moderator:read:followers chat:read" {
			t.Fatalf("authorization_url %s", au)
		}
		callback := func(code, st string) *apptest.Resp {
			return e.Do(t, apptest.Req{Method: "GET", Path: "/v1/integrations/callback/streamplatform?" + url.Values{"code": {code}, "state": {st}}.Encode()})
		}
		// Tampered, missing and foreign states.
		tampered := state[:len(state)-2] + "AA"
		if state[len(state)-2:] == "AA" {
			tampered = state[:len(state)-2] + "BB"
		}
		if r := callback("good-code", tampered); r.Status != http.StatusBadRequest {
			t.Fatalf("tampered state: %d", r.Status)
		}
		body, mac, _ := strings.Cut(state, ".")
		if r := callback("good-code", body[:len(body)-1]+"x."+mac); r.Status != http.StatusBadRequest {
			t.Fatalf("tampered body: %d", r.Status)
		}
		if r := callback("good-code", ""); r.Status != http.StatusBadRequest {
			t.Fatalf("no state: %d", r.Status)
		}
		if r := e.Do(t, apptest.Req{Method: "GET", Path: "/v1/integrations/callback/myspace?code=good-code&state=" + url.QueryEscape(state)}); r.Status != http.StatusNotFound {
			t.Fatalf("unknown platform callback: %d", r.Status)
		}
		// The real callback.
		r := callback("good-code", state)
		if r.Status != http.StatusFound {
			t.Fatalf("callback: %d %s", r.Status, r.Body)
		}
		loc, _ := url.Parse(r.Header.Get("Location"))
		id := loc.Query().Get("integration_id")
		if loc.Host != "app.example" || loc.Path != "/done" || loc.Query().Get("from") != "settings" || id == "" {
			t.Fatalf("redirect %s", loc)
		}
		if fake.lastCallback != e.URL+"/v1/integrations/callback/streamplatform" {
			t.Fatalf("redirect_uri at the token endpoint: %s", fake.lastCallback)
		}
		// The state is single-use.
		if r := callback("good-code", state); r.Status != http.StatusBadRequest {
			t.Fatalf("reused state: %d", r.Status)
		}

		list := e.Call(t, "GET", base, u.Token, nil, http.StatusOK)
		if strings.Contains(string(list.Body), "access-") || strings.Contains(string(list.Body), "refresh-") {
			t.Fatalf("tokens leaked: %s", list.Body)
		}
		var all []integrations.Integration
		list.Decode(t, &all)
		if len(all) != 1 {
			t.Fatalf("list %s", list.Body)
		}
		in := all[0]
		if in.ID != id || in.UserID != u.ID || in.PlatformSlug != "streamplatform" || in.PlatformUserID != "141981764" || in.Username != "twitchdev" ||
			in.DisplayName == nil || *in.DisplayName != "TwitchDev" || !in.IsActive || in.BotStatus != "active" || len(in.Scopes) != 2 ||
			!in.ConnectedAt.Equal(apptest.Start) || in.LastRefreshedAt != nil {
			t.Fatalf("integration %+v", in)
		}
		var sealed string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT access_token FROM integrations WHERE id = $1`, id).Scan(&sealed); err != nil ||
			strings.Contains(sealed, "access-") {
			t.Fatalf("stored token %q %v", sealed, err)
		}
		if a := e.Call(t, "GET", base+"/platform/streamplatform", u.Token, nil, http.StatusOK).Array(); len(a) != 1 {
			t.Fatalf("platform list %v", a)
		}
		e.Call(t, "GET", base+"/"+id, u.Token, nil, http.StatusOK)

		// Another user sees nothing of it.
		if a := e.Call(t, "GET", base, other.Token, nil, http.StatusOK).Array(); len(a) != 0 {
			t.Fatalf("other user list %v", a)
		}
		e.Call(t, "GET", base+"/"+id, other.Token, nil, http.StatusNotFound)
		e.Call(t, "POST", base+"/"+id+"/refresh", other.Token, nil, http.StatusNotFound)
		e.Call(t, "POST", base+"/"+id+"/stats", other.Token, nil, http.StatusNotFound)
		e.Call(t, "PATCH", base+"/"+id+"/streamplatform-status", other.Token, map[string]any{"bot_status": "paused"}, http.StatusNotFound)
		e.Call(t, "DELETE", base+"/"+id, other.Token, nil, http.StatusNotFound)
		e.Call(t, "GET", base+"/not-a-uuid", u.Token, nil, http.StatusNotFound)

		// Refresh and statistics.
		e.Clock.Advance(time.Hour)
		rf := e.Call(t, "POST", base+"/"+id+"/refresh", u.Token, nil, http.StatusOK).JSON()
		if rf["success"] != true || rf["expires_at"] != apptest.Start.Add(5*time.Hour).Format(time.RFC3339) || rf["message"] == "" {
			t.Fatalf("refresh %v", rf)
		}
		e.Call(t, "GET", base+"/"+id, u.Token, nil, http.StatusOK).Decode(t, &in)
		if in.LastRefreshedAt == nil || !in.LastRefreshedAt.Equal(apptest.Start.Add(time.Hour)) {
			t.Fatalf("last_refreshed_at %v", in.LastRefreshedAt)
		}
		st := e.Call(t, "POST", base+"/"+id+"/stats", u.Token, nil, http.StatusOK).JSON()
		stats := st["stats"].(map[string]any)
		if st["success"] != true || stats["followers"] != 8.0 || stats["subscribers"] != 3.0 || stats["is_live"] != true ||
			stats["current_viewers"] != 42.0 || stats["stream_title"] != "Building hmid" || stats["game_name"] != "Software and Game Development" {
			t.Fatalf("stats %v", st)
		}
		// An expired access token is refreshed before reading statistics.
		e.Clock.Advance(5 * time.Hour)
		e.Call(t, "POST", base+"/"+id+"/stats", u.Token, nil, http.StatusOK)

		// Bot status.
		sp := base + "/" + id + "/streamplatform-status"
		if r := e.Call(t, "PATCH", sp, u.Token, map[string]any{"bot_status": "paused"}, http.StatusOK).JSON(); r["bot_status"] != "paused" || r["success"] != true {
			t.Fatalf("status %v", r)
		}
		e.Call(t, "PATCH", sp, u.Token, map[string]any{"bot_status": "asleep"}, http.StatusBadRequest)
		e.Call(t, "PATCH", sp, u.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PATCH", sp, u.Token, map[string]any{"bot_status": 1}, http.StatusBadRequest)
		e.Call(t, "GET", base+"/"+id, u.Token, nil, http.StatusOK).Decode(t, &in)
		if in.BotStatus != "paused" {
			t.Fatalf("bot_status %s", in.BotStatus)
		}

		// Expired state, refused authorization, rejected code.
		_, st1 := start(u.Token)
		e.Clock.Advance(11 * time.Minute)
		if r := callback("good-code", st1); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "expired") {
			t.Fatalf("expired state: %d %s", r.Status, r.Body)
		}
		_, st2 := start(u.Token)
		r = e.Do(t, apptest.Req{Method: "GET", Path: "/v1/integrations/callback/streamplatform?error=access_denied&state=" + url.QueryEscape(st2)})
		if loc, _ := url.Parse(r.Header.Get("Location")); r.Status != http.StatusFound || loc.Query().Get("error") != "access_denied" {
			t.Fatalf("refused: %d %s", r.Status, r.Header.Get("Location"))
		}
		_, st3 := start(u.Token)
		if r := callback("bad-code", st3); r.Status != http.StatusBadRequest {
			t.Fatalf("bad code: %d", r.Status)
		}
		_, st4 := start(u.Token)
		if r := callback("", st4); r.Status != http.StatusBadRequest {
			t.Fatalf("no code: %d", r.Status)
		}

		// A refused refresh token deactivates the integration.
		fake.mu.Lock()
		fake.rejectRefresh = true
		fake.mu.Unlock()
		e.Call(t, "POST", base+"/"+id+"/refresh", u.Token, nil, http.StatusBadRequest)
		fake.mu.Lock()
		fake.rejectRefresh = false
		fake.mu.Unlock()
		e.Call(t, "GET", base+"/"+id, u.Token, nil, http.StatusOK).Decode(t, &in)
		if in.IsActive {
			t.Fatal("integration still active after a refused refresh")
		}
		e.Call(t, "POST", base+"/"+id+"/stats", u.Token, nil, http.StatusBadRequest)

		// Without configured client credentials the platform is disabled.
		saved := e.Server.Integrations.Provider
		e.Server.Integrations.Provider.ClientSecret = ""
		if p := e.Call(t, "GET", base+"/platforms", u.Token, nil, http.StatusOK).JSON()["platforms"].([]any)[0].(map[string]any); p["enabled"] != false {
			t.Fatalf("disabled platform %v", p)
		}
		e.Call(t, "POST", connect, u.Token, map[string]any{"redirect_uri": "https://app.example/done"}, http.StatusServiceUnavailable)
		e.Server.Integrations.Provider = saved

		// Disconnect.
		if r := e.Call(t, "DELETE", base+"/"+id, u.Token, nil, http.StatusOK).JSON(); r["success"] != true || r["message"] == "" {
			t.Fatalf("delete %v", r)
		}
		e.Call(t, "GET", base+"/"+id, u.Token, nil, http.StatusNotFound)
		e.Call(t, "DELETE", base+"/"+id, u.Token, nil, http.StatusNotFound)
	}, func(c *config.Config) {
		c.StreamPlatform = config.ProviderConfig{ClientID: "cid", ClientSecret: "csecret", AuthURL: fake.URL + "/oauth2/authorize",
			TokenURL: fake.URL + "/oauth2/token", APIURL: fake.URL + "/helix"}
	})
}
