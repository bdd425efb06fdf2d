package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"hmid/internal/access"
	"hmid/internal/apptest"
	"hmid/internal/chat"
	"hmid/internal/db"
	"hmid/internal/realtime"
)

// fakeBot is a chat-platform bot on the real-time channel, written with the
// WebSocket client: it says hello and answers requests with answer.
type fakeBot struct {
	c        *wsClient
	mu       sync.Mutex
	answer   func(topic string, payload json.RawMessage) any // nil result: stay silent
	requests []realtime.Message
}

func startBot(t *testing.T, e *apptest.Env, key string, answer func(string, json.RawMessage) any) *fakeBot {
	t.Helper()
	b := &fakeBot{c: mustDial(t, e, key), answer: answer}
	b.c.send(realtime.Message{Type: "hello", ID: "h", Payload: json.RawMessage(`{"role":"bot"}`)})
	if m := b.c.read(); m.Type != "ack" || m.ID != "h" {
		t.Fatalf("bot hello: %+v %s", m, m.Payload)
	}
	go func() {
		for {
			_, data, err := b.c.ws.Read(context.Background())
			if err != nil {
				return
			}
			var m realtime.Message
			if json.Unmarshal(data, &m) != nil || m.Type != "request" {
				continue
			}
			b.mu.Lock()
			b.requests = append(b.requests, m)
			f := b.answer
			b.mu.Unlock()
			if f == nil {
				continue
			}
			ans := f(m.Topic, m.Payload)
			if ans == nil {
				continue
			}
			p, _ := json.Marshal(ans)
			out, _ := json.Marshal(realtime.Message{Type: "response", ID: m.ID, Payload: p})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = b.c.ws.Write(ctx, websocket.MessageText, out)
			cancel()
		}
	}()
	return b
}

func (b *fakeBot) setAnswer(f func(string, json.RawMessage) any) {
	b.mu.Lock()
	b.answer = f
	b.mu.Unlock()
}

func (b *fakeBot) last() realtime.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests[len(b.requests)-1]
}

func ptr[T any](v T) *T { return &v }

var timeoutUntil = apptest.Start.Add(time.Hour)

func sampleMembers() []chat.BotMember {
	return []chat.BotMember{
		{UserID: "300000000000000001", Username: "alice", Discriminator: "0", GlobalName: ptr("Alice A"), Nickname: ptr("Ally"),
			Avatar: ptr("abc"), Roles: []string{"500000000000000001"}, JoinedAt: ptr(apptest.Start.Add(-time.Hour))},
		{UserID: "300000000000000002", Username: "bob", Discriminator: "1234", GlobalName: ptr("Bobby"),
			Roles: []string{"500000000000000002"}, CommunicationDisabledUntil: &timeoutUntil},
		{UserID: "300000000000000003", Username: "helper", Discriminator: "0", Bot: true, Avatar: ptr("a_anim"), Roles: []string{}},
	}
}

func sampleGuild() chat.BotGuild {
	ms := sampleMembers()
	return chat.BotGuild{
		GuildID: "100000000000000001", Name: "Harbour", Icon: ptr("a_icon"), OwnerID: ptr("300000000000000001"),
		MemberCount: 3, BoostCount: 2, PremiumTier: 1, BotJoinedAt: ptr(apptest.Start.Add(-24 * time.Hour)),
		Channels: []chat.BotChannel{
			{ChannelID: "200000000000000001", Name: "general", Type: 0, Position: 1, Topic: ptr("Hello")},
			{ChannelID: "200000000000000002", Name: "voice", Type: 2, Position: 2},
			{ChannelID: "200000000000000003", Name: "cat", Type: 4, Position: 0},
			{ChannelID: "200000000000000004", Name: "forum", Type: 15, Position: 3, ParentID: ptr("200000000000000003")},
			{ChannelID: "200000000000000005", Name: "odd", Type: 99, Position: 4},
		},
		Roles: []chat.BotRole{
			{RoleID: "500000000000000001", Name: "Captain", Color: 0xff0000, Position: 2, Permissions: "8"},
			{RoleID: "500000000000000002", Name: "Crew", Position: 1},
		},
		Members: &ms,
	}
}

