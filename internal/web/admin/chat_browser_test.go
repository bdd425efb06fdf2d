package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"hmid/internal/access"
	"hmid/internal/apptest"
	"hmid/internal/chat"
	"hmid/internal/db"
	"hmid/internal/realtime"
	"hmid/internal/web/webtest"
)

// permittedOperator is a user who signs in with pw and holds exactly perms
// through a role of their own.
func permittedOperator(t *testing.T, e *apptest.Env, name string, perms ...string) apptest.User {
	t.Helper()
	role := "role_" + name
	now := db.TS(e.Clock.Now())
	ctx := context.Background()
	if _, err := e.Server.DB.ExecContext(ctx, `INSERT INTO roles (id, name, description, is_system, requires_two_factor, created_at, updated_at) VALUES ($1, $1, '', FALSE, FALSE, $2, $2)`, role, now); err != nil {
		t.Fatal(err)
	}
	for _, p := range perms {
		res, act, _ := strings.Cut(p, ":")
		if _, err := e.Server.DB.ExecContext(ctx, `INSERT INTO role_permissions (role_id, permission_id, created_at) VALUES ($1, $2, $3)`, role, access.PermissionID(res, act), now); err != nil {
			t.Fatal(err)
		}
	}
	return e.NewUser(t, apptest.UserSpec{Username: name, Password: pw, Roles: []string{"role_user", role}})
}

