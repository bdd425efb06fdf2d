package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
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
	"hmid/internal/tracking"
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// chatAdmin is a user with a password (to sign in on the login page)
// holding exactly perms through a role of their own.
func chatAdmin(t *testing.T, e *apptest.Env, perms ...string) apptest.User {
	t.Helper()
	roles := []string{"role_user"}
	if len(perms) > 0 {
		roles = append(roles, roleWith(t, e, perms...))
	}
	return e.NewUser(t, apptest.UserSpec{Password: "correct horse battery", Roles: roles})
}

// pageShows fails unless p has status and every text in its body.
func pageShows(t *testing.T, what string, p page, status int, texts ...string) {
	t.Helper()
	if p.status != status {
		t.Fatalf("%s: status %d, want %d\n%s", what, p.status, status, p.body)
	}
	for _, s := range texts {
		if !strings.Contains(p.body, s) {
			t.Fatalf("%s: no %q in the page\n%s", what, s, p.body)
		}
	}
}

// auditSource counts the audit events of type by user, by source_service.
func auditSource(t *testing.T, e *apptest.Env, eventType, userID, source string) int {
	t.Helper()
	return count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = $1 AND user_id = $2 AND source_service = $3`, eventType, userID, source)
}

func TestAdminChat(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		const gid = "100000000000000001"
		sys := e.SystemKey
		op := chatAdmin(t, e, "chatplatform:read", "chatplatform:sync", "chatplatform:edit", "chatplatform:guild.sync")
		reader := chatAdmin(t, e, "chatplatform:read")
		nobody := chatAdmin(t, e)

		// Without chatplatform:read: the 403 page, for the page and its actions alike.
		nb := signedInBrowser(t, e, nobody)
		pageShows(t, "no permission", nb.get("/admin/chat"), http.StatusForbidden)
		pageShows(t, "no permission, guild", nb.get("/admin/chat/guilds/"+gid), http.StatusForbidden)
		if p := nb.do("POST", "/admin/chat/sync", url.Values{}); p.status != http.StatusForbidden {
			t.Fatalf("sync without permission: %d", p.status)
		}

		b := signedInBrowser(t, e, op)
		p := b.get("/admin/chat")
		pageShows(t, "empty chat page", p, http.StatusOK, "No guilds are stored yet", "Sync now", "Save settings")
		if strings.Contains(p.body, "style=") {
			t.Error("the page has inline style")
		}

		// Sync without a bot: the 503 in words, nothing stored.
		q := b.post(t, p.body, "/admin/chat/sync", nil)
		pageShows(t, "sync without a bot", q, http.StatusServiceUnavailable, "No chat-platform bot is connected", "503 Service Unavailable")
		if d := e.Call(t, "GET", "/v1/chatplatform/guilds", sys, nil, http.StatusOK).JSON()["data"].([]any); len(d) != 0 {
			t.Fatalf("guilds after a sync without a bot: %v", d)
		}

		// With the bot: the sync stores what it reports and the page shows what REST serves.
		bot := startBot(t, e, sys, goodAnswer)
		q = b.post(t, p.body, "/admin/chat/sync", nil)
		if q.status != http.StatusSeeOther || q.location != "/admin/chat" {
			t.Fatalf("sync: %d %q %s", q.status, q.location, q.body)
		}
		if m := bot.last(); m.Topic != chat.TopicSync || string(m.Payload) != "{}" {
			t.Fatalf("bot request %+v %s", m, m.Payload)
		}
		var guilds struct{ Data []chat.Guild }
		e.Call(t, "GET", "/v1/chatplatform/guilds", reader.Token, nil, http.StatusOK).Decode(t, &guilds)
		if len(guilds.Data) != 1 {
			t.Fatalf("guilds %+v", guilds)
		}
		g := guilds.Data[0]
		rb := signedInBrowser(t, e, reader)
		p = rb.get("/admin/chat")
		pageShows(t, "chat page", p, http.StatusOK, g.Name, g.GuildID, `href="/admin/chat/guilds/`+gid+`"`, "Tier 1")
		if strings.Contains(p.body, `action="/admin/chat/sync"`) || strings.Contains(p.body, `action="/admin/chat/settings"`) {
			t.Error("a reader sees forms the routes refuse")
		}
		pageShows(t, "flash", b.get("/admin/chat"), http.StatusOK, "The sync is done")

		// The guild page: channels and members as REST lists them.
		var chs struct{ Data []chat.Channel }
		e.Call(t, "GET", "/v1/chatplatform/guilds/"+gid+"/channels", reader.Token, nil, http.StatusOK).Decode(t, &chs)
		gp := rb.get("/admin/chat/guilds/" + gid)
		pageShows(t, "guild page", gp, http.StatusOK, g.Name, "Members 1 to 3 of 3", "Timed out", "Bot",
			`<option value="500000000000000001">Captain</option>`, `<td data-label="Roles">Crew</td>`)
		for _, c := range chs.Data {
			if !strings.Contains(gp.body, "<strong>"+c.Name+"</strong>") || !strings.Contains(gp.body, c.ChannelType) {
				t.Errorf("channel %s (%s) not on the guild page", c.Name, c.ChannelType)
			}
		}
		mpath := "/v1/chatplatform/guilds/" + g.ID + "/members"
		var all struct{ Members []chat.Member }
		e.Call(t, "GET", mpath, reader.Token, nil, http.StatusOK).Decode(t, &all)
		for _, m := range all.Members {
			if !strings.Contains(gp.body, "<strong>"+m.DisplayName+"</strong>") || !strings.Contains(gp.body, m.FormattedUsername) {
				t.Errorf("member %s not on the guild page", m.Username)
			}
		}
		if strings.Contains(gp.body, "Sync this guild") || strings.Contains(gp.body, "Save language") {
			t.Error("a reader sees the guild's forms")
		}

		// The member search takes the REST list's parameters and shows what it returns.
		members := regexp.MustCompile(`<tr>\s*<td data-label="Member"><strong>([^<]+)</strong>`)
		for query, want := range map[string][]string{
			"search=bobby":                {"Bobby"},
			"search=e":                    {"Ally", "helper"},
			"bot_only=true":               {"helper"},
			"humans_only=true":            {"Ally", "Bobby"},
			"has_role=500000000000000002": {"Bobby"},
			"limit=2":                     {"Ally", "Bobby"},
			"limit=2&offset=2":            {"helper"},
			"has_role=500000000000000009": nil,
			"search=ALL&humans_only=true": {"Ally"},
			"search=%25&bot_only=1":       nil,
		} {
			var rest struct {
				Members    []chat.Member
				TotalCount int `json:"total_count"`
			}
			e.Call(t, "GET", mpath+"?"+query, reader.Token, nil, http.StatusOK).Decode(t, &rest)
			page := rb.get("/admin/chat/guilds/" + gid + "?" + query)
			var got []string
			for _, m := range members.FindAllStringSubmatch(page.body, -1) {
				got = append(got, html.UnescapeString(m[1]))
			}
			var fromREST []string
			for _, m := range rest.Members {
				fromREST = append(fromREST, m.DisplayName)
			}
			if page.status != http.StatusOK || fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(got) != fmt.Sprint(fromREST) {
				t.Errorf("members?%s: page %d %v, REST %v, want %v", query, page.status, got, fromREST, want)
			}
			if len(want) == 0 && !strings.Contains(page.body, "No members match.") {
				t.Errorf("members?%s: no empty-list text", query)
			}
		}
		pg := rb.get("/admin/chat/guilds/" + gid + "?limit=2")
		pageShows(t, "member page 1", pg, http.StatusOK, "Members 1 to 2 of 3", "offset=2")
		// What REST refuses with 400 the page refuses too, at the field.
		pageShows(t, "both filters", rb.get("/admin/chat/guilds/"+gid+"?bot_only=true&humans_only=true"), http.StatusBadRequest,
			"bot_only and humans_only cannot both be true")
		bad := rb.get("/admin/chat/guilds/" + gid + "?has_role=x%25")
		pageShows(t, "bad role", bad, http.StatusBadRequest, "has_role must be a role snowflake", `id="m-role-error"`)
		pageShows(t, "bad bool", rb.get("/admin/chat/guilds/"+gid+"?bot_only=maybe"), http.StatusBadRequest, "bot_only must be true or false")
		pageShows(t, "unknown guild", rb.get("/admin/chat/guilds/999"), http.StatusNotFound)
		pageShows(t, "not a snowflake", rb.get("/admin/chat/guilds/abc"), http.StatusBadRequest)

		// Sync one guild, and its members, from the guild page.
		gp = b.get("/admin/chat/guilds/" + gid)
		q = b.post(t, gp.body, "/admin/chat/sync", url.Values{"guild_id": {gid}})
		if q.status != http.StatusSeeOther || q.location != "/admin/chat/guilds/"+gid {
			t.Fatalf("sync one guild: %d %q %s", q.status, q.location, q.body)
		}
		if m := bot.last(); !strings.Contains(string(m.Payload), gid) {
			t.Fatalf("sync request for one guild: %s", m.Payload)
		}
		q = b.post(t, gp.body, "/admin/chat/guilds/"+gid+"/members/sync", nil)
		if q.status != http.StatusSeeOther || q.location != "/admin/chat/guilds/"+gid {
			t.Fatalf("member sync: %d %q %s", q.status, q.location, q.body)
		}
		if n := e.Call(t, "GET", mpath, reader.Token, nil, http.StatusOK).JSON()["total_count"]; n != 2.0 {
			t.Fatalf("members after the page's member sync: %v", n)
		}
		pageShows(t, "after member sync", b.get("/admin/chat/guilds/"+gid), http.StatusOK, "The members were synced", "Members 1 to 2 of 2")

		// A bot that reports a failure: the page says what it reported.
		bot.setAnswer(func(string, json.RawMessage) any { return map[string]any{"success": false, "error": "Missing Access"} })
		p = b.get("/admin/chat")
		pageShows(t, "bot failure", b.post(t, p.body, "/admin/chat/sync", nil), http.StatusBadGateway, "The bot could not do the sync", "Missing Access")
		pageShows(t, "bot failure, members", b.post(t, gp.body, "/admin/chat/guilds/"+gid+"/members/sync", nil), http.StatusBadGateway, "Missing Access")
		_ = bot.c.ws.Close(websocket.StatusNormalClosure, "")
		waitFor(t, "bot gone", func() bool { return !e.Server.Hub.BotConnected() })
		pageShows(t, "member sync without a bot", b.post(t, gp.body, "/admin/chat/guilds/"+gid+"/members/sync", nil), http.StatusServiceUnavailable,
			"No chat-platform bot is connected", g.Name)

		// Bot settings: the changed fields are saved and audited from the backend.
		p = b.get("/admin/chat")
		settings := url.Values{"sync_interval_seconds": {"3600"}, "initial_delay_seconds": {"10"}, "command_cooldown_seconds": {"10"},
			"default_language": {"de"}, "notify_on_guild_join": {"on"}, "notify_on_guild_leave": {"on"}}
		q = b.post(t, p.body, "/admin/chat/settings", settings)
		if q.status != http.StatusSeeOther || q.location != "/admin/chat" {
			t.Fatalf("save settings: %d %q %s", q.status, q.location, q.body)
		}
		var st chat.BotSettings
		e.Call(t, "GET", "/v1/chatplatform/settings", reader.Token, nil, http.StatusOK).Decode(t, &st)
		if st.AutoSyncEnabled || st.DefaultLanguage != "de" || st.CommandCooldownSeconds != 10 || st.SyncIntervalSeconds != 3600 || !st.NotifyOnGuildJoin {
			t.Fatalf("settings after the page: %+v", st)
		}
		if n := auditSource(t, e, "bot_guild_configured", op.ID, "backend"); n != 1 {
			t.Fatalf("audit events from the backend: %d", n)
		}
		changed := count(t, e, `SELECT COUNT(*) FROM audit_events WHERE event_type = 'bot_guild_configured' AND metadata LIKE '%auto_sync_enabled%' AND metadata LIKE '%command_cooldown_seconds%' AND metadata NOT LIKE '%sync_interval_seconds%'`)
		if changed != 1 {
			t.Errorf("the audit event does not name exactly the changed fields")
		}
		p = b.get("/admin/chat")
		pageShows(t, "saved", p, http.StatusOK, "The bot settings were saved.", `value="de"`)
		// The same values again: nothing to change, no event.
		q = b.post(t, p.body, "/admin/chat/settings", settings)
		if q.status != http.StatusSeeOther {
			t.Fatalf("unchanged settings: %d %s", q.status, q.body)
		}
		pageShows(t, "unchanged", b.get("/admin/chat"), http.StatusOK, "Nothing was changed.")
		// Refused input: the field says why, nothing changes.
		for field, value := range map[string]string{"sync_interval_seconds": "5", "initial_delay_seconds": "abc", "default_language": "not a tag",
			"command_cooldown_seconds": "999999"} {
			form := url.Values{}
			for k, v := range settings {
				form[k] = v
			}
			form.Set(field, value)
			form.Set("auto_sync_enabled", "on")
			q = b.post(t, p.body, "/admin/chat/settings", form)
			pageShows(t, "bad "+field, q, http.StatusBadRequest, "Please check the marked fields.", `value="`+value+`"`)
			if !regexp.MustCompile(`id="` + field + `"[^>]*aria-invalid="true"`).MatchString(q.body) {
				t.Errorf("bad %s: the field is not marked", field)
			}
		}
		e.Call(t, "GET", "/v1/chatplatform/settings", reader.Token, nil, http.StatusOK).Decode(t, &st)
		if st.AutoSyncEnabled || st.SyncIntervalSeconds != 3600 || st.DefaultLanguage != "de" {
			t.Fatalf("a refused post changed the settings: %+v", st)
		}

		// The guild's language.
		gs := "/v1/chatplatform/guilds/" + gid + "/settings"
		gp = b.get("/admin/chat/guilds/" + gid)
		pageShows(t, "language form", gp, http.StatusOK, "Leave empty to use the bot&#39;s default (de).")
		q = b.post(t, gp.body, "/admin/chat/guilds/"+gid+"/settings", url.Values{"default_language": {"pt-BR"}})
		if q.status != http.StatusSeeOther {
			t.Fatalf("save language: %d %s", q.status, q.body)
		}
		if r := e.Call(t, "GET", gs, reader.Token, nil, http.StatusOK).JSON(); r["default_language"] != "pt-BR" {
			t.Fatalf("guild settings after the page: %v", r)
		}
		pageShows(t, "language saved", b.get("/admin/chat/guilds/"+gid), http.StatusOK, "The guild&#39;s language was saved.", `value="pt-BR"`)
		q = b.post(t, gp.body, "/admin/chat/guilds/"+gid+"/settings", url.Values{"default_language": {"!!"}})
		pageShows(t, "bad language", q, http.StatusBadRequest, "default_language must be a language tag", `value="!!"`, `id="guild-language-error"`)
		q = b.post(t, gp.body, "/admin/chat/guilds/"+gid+"/settings", url.Values{"default_language": {""}})
		if q.status != http.StatusSeeOther {
			t.Fatalf("clear language: %d %s", q.status, q.body)
		}
		if r := e.Call(t, "GET", gs, reader.Token, nil, http.StatusOK).JSON(); r["default_language"] != nil {
			t.Fatalf("guild settings after clearing: %v", r)
		}
		if n := auditSource(t, e, "bot_guild_configured", op.ID, "backend"); n != 3 {
			t.Fatalf("audit events from the backend: %d, want 3", n)
		}

		// A reader is refused every action, whatever the form.
		for _, action := range []string{"/admin/chat/sync", "/admin/chat/settings", "/admin/chat/guilds/" + gid + "/settings",
			"/admin/chat/guilds/" + gid + "/members/sync"} {
			if q := rb.do("POST", action, url.Values{"default_language": {"en"}}); q.status != http.StatusForbidden {
				t.Errorf("reader POST %s: %d", action, q.status)
			}
		}
		if r := e.Call(t, "GET", gs, reader.Token, nil, http.StatusOK).JSON(); r["default_language"] != nil {
			t.Fatalf("a refused post changed the guild: %v", r)
		}

		// Without the CSRF token: refused, nothing changed.
		settings.Del("csrf_token")
		settings.Set("sync_interval_seconds", "120")
		if q := b.do("POST", "/admin/chat/settings", settings); q.status != http.StatusForbidden {
			t.Errorf("settings without CSRF: %d", q.status)
		}
		if e.Call(t, "GET", "/v1/chatplatform/settings", reader.Token, nil, http.StatusOK).Decode(t, &st); st.SyncIntervalSeconds != 3600 {
			t.Errorf("a post without CSRF changed the settings: %+v", st)
		}

		// In German.
		e.Call(t, "PATCH", "/v1/users/"+op.ID+"/locale", op.Token, map[string]any{"locale": "de"}, http.StatusOK)
		pageShows(t, "German", b.get("/admin/chat"), http.StatusOK, "Jetzt abgleichen", "Einstellungen des Bots")
	})
}

// TestAdminTracking: the tracking pages show the devices, trips, history
// and GPS track REST serves, each to holders of its route's permission.
func TestAdminTracking(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		op := chatAdmin(t, e, "devices:read", "trips:read")
		devOnly := chatAdmin(t, e, "devices:read")
		tripsOnly := chatAdmin(t, e, "trips:read")
		nobody := chatAdmin(t, e)

		data := func(r *apptest.Resp) map[string]any { return r.JSON()["data"].(map[string]any) }
		dev := data(e.Call(t, "POST", "/v1/devices", sys, map[string]any{"name": "Truck 7", "device_type": "tracker"}, http.StatusCreated))
		devID := dev["id"].(string)
		trip := data(e.Call(t, "POST", "/v1/trips", sys, map[string]any{"name": "Harbour run", "device_id": devID, "gps_logging_enabled": true}, http.StatusCreated))
		id := trip["id"].(string)
		empty := data(e.Call(t, "POST", "/v1/trips", sys, map[string]any{"name": "Paperwork"}, http.StatusCreated))["id"].(string)
		e.Call(t, "PATCH", "/v1/trips/"+id, sys, map[string]any{"status": "active", "latitude": 53.54, "longitude": 9.98}, http.StatusOK)
		// A walk north-east through the harbour, then back west.
		track := [][2]float64{{53.5400, 9.9800}, {53.5420, 9.9850}, {53.5450, 9.9900}, {53.5460, 9.9950}, {53.5440, 9.9700}}
		for i, c := range track {
			e.Clock.Advance(2 * time.Second)
			e.Call(t, "POST", "/v1/gps", sys, map[string]any{"latitude": c[0], "longitude": c[1], "altitude": 5, "heading": 45,
				"timestamp": e.Clock.Now().Unix() + int64(i), "speed_kmh": 4, "speed_mps": 1.1, "speed_mph": 2.5, "speed_knots": 2.2, "device_id": devID}, http.StatusCreated)
		}
		e.Clock.Advance(time.Minute)
		e.Call(t, "PATCH", "/v1/trips/"+id, sys, map[string]any{"status": "completed"}, http.StatusOK)

		// Who may see what.
		pageShows(t, "no permission", signedInBrowser(t, e, nobody).get("/admin/tracking"), http.StatusForbidden)
		db := signedInBrowser(t, e, devOnly)
		p := db.get("/admin/tracking")
		pageShows(t, "devices only", p, http.StatusOK, "Truck 7", "tracker")
		if strings.Contains(p.body, "Harbour run") || strings.Contains(p.body, `id="trips"`) {
			t.Error("a devices:read operator sees trips")
		}
		pageShows(t, "devices only, trip", db.get("/admin/tracking/trips/"+id), http.StatusForbidden)
		p = signedInBrowser(t, e, tripsOnly).get("/admin/tracking")
		pageShows(t, "trips only", p, http.StatusOK, "Harbour run", "Completed")
		if strings.Contains(p.body, "Truck 7") {
			t.Error("a trips:read operator sees devices")
		}

		b := signedInBrowser(t, e, op)
		p = b.get("/admin/tracking")
		total := e.Call(t, "GET", "/v1/trips", sys, nil, http.StatusOK).JSON()["pagination"].(map[string]any)["total"].(float64)
		pageShows(t, "tracking", p, http.StatusOK, "Truck 7", "Harbour run", "Paperwork", fmt.Sprintf("%d in all", int(total)),
			`href="/admin/tracking/trips/`+id+`"`)
		if strings.Contains(p.body, "style=") {
			t.Error("the page has inline style")
		}
		p = b.get("/admin/tracking?status=completed")
		if !strings.Contains(p.body, "Harbour run") || strings.Contains(p.body, "Paperwork") {
			t.Errorf("completed trips: %s", p.body)
		}
		pageShows(t, "bad status", b.get("/admin/tracking?status=lost"), http.StatusBadRequest, "status must be one of draft, active, paused, completed")
		pageShows(t, "no trip", b.get("/admin/tracking/trips/00000000-0000-4000-8000-000000000000"), http.StatusNotFound)
		pageShows(t, "bad trip id", b.get("/admin/tracking/trips/x"), http.StatusBadRequest)

		// The trip: its history as REST lists it, and its track drawn and summed up.
		hist := e.Call(t, "GET", "/v1/trips/"+id+"/history", sys, nil, http.StatusOK).Array()
		pts := e.Call(t, "GET", "/v1/trips/"+id+"/gps?limit=100", sys, nil, http.StatusOK).JSON()["data"].([]any)
		if len(hist) != 2 || len(pts) != len(track) {
			t.Fatalf("REST history %d, points %d", len(hist), len(pts))
		}
		dist := 0.0
		for i := 1; i < len(pts); i++ {
			a, c := pts[i-1].(map[string]any), pts[i].(map[string]any)
			dist += tracking.Distance(a["latitude"].(float64), a["longitude"].(float64), c["latitude"].(float64), c["longitude"].(float64))
		}
		tp := b.get("/admin/tracking/trips/" + id)
		pageShows(t, "trip", tp, http.StatusOK, "Harbour run", "Draft → <strong>Active", "Active → <strong>Completed", "53.54000, 9.98000",
			fmt.Sprintf("%.2f km", dist/1000), fmt.Sprintf("%d points over %.2f km.", len(track), dist/1000), `role="img"`)
		if strings.Contains(tp.body, "style=") {
			t.Error("the trip page has inline style")
		}
		if got := strings.Count(tp.body, `<td data-label="Time">`); got != len(track) {
			t.Errorf("point rows %d, want %d", got, len(track))
		}

		// The drawing: one vertex per point, in the 640×360 box, north up and east right.
		m := regexp.MustCompile(`<polyline points="([^"]+)"`).FindStringSubmatch(tp.body)
		if m == nil {
			t.Fatalf("no polyline:\n%s", tp.body)
		}
		var xs, ys []float64
		for _, v := range strings.Fields(m[1]) {
			x, y, _ := strings.Cut(v, ",")
			fx, err1 := strconv.ParseFloat(x, 64)
			fy, err2 := strconv.ParseFloat(y, 64)
			if err1 != nil || err2 != nil || fx < 0 || fx > 640 || fy < 0 || fy > 360 {
				t.Fatalf("vertex %q outside the drawing", v)
			}
			xs, ys = append(xs, fx), append(ys, fy)
		}
		if len(xs) != len(track) {
			t.Fatalf("vertices %d, want %d", len(xs), len(track))
		}
		// Point 3 is the northernmost (smallest y), point 4 the westernmost (smallest x), point 3 the easternmost.
		if !(ys[3] < ys[0] && xs[4] < xs[0] && xs[3] > xs[2]) {
			t.Errorf("the drawing is not north up and east right: %v %v", xs, ys)
		}
		// The box fills the drawing's width or height (inside the margin), with equal scale on both axes.
		w, h := slicesSpan(xs), slicesSpan(ys)
		if math.Abs(w-592) > 0.2 && math.Abs(h-312) > 0.2 {
			t.Errorf("the track is not fitted to the drawing: %.1f × %.1f", w, h)
		}
		kx := w / ((9.9950 - 9.9700) * math.Cos((53.5400+53.5460)/2*math.Pi/180))
		ky := h / (53.5460 - 53.5400)
		if math.Abs(kx-ky)/ky > 0.01 {
			t.Errorf("unequal scale: %.1f vs %.1f units per degree", kx, ky)
		}
		start := regexp.MustCompile(`<circle class="track-start" cx="([^"]+)" cy="([^"]+)"`).FindStringSubmatch(tp.body)
		end := regexp.MustCompile(`<rect class="track-end"[^>]*transform="translate\(([^ ]+) ([^)]+)\)"`).FindStringSubmatch(tp.body)
		if start == nil || end == nil || start[1] != strconv.FormatFloat(xs[0], 'f', -1, 64) || end[1] != strconv.FormatFloat(xs[4], 'f', -1, 64) ||
			end[2] != strconv.FormatFloat(ys[4], 'f', -1, 64) {
			t.Errorf("markers %v %v, first %v,%v last %v,%v", start, end, xs[0], ys[0], xs[4], ys[4])
		}
		if !strings.Contains(tp.body, `<text`) || !regexp.MustCompile(`>\d+ m</text>`).MatchString(tp.body) {
			t.Error("no scale bar")
		}

		// A trip without points: said in words, no drawing.
		ep := b.get("/admin/tracking/trips/" + empty)
		pageShows(t, "empty trip", ep, http.StatusOK, "No GPS points were recorded for this trip.", "The status has not changed")
		if strings.Contains(ep.body, "<polyline") {
			t.Error("a drawing for a trip without points")
		}
	})
}

