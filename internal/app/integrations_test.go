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
	t.Parallel()
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
		done := e.URL + "/done"
		e.Call(t, "POST", base+"/platform/myspace/connect", u.Token, map[string]any{"redirect_uri": done}, http.StatusNotFound)
		e.Call(t, "POST", connect, u.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "POST", connect, u.Token, map[string]any{"redirect_uri": "javascript:alert(1)"}, http.StatusBadRequest)
		e.Call(t, "POST", connect, u.Token, map[string]any{"redirect_uri": done, "scopes": []string{"everything"}}, http.StatusBadRequest)
		e.Call(t, "POST", connect, e.SystemKey, map[string]any{"redirect_uri": done}, http.StatusForbidden)
		// A redirect_uri with user information is refused (it would hide the
		// real host from a reader of the URL).
		e.Call(t, "POST", connect, u.Token, map[string]any{"redirect_uri": "http://user@" + strings.TrimPrefix(e.URL, "http://") + "/done"}, http.StatusBadRequest)
		start := func(tok string) (authURL *url.URL, state, cookie string) {
			t.Helper()
			res := e.Call(t, "POST", connect, tok, map[string]any{"redirect_uri": done + "?from=settings", "scopes": []string{"chat:read"}}, http.StatusOK)
			r := res.JSON()
			u, err := url.Parse(r["authorization_url"].(string))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range (&http.Response{Header: res.Header}).Cookies() {
				if c.Name == integrations.StateCookie {
					if !c.HttpOnly || c.Path != "/v1/integrations/callback/streamplatform" || c.SameSite != http.SameSiteLaxMode || c.MaxAge != 600 {
						t.Fatalf("state cookie %+v", c)
					}
					cookie = c.Name + "=" + c.Value
				}
			}
			if cookie == "" {
				t.Fatalf("connect set no state cookie: %v", res.Header)
			}
			return u, r["state"].(string), cookie
		}
		au, state, cookie := start(u.Token)
		q := au.Query()
		if au.Host != strings.TrimPrefix(fake.URL, "http://") || au.Path != "/oauth2/authorize" || q.Get("client_id") != "cid" ||
			q.Get("response_type") != "code" || q.Get("state") != state || q.Get("redirect_uri") != e.URL+"/v1/integrations/callback/streamplatform" ||
			q.Get("scope") != "moderator:read:followers chat:read" {
			t.Fatalf("authorization_url %s", au)
		}
		callbackWith := func(cookie, code, st string) *apptest.Resp {
			return e.Do(t, apptest.Req{Method: "GET", Path: "/v1/integrations/callback/streamplatform?" + url.Values{"code": {code}, "state": {st}}.Encode(),
				Header: map[string]string{"Cookie": cookie}})
		}
		callback := func(code, st string) *apptest.Resp { return callbackWith(cookie, code, st) }
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
		if "http://"+loc.Host != e.URL || loc.Path != "/done" || loc.Query().Get("from") != "settings" || id == "" {
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
		_, st1, c1 := start(u.Token)
		e.Clock.Advance(11 * time.Minute)
		if r := callbackWith(c1, "good-code", st1); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "expired") {
			t.Fatalf("expired state: %d %s", r.Status, r.Body)
		}
		_, st2, c2 := start(u.Token)
		r = e.Do(t, apptest.Req{Method: "GET", Path: "/v1/integrations/callback/streamplatform?error=access_denied&state=" + url.QueryEscape(st2),
			Header: map[string]string{"Cookie": c2}})
		if loc, _ := url.Parse(r.Header.Get("Location")); r.Status != http.StatusFound || loc.Query().Get("error") != "access_denied" {
			t.Fatalf("refused: %d %s", r.Status, r.Header.Get("Location"))
		}
		_, st3, c3 := start(u.Token)
		if r := callbackWith(c3, "bad-code", st3); r.Status != http.StatusBadRequest {
			t.Fatalf("bad code: %d", r.Status)
		}
		_, st4, c4 := start(u.Token)
		if r := callbackWith(c4, "", st4); r.Status != http.StatusBadRequest {
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
		e.Call(t, "POST", connect, u.Token, map[string]any{"redirect_uri": done}, http.StatusServiceUnavailable)
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

// TestIntegrationStateBinding: the connect state belongs to the user who
// started the connection and to their browser. Completed in another user's
// browser (or one signed in to nobody) it is 400 and links nothing, also
// with error=; it is not used up by such an attempt; the browser is sent
// only to the redirect_uri registered at the start.
func TestIntegrationStateBinding(t *testing.T) {
	t.Parallel()
	fake := newFakeStreamPlatform(t)
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		a := e.NewUser(t, apptest.UserSpec{})
		b := e.NewUser(t, apptest.UserSpec{})
		const connect = "/v1/integrations/platform/streamplatform/connect"
		registered := e.URL + "/account/integrations"
		start := func(tok, redirect string) (state, cookie string) {
			t.Helper()
			res := e.Call(t, "POST", connect, tok, map[string]any{"redirect_uri": redirect}, http.StatusOK)
			for _, c := range (&http.Response{Header: res.Header}).Cookies() {
				if c.Name == integrations.StateCookie {
					cookie = c.Name + "=" + c.Value
				}
			}
			return res.JSON()["state"].(string), cookie
		}
		callback := func(q url.Values, cookies ...string) *apptest.Resp {
			t.Helper()
			return e.Do(t, apptest.Req{Method: "GET", Path: "/v1/integrations/callback/streamplatform?" + q.Encode(),
				Header: map[string]string{"Cookie": strings.Join(cookies, "; ")}})
		}
		linked := func() int {
			t.Helper()
			var n int
			if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM integrations`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		refused := func(what string, r *apptest.Resp) {
			t.Helper()
			if r.Status != http.StatusBadRequest || r.Header.Get("Location") != "" || linked() != 0 {
				t.Fatalf("%s: %d Location %q, %d linked: %s", what, r.Status, r.Header.Get("Location"), linked(), r.Body)
			}
		}
		session := func(u apptest.User) string { return "hmid_session=" + u.Token }

		stA, cookieA := start(a.Token, registered)
		stA2, cookieA2 := start(a.Token, registered)
		good := url.Values{"code": {"good-code"}, "state": {stA}}
		// A's state completed in B's browser (the victim, signed in as B,
		// sent to A's authorization URL): nothing linked to A's account.
		refused("B's session", callback(good, session(b)))
		// … in a browser signed in to nobody, with a bad session, or with
		// the state cookie of A's other connection.
		refused("no cookies", callback(good))
		refused("bad session", callback(good, "hmid_session=hm_st_nothing"))
		refused("other state cookie", callback(good, cookieA2))
		refused("A's API key as session", callback(good, "hmid_session="+func() string { k, _ := e.NewAPIKey(t, a.ID); return k }()))
		// The refusal with error= redirects nowhere: no open redirect.
		refused("error= in B's browser", callback(url.Values{"error": {"access_denied"}, "state": {stA}}, session(b)))
		refused("error= unknown state", callback(url.Values{"error": {"x"}, "state": {"eyJyIjoiaHR0cHM6Ly9ldmlsLmV4YW1wbGUifQ.AAAA"}}))
		refused("error= no state", callback(url.Values{"error": {"x"}}))

		// A's own browser completes it, with A's session (the state was not
		// used up by the refusals) and is sent to the registered URI.
		r := callback(good, session(a))
		loc, _ := url.Parse(r.Header.Get("Location"))
		if r.Status != http.StatusFound || loc.Scheme+"://"+loc.Host+loc.Path != registered || loc.Query().Get("integration_id") == "" || linked() != 1 {
			t.Fatalf("A's callback: %d %s", r.Status, r.Header.Get("Location"))
		}
		var owner string
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT user_id FROM integrations`).Scan(&owner); err != nil || owner != a.ID {
			t.Fatalf("linked to %q (%v), want %s", owner, err, a.ID)
		}
		if c := (&http.Response{Header: r.Header}).Cookies(); len(c) == 0 || c[0].Name != integrations.StateCookie || c[0].MaxAge >= 0 {
			t.Fatalf("state cookie not cleared: %v", r.Header)
		}
		// With A's state cookie (the console's scripts, not signed in by
		// cookie), the error= answer goes to the registered URI only.
		r = callback(url.Values{"error": {"access_denied"}, "state": {stA2}}, cookieA2)
		loc, _ = url.Parse(r.Header.Get("Location"))
		if r.Status != http.StatusFound || loc.Scheme+"://"+loc.Host+loc.Path != registered || loc.Query().Get("error") != "access_denied" {
			t.Fatalf("error= with A's state cookie: %d %s", r.Status, r.Header.Get("Location"))
		}
		// Single use, also for the rightful browser.
		if r := callback(good, cookieA, session(a)); r.Status != http.StatusBadRequest {
			t.Fatalf("reused state: %d", r.Status)
		}

		// A front end elsewhere may register its own URI: the binding, not
		// the origin, keeps the redirect to its registrar.
		e.Call(t, "POST", connect, a.Token, map[string]any{"redirect_uri": "https://app.example/integrations?x=1"}, http.StatusOK)
		for _, bad := range []string{"https://app.example/#frag", "https://u:p@app.example/", "ftp://app.example/", "/relative"} {
			e.Call(t, "POST", connect, a.Token, map[string]any{"redirect_uri": bad}, http.StatusBadRequest)
		}
	}, func(c *config.Config) {
		c.StreamPlatform = config.ProviderConfig{ClientID: "cid", ClientSecret: "csecret", AuthURL: fake.URL + "/oauth2/authorize",
			TokenURL: fake.URL + "/oauth2/token", APIURL: fake.URL + "/helix"}
	})
}