// connectBot connects a chat-platform bot to the real-time channel with
// the system key; it answers every request with answer(topic).
func connectBot(t *testing.T, e *apptest.Env, answer func(topic string) any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.URL, "http")+"/v1/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + e.SystemKey}}})
	if err != nil {
		t.Fatalf("bot dial: %v", err)
	}
	t.Cleanup(func() { _ = ws.CloseNow() })
	send := func(m realtime.Message) error {
		b, _ := json.Marshal(m)
		wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return ws.Write(wctx, websocket.MessageText, b)
	}
	if err := send(realtime.Message{Type: "hello", ID: "h", Payload: json.RawMessage(`{"role":"bot"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, b, err := ws.Read(ctx); err != nil || !strings.Contains(string(b), `"ack"`) {
		t.Fatalf("bot hello: %s %v", b, err)
	}
	go func() {
		for {
			_, b, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			var m realtime.Message
			if json.Unmarshal(b, &m) != nil || m.Type != "request" {
				continue
			}
			p, _ := json.Marshal(answer(m.Topic))
			_ = send(realtime.Message{Type: "response", ID: m.ID, Payload: p})
		}
	}()
}

func sp(s string) *string { return &s }

// harbourGuild is the guild the test bot reports.
func harbourGuild(at time.Time) chat.BotGuild {
	until := at.Add(time.Hour)
	members := []chat.BotMember{
		{UserID: "300000000000000001", Username: "ada", GlobalName: sp("Ada Lovelace"), Roles: []string{"500000000000000001"}, JoinedAt: &at},
		{UserID: "300000000000000002", Username: "grace", GlobalName: sp("Grace Hopper"), Nickname: sp("Amazing Grace"), Roles: []string{"500000000000000002"}, JoinedAt: &at},
		{UserID: "300000000000000003", Username: "harbourbot", Bot: true, Roles: []string{}, JoinedAt: &at},
		{UserID: "300000000000000004", Username: "linus", Discriminator: "4711", Roles: []string{"500000000000000002"}, CommunicationDisabledUntil: &until, JoinedAt: &at},
		{UserID: "300000000000000005", Username: "margaret", GlobalName: sp("Margaret Hamilton"), Roles: []string{"500000000000000001", "500000000000000002"}, JoinedAt: &at},
	}
	return chat.BotGuild{GuildID: "100000000000000001", Name: "Harbour Crew", OwnerID: sp("300000000000000001"), MemberCount: 5, BoostCount: 3,
		PremiumTier: 1, BotJoinedAt: &at,
		Channels: []chat.BotChannel{
			{ChannelID: "200000000000000001", Name: "Harbour", Type: 4, Position: 0},
			{ChannelID: "200000000000000002", Name: "general", Type: 0, Position: 1, ParentID: sp("200000000000000001"), Topic: sp("Arrivals, departures and everything between")},
			{ChannelID: "200000000000000003", Name: "tides", Type: 5, Position: 2, ParentID: sp("200000000000000001")},
			{ChannelID: "200000000000000004", Name: "bridge", Type: 2, Position: 3, ParentID: sp("200000000000000001")},
			{ChannelID: "200000000000000005", Name: "logbook", Type: 15, Position: 4},
		},
		Roles:   []chat.BotRole{{RoleID: "500000000000000001", Name: "Captain", Position: 2}, {RoleID: "500000000000000002", Name: "Crew", Position: 1}},
		Members: &members,
	}
}

// TestBrowserAdminChat drives headless Chromium through /admin/chat: "sync
// now" without a bot shows the 503 in words, with a bot it stores the
// guilds; the settings are saved; a guild's members are searched. Every
// page passes axe-core; with HMID_SCREENSHOTS set the list and a guild's
// page are saved.
func TestBrowserAdminChat(t *testing.T) {
	t.Parallel()
	ctx, e := webtest.OnSQLite(t)
	op := permittedOperator(t, e, "chat_operator", "chatplatform:read", "chatplatform:sync", "chatplatform:edit", "chatplatform:guild.sync")
	webtest.Login(t, ctx, e.URL, op.Email, pw)
	text := func(sel string) string { return webtest.Read(t, ctx, "text of "+sel, chromedp.Text(chromedp.CSS(sel))) }

	webtest.Axe(t, ctx, e.URL+"/admin/chat")
	if s := text(`main`); !strings.Contains(s, "No guilds are stored yet") {
		t.Fatalf("chat page: %q", s)
	}
	webtest.Do(t, ctx, "sync without a bot", chromedp.Click(chromedp.CSS(`form[action="/admin/chat/sync"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`.alert`)))
	if s := text(`.alert`); !strings.Contains(s, "No chat-platform bot is connected") || !strings.Contains(s, "503") {
		t.Fatalf("sync without a bot: %q", s)
	}
	webtest.Axe(t, ctx, "")

	guild := harbourGuild(e.Clock.Now().Add(-72 * time.Hour))
	connectBot(t, e, func(topic string) any {
		return map[string]any{"success": true, "guilds": []chat.BotGuild{guild}}
	})
	webtest.Do(t, ctx, "sync with the bot", chromedp.Navigate(e.URL+"/admin/chat"),
		chromedp.Click(chromedp.CSS(`form[action="/admin/chat/sync"] button`)), chromedp.WaitVisible(chromedp.CSS(`.notice`)))
	if s := text(`main`); !strings.Contains(s, "The sync is done") || !strings.Contains(s, "Harbour Crew") {
		t.Fatalf("after the sync: %q", s)
	}

	// The settings: a new interval and language, saved.
	webtest.Submit(t, ctx, "change settings",
		chromedp.SetValue(chromedp.CSS(`#sync_interval_seconds`), "1800"),
		chromedp.SetValue(chromedp.CSS(`#default_language`), "de"),
		chromedp.Click(chromedp.CSS(`form[action="/admin/chat/settings"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.notice`)))
	var st chat.BotSettings
	e.Call(t, "GET", "/v1/chatplatform/settings", e.SystemKey, nil, http.StatusOK).Decode(t, &st)
	if s := text(`.notice`); !strings.Contains(s, "saved") || st.SyncIntervalSeconds != 1800 || st.DefaultLanguage != "de" {
		t.Fatalf("settings: %q %+v", s, st)
	}
	webtest.Axe(t, ctx, "")
	webtest.Screenshots(t, ctx, "admin-chat")

	// A guild: channels and members, then a search.
	webtest.Do(t, ctx, "open the guild", chromedp.Click(chromedp.CSS(`a[href="/admin/chat/guilds/100000000000000001"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#members-title`)))
	webtest.Axe(t, ctx, "")
	if s := text(`main`); !strings.Contains(s, "Members 1 to 5 of 5") || !strings.Contains(s, "Amazing Grace") || !strings.Contains(s, "tides") {
		t.Fatalf("guild page: %q", s)
	}
	webtest.Screenshots(t, ctx, "admin-chat-guild")
	webtest.Submit(t, ctx, "search members",
		chromedp.SendKeys(chromedp.CSS(`#m-search`), "hop"),
		chromedp.Click(chromedp.CSS(`form.filters button[type=submit]`)), chromedp.WaitVisible(chromedp.CSS(`#members-count`)))
	if s := text(`#members`); !strings.Contains(s, "Members 1 to 1 of 1") || !strings.Contains(s, "Amazing Grace") || strings.Contains(s, "Ada Lovelace") {
		t.Fatalf("member search: %q", s)
	}
}