func goodAnswer(topic string, payload json.RawMessage) any {
	switch topic {
	case chat.TopicSync:
		return map[string]any{"success": true, "error": nil, "guilds": []chat.BotGuild{sampleGuild()}}
	case chat.TopicMembersSync:
		ms := sampleMembers()[:2]
		return map[string]any{"success": true, "members": ms}
	}
	return nil
}

// TestBotPermissionsMatchCatalogue: the full set that makes a key a bot is
// exactly the catalogue's chatplatform permissions, so neither can drift.
func TestBotPermissionsMatchCatalogue(t *testing.T) {
	var cat []string
	for _, p := range access.Catalogue {
		if p.Resource == "chatplatform" {
			cat = append(cat, p.Resource+":"+p.Action)
		}
	}
	slices.Sort(cat)
	bot := slices.Sorted(slices.Values(realtime.BotPermissions))
	if !slices.Equal(cat, bot) {
		t.Fatalf("catalogue %v, bot permissions %v", cat, bot)
	}
}

func TestChatPlatform(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		u := e.NewUser(t, apptest.UserSpec{})
		reader, _ := e.NewAPIKey(t, "", "chatplatform:read")
		const gid = "100000000000000001"

		// Access rules.
		e.Call(t, "GET", "/v1/chatplatform/guilds", "", nil, http.StatusUnauthorized)
		e.Call(t, "GET", "/v1/chatplatform/guilds", u.Token, nil, http.StatusForbidden)
		e.Call(t, "POST", "/v1/chatplatform/sync", reader, nil, http.StatusForbidden)
		e.Call(t, "PUT", "/v1/chatplatform/settings", reader, map[string]any{"auto_sync_enabled": false}, http.StatusForbidden)
		e.Call(t, "POST", "/v1/chatplatform/guilds/"+gid+"/members/sync", reader, nil, http.StatusForbidden)

		// No bot: 503 at once.
		e.Call(t, "POST", "/v1/chatplatform/sync", sys, nil, http.StatusServiceUnavailable)
		if d := e.Call(t, "GET", "/v1/chatplatform/guilds", reader, nil, http.StatusOK).JSON()["data"].([]any); len(d) != 0 {
			t.Fatalf("guilds before sync: %v", d)
		}

		// A user session cannot be the bot.
		uc := mustDial(t, e, u.Token)
		uc.send(realtime.Message{Type: "hello", ID: "h", Payload: json.RawMessage(`{"role":"bot"}`)})
		if k := errKind(t, uc.read()); k != "Forbidden" {
			t.Fatalf("user as bot: %s", k)
		}
		if k := errKind(t, uc.call("response", "x", "")); k != "Forbidden" {
			t.Fatalf("user response: %s", k)
		}

		// An API key holding chatplatform:* may be the bot; one with chatplatform:sync only may not.
		botKey, _ := e.NewAPIKey(t, "", "chatplatform:*")
		kb := startBot(t, e, botKey, nil)
		_ = kb.c.ws.Close(websocket.StatusNormalClosure, "")
		// So may a key holding all five chatplatform permissions, as scopes or through a role.
		fiveKey, _ := e.NewAPIKey(t, "", realtime.BotPermissions...)
		fb := startBot(t, e, fiveKey, nil)
		_ = fb.c.ws.Close(websocket.StatusNormalClosure, "")
		botRole := roleWith(t, e, realtime.BotPermissions...)
		botOwner := e.NewUser(t, apptest.UserSpec{Roles: []string{"role_user", botRole}})
		roleKey, roleKeyID := e.NewAPIKey(t, botOwner.ID)
		execSQL(t, e, `INSERT INTO api_key_roles (api_key_id, role_id, created_at) VALUES ($1, $2, $3)`, roleKeyID, botRole, db.TS(e.Clock.Now()))
		rb := startBot(t, e, roleKey, nil)
		_ = rb.c.ws.Close(websocket.StatusNormalClosure, "")
		fourKey, _ := e.NewAPIKey(t, "", realtime.BotPermissions[:4]...)
		fc := mustDial(t, e, fourKey)
		fc.send(realtime.Message{Type: "hello", ID: "h", Payload: json.RawMessage(`{"role":"bot"}`)})
		if k := errKind(t, fc.read()); k != "Forbidden" {
			t.Fatalf("key with four chatplatform permissions as bot: %s", k)
		}
		syncKey, _ := e.NewAPIKey(t, "", "chatplatform:sync")
		sc := mustDial(t, e, syncKey)
		sc.send(realtime.Message{Type: "hello", ID: "h", Payload: json.RawMessage(`{"role":"bot"}`)})
		if k := errKind(t, sc.read()); k != "Forbidden" {
			t.Fatalf("sync key as bot: %s", k)
		}
		waitFor(t, "first bot gone", func() bool { return !e.Server.Hub.BotConnected() })

		bot := startBot(t, e, sys, goodAnswer)
		e.Call(t, "POST", "/v1/chatplatform/sync", sys, `{"guild_id": 12}`, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/chatplatform/sync", sys, map[string]any{"guild_id": "abc"}, http.StatusBadRequest)
		res := e.Call(t, "POST", "/v1/chatplatform/sync", sys, nil, http.StatusOK).JSON()
		if res["success"] != true || res["error"] != nil || res["guilds_synced"] != 1.0 || res["channels_synced"] != 5.0 || res["roles_synced"] != 2.0 {
			t.Fatalf("sync: %v", res)
		}
		if m := bot.last(); m.Topic != chat.TopicSync || string(m.Payload) != "{}" {
			t.Fatalf("bot request %+v %s", m, m.Payload)
		}

		var list struct{ Data []chat.Guild }
		e.Call(t, "GET", "/v1/chatplatform/guilds", reader, nil, http.StatusOK).Decode(t, &list)
		if len(list.Data) != 1 {
			t.Fatalf("guilds %+v", list)
		}
		g := list.Data[0]
		if g.GuildID != gid || g.IconURL == nil || *g.IconURL != "https://cdn.discordapp.com/icons/"+gid+"/a_icon.gif" ||
			g.PremiumTier != 1 || g.BoostCount != 2 || g.LastSyncedAt == nil || !g.LastSyncedAt.Equal(apptest.Start) {
			t.Fatalf("guild %+v icon %v", g, g.IconURL)
		}
		var one chat.Guild
		e.Call(t, "GET", "/v1/chatplatform/guilds/"+gid, reader, nil, http.StatusOK).Decode(t, &one)
		if one.ID != g.ID {
			t.Fatalf("guild by snowflake %+v", one)
		}
		e.Call(t, "GET", "/v1/chatplatform/guilds/999", reader, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/chatplatform/guilds/abc", reader, nil, http.StatusBadRequest)

		var chs struct{ Data []chat.Channel }
		e.Call(t, "GET", "/v1/chatplatform/guilds/"+gid+"/channels", reader, nil, http.StatusOK).Decode(t, &chs)
		types := map[string]chat.Channel{}
		for _, c := range chs.Data {
			types[c.Name] = c
		}
		if len(chs.Data) != 5 || chs.Data[0].Name != "cat" || types["general"].ChannelType != "Text" || !types["general"].IsTextBased ||
			types["voice"].ChannelType != "Voice" || !types["voice"].IsVoice || types["forum"].ChannelType != "Forum" || types["forum"].IsTextBased ||
			types["odd"].ChannelType != "Unknown" || types["cat"].ChannelType != "Category" || types["general"].GuildID != gid ||
			types["forum"].ParentID == nil || types["general"].Topic == nil {
			t.Fatalf("channels %+v", chs.Data)
		}
		full := e.Call(t, "GET", "/v1/chatplatform/guilds/"+gid+"/full", reader, nil, http.StatusOK).JSON()
		if full["guild"].(map[string]any)["id"] != g.ID || len(full["channels"].([]any)) != 5 {
			t.Fatalf("full %v", full)
		}
		e.Call(t, "GET", "/v1/chatplatform/guilds/999/full", reader, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/chatplatform/guilds/999/channels", reader, nil, http.StatusNotFound)

		// Members.
		mpath := "/v1/chatplatform/guilds/" + g.ID + "/members"
		var ml struct {
			Members    []chat.Member
			TotalCount int  `json:"total_count"`
			HasMore    bool `json:"has_more"`
		}
		e.Call(t, "GET", mpath, reader, nil, http.StatusOK).Decode(t, &ml)
		if ml.TotalCount != 3 || len(ml.Members) != 3 || ml.HasMore {
			t.Fatalf("members %+v", ml)
		}
		byName := map[string]chat.Member{}
		for _, m := range ml.Members {
			byName[m.Username] = m
		}
		al, bo, he := byName["alice"], byName["bob"], byName["helper"]
		if al.DisplayName != "Ally" || al.FormattedUsername != "@alice" || al.AvatarURL != "https://cdn.discordapp.com/avatars/300000000000000001/abc.png" ||
			al.IsTimedOut || al.GuildID != g.ID || al.JoinedAt == nil {
			t.Fatalf("alice %+v", al)
		}
		if bo.DisplayName != "Bobby" || bo.FormattedUsername != "bob#1234" || !bo.IsTimedOut || bo.AvatarURL != "https://cdn.discordapp.com/embed/avatars/4.png" {
			t.Fatalf("bob %+v", bo)
		}
		if he.DisplayName != "helper" || !he.Bot || !strings.HasSuffix(he.AvatarURL, "/a_anim.gif") {
			t.Fatalf("helper %+v", he)
		}
		count := func(q string) int {
			var r struct {
				TotalCount int `json:"total_count"`
			}
			e.Call(t, "GET", mpath+q, reader, nil, http.StatusOK).Decode(t, &r)
			return r.TotalCount
		}
		for q, want := range map[string]int{"?search=ALL": 1, "?search=bobby": 1, "?search=e": 2, "?search=%25": 0, "?bot_only=true": 1,
			"?humans_only=true": 2, "?has_role=500000000000000002": 1, "?has_role=500000000000000009": 0} {
			if n := count(q); n != want {
				t.Fatalf("members%s: %d, want %d", q, n, want)
			}
		}
		e.Call(t, "GET", mpath+"?limit=2&offset=0", reader, nil, http.StatusOK).Decode(t, &ml)
		if len(ml.Members) != 2 || !ml.HasMore || ml.Members[0].Username != "alice" {
			t.Fatalf("page 1 %+v", ml)
		}
		e.Call(t, "GET", mpath+"?limit=2&offset=2", reader, nil, http.StatusOK).Decode(t, &ml)
		if len(ml.Members) != 1 || ml.HasMore {
			t.Fatalf("page 2 %+v", ml)
		}
		e.Call(t, "GET", mpath+"?limit=500", reader, nil, http.StatusOK)
		e.Call(t, "GET", mpath+"?bot_only=true&humans_only=true", reader, nil, http.StatusBadRequest)
		e.Call(t, "GET", mpath+"?bot_only=maybe", reader, nil, http.StatusBadRequest)
		// Unparsable limit and offset fall back to the defaults, as on every other list.
		e.Call(t, "GET", mpath+"?limit=abc&offset=x", reader, nil, http.StatusOK).Decode(t, &ml)
		if len(ml.Members) != 3 || ml.HasMore {
			t.Fatalf("members with limit=abc %+v", ml)
		}
		e.Call(t, "GET", mpath+"?has_role=x%25", reader, nil, http.StatusBadRequest)
		e.Call(t, "GET", "/v1/chatplatform/guilds/"+gid+"/members", reader, nil, http.StatusNotFound) // snowflake is not the internal id

		var m chat.Member
		e.Call(t, "GET", mpath+"/300000000000000002", reader, nil, http.StatusOK).Decode(t, &m)
		if m.Username != "bob" || !m.IsTimedOut {
			t.Fatalf("member %+v", m)
		}
		e.Clock.Advance(2 * time.Hour) // the timeout has passed
		e.Call(t, "GET", mpath+"/300000000000000002", reader, nil, http.StatusOK).Decode(t, &m)
		if m.IsTimedOut {
			t.Fatal("timeout should have ended")
		}
		e.Call(t, "GET", mpath+"/300000000000000099", reader, nil, http.StatusNotFound)
		e.Call(t, "GET", mpath+"/bob", reader, nil, http.StatusBadRequest)

		// Member sync replaces the stored members.
		ms := e.Call(t, "POST", "/v1/chatplatform/guilds/"+gid+"/members/sync", sys, nil, http.StatusOK).JSON()
		if ms["success"] != true || ms["members_synced"] != 2.0 || ms["error"] != nil {
			t.Fatalf("member sync %v", ms)
		}
		if mm := bot.last(); mm.Topic != chat.TopicMembersSync || !strings.Contains(string(mm.Payload), gid) {
			t.Fatalf("member sync request %+v", mm)
		}
		if n := count(""); n != 2 {
			t.Fatalf("members after sync: %d", n)
		}
		// A success without a members field is a failed sync: nothing is deleted.
		bot.setAnswer(func(string, json.RawMessage) any { return map[string]any{"success": true} })
		e.Call(t, "POST", "/v1/chatplatform/guilds/"+gid+"/members/sync", sys, nil, http.StatusServiceUnavailable)
		bot.setAnswer(func(string, json.RawMessage) any { return map[string]any{"success": true, "members": nil} })
		e.Call(t, "POST", "/v1/chatplatform/guilds/"+gid+"/members/sync", sys, nil, http.StatusServiceUnavailable)
		if n := count(""); n != 2 {
			t.Fatalf("members after a sync without members: %d, want 2", n)
		}
		bot.setAnswer(goodAnswer)
		e.Call(t, "POST", "/v1/chatplatform/guilds/999/members/sync", sys, nil, http.StatusNotFound)
		e.Call(t, "POST", "/v1/chatplatform/guilds/x/members/sync", sys, nil, http.StatusBadRequest)

		// A bot that reports a failure.
		bot.setAnswer(func(string, json.RawMessage) any {
			return map[string]any{"success": false, "error": "Missing Access"}
		})
		res = e.Call(t, "POST", "/v1/chatplatform/sync", sys, map[string]any{"guild_id": gid}, http.StatusOK).JSON()
		if res["success"] != false || res["error"] != "Missing Access" || res["guilds_synced"] != 0.0 {
			t.Fatalf("failed sync %v", res)
		}
		if !strings.Contains(string(bot.last().Payload), gid) {
			t.Fatalf("sync request payload %s", bot.last().Payload)
		}
		// A bot that says nothing: the request times out.
		bot.setAnswer(nil)
		e.Server.Chat.SyncTimeout = 50 * time.Millisecond
		e.Server.Chat.MemberSyncTimeout = 50 * time.Millisecond
		e.Call(t, "POST", "/v1/chatplatform/sync", sys, nil, http.StatusServiceUnavailable)
		e.Call(t, "POST", "/v1/chatplatform/guilds/"+gid+"/members/sync", sys, nil, http.StatusServiceUnavailable)
		// A bot that answers nonsense.
		bot.setAnswer(func(string, json.RawMessage) any { return []int{1} })
		e.Call(t, "POST", "/v1/chatplatform/sync", sys, nil, http.StatusServiceUnavailable)
		_ = bot.c.ws.Close(websocket.StatusNormalClosure, "")
		waitFor(t, "bot gone", func() bool { return !e.Server.Hub.BotConnected() })
		e.Call(t, "POST", "/v1/chatplatform/sync", sys, nil, http.StatusServiceUnavailable)

		// Bot settings.
		var st chat.BotSettings
		e.Call(t, "GET", "/v1/chatplatform/settings", reader, nil, http.StatusOK).Decode(t, &st)
		if !st.AutoSyncEnabled || st.DefaultLanguage != "en" || st.SyncIntervalSeconds != 3600 || st.ID == "" {
			t.Fatalf("default settings %+v", st)
		}
		admin := e.Admin(t)
		e.Call(t, "PUT", "/v1/chatplatform/settings", admin.Token, map[string]any{"auto_sync_enabled": false, "default_language": "de", "command_cooldown_seconds": 10}, http.StatusOK)
		e.Call(t, "GET", "/v1/chatplatform/settings", reader, nil, http.StatusOK).Decode(t, &st)
		if st.AutoSyncEnabled || st.DefaultLanguage != "de" || st.CommandCooldownSeconds != 10 || !st.NotifyOnGuildJoin {
			t.Fatalf("changed settings %+v", st)
		}
		for _, bad := range []any{map[string]any{}, map[string]any{"id": "x"}, map[string]any{"updated_at": "x", "auto_sync_enabled": true},
			map[string]any{"sync_interval_seconds": 5}, map[string]any{"default_language": "not a tag"}, map[string]any{"auto_sync_enabled": "yes"}, "[1"} {
			e.Call(t, "PUT", "/v1/chatplatform/settings", sys, bad, http.StatusBadRequest)
		}
		var audits int
		if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM audit_events WHERE event_type = 'bot_guild_configured' AND user_id = $1`, admin.ID).Scan(&audits); err != nil || audits != 1 {
			t.Fatalf("audit events %d %v", audits, err)
		}

		// Guild settings.
		gs := "/v1/chatplatform/guilds/" + gid + "/settings"
		if r := e.Call(t, "GET", gs, reader, nil, http.StatusOK).JSON(); r["guild_id"] != gid || r["default_language"] != nil {
			t.Fatalf("guild settings %v", r)
		}
		e.Call(t, "PUT", gs, sys, map[string]any{"default_language": "pt-BR"}, http.StatusOK)
		if r := e.Call(t, "GET", gs, reader, nil, http.StatusOK).JSON(); r["default_language"] != "pt-BR" {
			t.Fatalf("guild settings %v", r)
		}
		e.Call(t, "PUT", gs, sys, map[string]any{"default_language": nil}, http.StatusOK)
		if r := e.Call(t, "GET", gs, reader, nil, http.StatusOK).JSON(); r["default_language"] != nil {
			t.Fatalf("guild settings %v", r)
		}
		e.Call(t, "PUT", gs, sys, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PUT", gs, sys, map[string]any{"default_language": "!!"}, http.StatusBadRequest)
		e.Call(t, "PUT", gs, sys, map[string]any{"default_language": 5}, http.StatusBadRequest)
		e.Call(t, "PUT", "/v1/chatplatform/guilds/999/settings", sys, map[string]any{"default_language": "en"}, http.StatusNotFound)
		e.Call(t, "GET", "/v1/chatplatform/guilds/999/settings", reader, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/chatplatform/guilds/x/settings", reader, nil, http.StatusBadRequest)
		e.Call(t, "PUT", gs, reader, map[string]any{"default_language": "en"}, http.StatusForbidden)

		// Delete by internal id.
		e.Call(t, "DELETE", "/v1/chatplatform/guilds/"+g.ID, reader, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/chatplatform/guilds/"+gid, sys, nil, http.StatusNotFound)
		e.Call(t, "DELETE", "/v1/chatplatform/guilds/"+g.ID, sys, nil, http.StatusNoContent)
		e.Call(t, "DELETE", "/v1/chatplatform/guilds/"+g.ID, sys, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/chatplatform/guilds/"+gid, reader, nil, http.StatusNotFound)
		e.Call(t, "GET", mpath, reader, nil, http.StatusNotFound)
	})
}

// TestChatBotAcrossInstances: a sync request on instance B reaches the bot
// connected to instance A, and its answer comes back to B.
func TestChatBotAcrossInstances(t *testing.T) {
	a, b := apptest.NewRedisPair(t)
	b.Call(t, "POST", "/v1/chatplatform/sync", a.SystemKey, nil, http.StatusServiceUnavailable)
	bot := startBot(t, a, a.SystemKey, goodAnswer)
	res := b.Call(t, "POST", "/v1/chatplatform/sync", a.SystemKey, nil, http.StatusOK).JSON()
	if res["success"] != true || res["guilds_synced"] != 1.0 {
		t.Fatalf("cross-instance sync %v", res)
	}
	if bot.last().Topic != chat.TopicSync {
		t.Fatalf("bot request %+v", bot.last())
	}
	ms := b.Call(t, "POST", "/v1/chatplatform/guilds/100000000000000001/members/sync", a.SystemKey, nil, http.StatusOK).JSON()
	if ms["members_synced"] != 2.0 {
		t.Fatalf("cross-instance member sync %v", ms)
	}
	_ = bot.c.ws.Close(websocket.StatusNormalClosure, "")
	waitFor(t, "bot gone everywhere", func() bool {
		return b.Do(t, apptest.Req{Method: "POST", Path: "/v1/chatplatform/sync", Token: a.SystemKey}).Status == http.StatusServiceUnavailable
	})
}