func slicesSpan(v []float64) float64 {
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	return hi - lo
}

// TestTripPageNamesTheDevice: the trip page names the trip's device for a
// reader who may read devices, and shows only its id to one who may not.
func TestTripPageNamesTheDevice(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		data := func(r *apptest.Resp) map[string]any { return r.JSON()["data"].(map[string]any) }
		devID := data(e.Call(t, "POST", "/v1/devices", sys, map[string]any{"name": "Barge Anna", "device_type": "tracker"}, http.StatusCreated))["id"].(string)
		id := data(e.Call(t, "POST", "/v1/trips", sys, map[string]any{"name": "Rhine run", "device_id": devID}, http.StatusCreated))["id"].(string)
		both := signedInBrowser(t, e, chatAdmin(t, e, "devices:read", "trips:read")).get("/admin/tracking/trips/" + id)
		if both.status != http.StatusOK || !strings.Contains(both.body, "Barge Anna") || !strings.Contains(both.body, devID) {
			t.Fatalf("trip page for devices:read: %d %s", both.status, both.body)
		}
		tripsOnly := signedInBrowser(t, e, chatAdmin(t, e, "trips:read")).get("/admin/tracking/trips/" + id)
		if tripsOnly.status != http.StatusOK || strings.Contains(tripsOnly.body, "Barge Anna") || !strings.Contains(tripsOnly.body, devID) {
			t.Fatalf("trip page without devices:read: %d", tripsOnly.status)
		}
	})
}
