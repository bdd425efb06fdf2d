package admin

import (
	"cmp"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/chat"
	"hmid/internal/httpx"
	"hmid/internal/web"
)

// ChatPages is /admin/chat: the chat-platform bot's guilds with their
// channels and members, the bot's settings and each guild's language, and
// "sync now". It calls chat.Service as the /v1/chatplatform routes do.
type ChatPages struct {
	H    *web.Handler
	Chat *chat.Service
}

// memberPageSize is the number of members a guild page lists, the REST
// list's default.
const memberPageSize = 50

// chatSettingsForm is the bot settings form: the stored values, or after a
// refusal what was posted, with the errors by field.
type chatSettingsForm struct {
	AutoSync, NotifyJoin, NotifyLeave   bool
	Interval, Delay, Cooldown, Language string
	Errors                              map[string]string
}

// chatIndexView is the data of /admin/chat.
type chatIndexView struct {
	Guilds   []chat.Guild
	Settings chat.BotSettings
	Form     chatSettingsForm
	// What the operator may do besides reading (the routes' rules decide;
	// these only hide the forms that would be refused).
	CanSync, CanEdit bool
}

// Index is GET /admin/chat.
func (cp *ChatPages) Index(w http.ResponseWriter, r *http.Request) {
	cp.renderIndex(w, r, http.StatusOK, "", nil)
}

// renderIndex shows /admin/chat; form, when not nil, is what a refused
// settings post sent.
func (cp *ChatPages) renderIndex(w http.ResponseWriter, r *http.Request, status int, errText string, form *chatSettingsForm) {
	cp.H.Show(w, r, status, "admin_chat", web.ConsoleView{Title: "admin.chat.title", Section: "chat", Error: errText},
		func() (any, error) { return cp.indexView(r, form) })
}

// indexView is the guilds and the chat settings, with form, when not nil,
// in the settings' fields.
func (cp *ChatPages) indexView(r *http.Request, form *chatSettingsForm) (chatIndexView, error) {
	ctx := r.Context()
	p := authn.From(ctx)
	guilds, err := cp.Chat.Guilds(ctx)
	if err != nil {
		return chatIndexView{}, err
	}
	st, err := cp.Chat.Settings(ctx)
	if err != nil {
		return chatIndexView{}, err
	}
	v := chatIndexView{Guilds: guilds, Settings: st, CanSync: p.Can("chatplatform:sync"), CanEdit: p.Can("chatplatform:edit")}
	if form != nil {
		v.Form = *form
	} else {
		v.Form = chatSettingsForm{AutoSync: st.AutoSyncEnabled, NotifyJoin: st.NotifyOnGuildJoin, NotifyLeave: st.NotifyOnGuildLeave,
			Interval: strconv.Itoa(st.SyncIntervalSeconds), Delay: strconv.Itoa(st.InitialDelaySeconds),
			Cooldown: strconv.Itoa(st.CommandCooldownSeconds), Language: st.DefaultLanguage}
	}
	return v, nil
}

// Sync is POST /admin/chat/sync: POST /v1/chatplatform/sync, for every
// guild or, with guild_id, for one (then back to that guild's page).
func (cp *ChatPages) Sync(w http.ResponseWriter, r *http.Request) {
	var one *string
	back := "/admin/chat"
	cp.H.Act(w, r, web.Action{
		Call: func(*authn.Principal) (string, error) {
			if gid := strings.TrimSpace(r.PostFormValue("guild_id")); gid != "" {
				one, back = &gid, "/admin/chat/guilds/"+url.PathEscape(gid)
			}
			return "admin.chat.synced", syncOutcome(cp.Chat.Sync(r.Context(), one))
		},
		Next: func() string { return back },
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			status, text := cp.syncError(w, r, err)
			if one != nil && apperr.KindOf(err) != apperr.Validation {
				cp.renderGuild(w, r, *one, status, text, nil)
				return
			}
			cp.renderIndex(w, r, status, text, nil)
		},
	})
}

// syncOutcome is a sync's error, a bot's failure included.
func syncOutcome(res chat.SyncResult, err error) error {
	if err == nil && !res.Success {
		err = botFailure(res.Error)
	}
	return err
}

// SyncMembers is POST /admin/chat/guilds/{guild_id}/members/sync: POST
// /v1/chatplatform/guilds/{guild_id}/members/sync.
func (cp *ChatPages) SyncMembers(w http.ResponseWriter, r *http.Request) {
	gid := chi.URLParam(r, "guild_id")
	cp.H.Act(w, r, web.Action{To: "/admin/chat/guilds/" + url.PathEscape(gid),
		Call: func(*authn.Principal) (string, error) {
			res, err := cp.Chat.SyncMembers(r.Context(), gid)
			if err == nil && !res.Success {
				err = botFailure(res.Error)
			}
			return "admin.chat.memberssynced", err
		},
		Refuse: func(w http.ResponseWriter, r *http.Request, _ string, err error) {
			if k := apperr.KindOf(err); k == apperr.Validation || k == apperr.NotFound {
				cp.H.Fail(w, r, err)
				return
			}
			status, text := cp.syncError(w, r, err)
			cp.renderGuild(w, r, gid, status, text, nil)
		},
	})
}

// botFailedError is a sync the bot answered with a failure: REST answers it
// as 200 with success false and the bot's error; the page shows it as an
// error (see docs/decisions.md, "Admin console: chat platform and tracking").
type botFailedError struct{ reason string }

func (e botFailedError) Error() string {
	return "the chat-platform bot reported a failure: " + e.reason
}

func botFailure(reason *string) error {
	if reason == nil {
		return botFailedError{}
	}
	return botFailedError{reason: *reason}
}

// syncError is the status and the text of a failed sync: no bot connected
// is the REST route's 503 told plainly, with what to do; a bot that did
// not answer, or answered what cannot be stored, shows the 503's reason.
func (cp *ChatPages) syncError(w http.ResponseWriter, r *http.Request, err error) (int, string) {
	t := web.Translator(cp.H.UserLanguage(r, authn.From(r.Context())))
	var failed botFailedError
	var e *apperr.Error
	switch {
	case chat.NoBot(err):
		return http.StatusServiceUnavailable, t("admin.chat.nobot")
	case errors.As(err, &failed):
		return http.StatusBadGateway, t("admin.chat.botfailed") + " " + failed.reason
	case errors.As(err, &e) && e.Kind == apperr.ServiceUnavailable:
		return cp.H.Status(w, err), t("admin.chat.botunavailable") + " " + e.Message
	}
	return cp.H.Status(w, err), cp.H.ErrorText(r, err)
}

// SaveSettings is POST /admin/chat/settings: PUT /v1/chatplatform/settings
// with the fields that differ from the stored ones.
func (cp *ChatPages) SaveSettings(w http.ResponseWriter, r *http.Request) {
	p := cp.H.ConsolePost(w, r)
	if p == nil {
		return
	}
	ctx := r.Context()
	st, err := cp.Chat.Settings(ctx)
	if err != nil {
		cp.H.Fail(w, r, err)
		return
	}
	t := web.Translator(cp.H.UserLanguage(r, p))
	// An unticked checkbox is not sent (HTML, "constructing the entry
	// list"), so the form always carries the whole state.
	f := chatSettingsForm{AutoSync: r.PostFormValue("auto_sync_enabled") == "on", NotifyJoin: r.PostFormValue("notify_on_guild_join") == "on",
		NotifyLeave: r.PostFormValue("notify_on_guild_leave") == "on", Interval: strings.TrimSpace(r.PostFormValue("sync_interval_seconds")),
		Delay: strings.TrimSpace(r.PostFormValue("initial_delay_seconds")), Cooldown: strings.TrimSpace(r.PostFormValue("command_cooldown_seconds")),
		Language: strings.TrimSpace(r.PostFormValue("default_language")), Errors: map[string]string{}}
	var c chat.SettingsChange
	if f.AutoSync != st.AutoSyncEnabled {
		c.AutoSyncEnabled = &f.AutoSync
	}
	if f.NotifyJoin != st.NotifyOnGuildJoin {
		c.NotifyOnGuildJoin = &f.NotifyJoin
	}
	if f.NotifyLeave != st.NotifyOnGuildLeave {
		c.NotifyOnGuildLeave = &f.NotifyLeave
	}
	if f.Language != st.DefaultLanguage {
		c.DefaultLanguage = &f.Language
	}
	for _, n := range []struct {
		field, text string
		stored      int
		dst         **int
	}{{"sync_interval_seconds", f.Interval, st.SyncIntervalSeconds, &c.SyncIntervalSeconds},
		{"initial_delay_seconds", f.Delay, st.InitialDelaySeconds, &c.InitialDelaySeconds},
		{"command_cooldown_seconds", f.Cooldown, st.CommandCooldownSeconds, &c.CommandCooldownSeconds}} {
		v, err := strconv.Atoi(n.text)
		if err != nil {
			// What JSON decoding refuses on the REST route: not a number.
			f.Errors[n.field] = t("admin.chat.wholenumber")
			continue
		}
		if v != n.stored {
			*n.dst = &v
		}
	}
	if len(f.Errors) > 0 {
		cp.renderIndex(w, r, http.StatusBadRequest, t("admin.chat.check"), &f)
		return
	}
	if c.AutoSyncEnabled == nil && c.NotifyOnGuildJoin == nil && c.NotifyOnGuildLeave == nil && c.DefaultLanguage == nil &&
		c.SyncIntervalSeconds == nil && c.InitialDelaySeconds == nil && c.CommandCooldownSeconds == nil {
		cp.H.Done(w, r, "/admin/chat", "admin.chat.unchanged")
		return
	}
	err = cp.Chat.UpdateSettings(ctx, p, c, audit.FromRequest(r, audit.Event{SourceService: adminSource}))
	if err != nil {
		if field := apperr.FieldOf(err); field != "" {
			f.Errors[field] = cp.H.ErrorText(r, err)
			cp.renderIndex(w, r, cp.H.Status(w, err), t("admin.chat.check"), &f)
			return
		}
		cp.renderIndex(w, r, cp.H.Status(w, err), cp.H.ErrorText(r, err), &f)
		return
	}
	cp.H.Done(w, r, "/admin/chat", "admin.chat.saved")
}

// channelRow is a channel with the name of its category.
type channelRow struct {
	chat.Channel
	Parent string
}

// memberFilter is the member search of a guild page: the query parameters
// of the REST members list.
type memberFilter struct {
	Search, HasRole     string
	BotOnly, HumansOnly bool
	Errors              map[string]string
	Active              bool // any filter set
	// Roles are the choices of has_role: the guild's roles, and the value
	// asked for when it is none of them.
	Roles []roleOption
}

// roleOption is a choice of the has_role filter.
type roleOption struct {
	Value, Label string
	Selected     bool
}

// memberRow is a member with the names of their roles (the id of a role
// the bot did not report).
type memberRow struct {
	chat.Member
	RoleNames []string
}

// chatGuildView is the data of /admin/chat/guilds/{guild_id}.
type chatGuildView struct {
	Guild    chat.Guild
	Channels []channelRow
	// Language is the guild's own language ("" for the global default),
	// or after a refusal what was posted; LanguageError the refusal.
	Language, LanguageError string
	GlobalLanguage          string
	Filter                  memberFilter
	Members                 []memberRow
	Total                   int
	From, To                int
	Prev, Next              string // links to the neighbouring pages, "" at the ends
	CanSync, CanSyncMembers bool
	CanEdit                 bool
}

// Guild is GET /admin/chat/guilds/{guild_id} (the platform id, as GET
// /v1/chatplatform/guilds/{guild_id}), with the members matching the
// query's search, bot_only, humans_only and has_role.
func (cp *ChatPages) Guild(w http.ResponseWriter, r *http.Request) {
	cp.renderGuild(w, r, chi.URLParam(r, "guild_id"), http.StatusOK, "", nil)
}

// renderGuild shows a guild's page; language, when not nil, is the posted
// language with its error.
func (cp *ChatPages) renderGuild(w http.ResponseWriter, r *http.Request, gid string, status int, errText string, language *[2]string) {
	v, err := cp.guildView(r, gid, language)
	if err != nil {
		cp.H.Fail(w, r, err)
		return
	}
	if len(v.Filter.Errors) > 0 {
		// The member list refused its filter (shown at the field).
		status = http.StatusBadRequest
	}
	cp.H.Console(w, r, status, "admin_chat_guild", web.ConsoleView{Title: "admin.chat.guild.title", Section: "chat", Error: errText, Data: v})
}

// guildView is the guild gid with its channels, its settings and the page
// of its members the query asks for; language, when not nil, is the posted
// language with its error. A member filter the list refuses is an error at
// its field of v.Filter, not of the page.
func (cp *ChatPages) guildView(r *http.Request, gid string, language *[2]string) (v chatGuildView, err error) {
	ctx := r.Context()
	p := authn.From(ctx)
	g, err := cp.Chat.Guild(ctx, gid)
	if err != nil {
		return v, err
	}
	chs, err := cp.Chat.Channels(ctx, g)
	if err != nil {
		return v, err
	}
	gs, err := cp.Chat.GuildSettings(ctx, g.GuildID)
	if err != nil {
		return v, err
	}
	st, err := cp.Chat.Settings(ctx)
	if err != nil {
		return v, err
	}
	v = chatGuildView{Guild: g, GlobalLanguage: st.DefaultLanguage, Channels: channelRows(chs),
		CanSync: p.Can("chatplatform:sync"), CanSyncMembers: p.Can("chatplatform:guild.sync"), CanEdit: p.Can("chatplatform:edit")}
	if gs.DefaultLanguage != nil {
		v.Language = *gs.DefaultLanguage
	}
	if language != nil {
		v.Language, v.LanguageError = language[0], language[1]
	}
	roles, err := cp.Chat.Roles(ctx, g)
	if err != nil {
		return v, err
	}
	// The member list reads the REST list's query parameters (a form
	// post's answer has none: its first page, unfiltered).
	q := r.URL.Query()
	roleNames := v.Filter.read(q, roles)
	if err := cp.listMembers(r, &v, q, roleNames); err != nil {
		if !apperr.Is(err, apperr.Validation) {
			return v, err
		}
		field := cmp.Or(apperr.FieldOf(err), "search")
		v.Filter.Errors[field] = cp.H.ErrorText(r, err)
	}
	return v, nil
}

// channelRows pairs each channel with the name of its parent category.
func channelRows(chs []chat.Channel) []channelRow {
	names := map[string]string{}
	for _, c := range chs {
		names[c.ChannelID] = c.Name
	}
	var rows []channelRow
	for _, c := range chs {
		row := channelRow{Channel: c}
		if c.ParentID != nil {
			row.Parent = names[*c.ParentID]
		}
		rows = append(rows, row)
	}
	return rows
}

// read fills the filter from the member list's query parameters and the
// guild's roles (a role id the bot did not report stays selectable), and
// returns the roles' names by id.
func (f *memberFilter) read(q url.Values, roles []chat.Role) map[string]string {
	*f = memberFilter{Search: q.Get("search"), HasRole: q.Get("has_role"), BotOnly: q.Get("bot_only") != "", HumansOnly: q.Get("humans_only") != "",
		Errors: map[string]string{}}
	f.Active = f.Search != "" || f.HasRole != "" || f.BotOnly || f.HumansOnly
	roleNames := map[string]string{}
	known := false
	for _, rl := range roles {
		roleNames[rl.RoleID] = rl.Name
		f.Roles = append(f.Roles, roleOption{Value: rl.RoleID, Label: rl.Name, Selected: rl.RoleID == f.HasRole})
		known = known || rl.RoleID == f.HasRole
	}
	if f.HasRole != "" && !known {
		f.Roles = append(f.Roles, roleOption{Value: f.HasRole, Label: f.HasRole, Selected: true})
	}
	return roleNames
}

// listMembers fills the view's page of members matching q, with the links
// to the neighbouring pages.
func (cp *ChatPages) listMembers(r *http.Request, v *chatGuildView, q url.Values, roleNames map[string]string) error {
	limit, offset := httpx.ParseLimitOffset(r, memberPageSize)
	members, err := cp.Chat.Members(r.Context(), v.Guild.ID, chat.MemberQuery{Search: q.Get("search"), BotOnly: q.Get("bot_only"),
		HumansOnly: q.Get("humans_only"), HasRole: q.Get("has_role"), Limit: limit, Offset: offset})
	if err != nil {
		return err
	}
	n := len(members.Members)
	if n == 0 {
		return nil
	}
	v.Total, v.From, v.To = members.TotalCount, offset+1, offset+n
	for _, m := range members.Members {
		row := memberRow{Member: m}
		for _, id := range m.Roles {
			row.RoleNames = append(row.RoleNames, cmp.Or(roleNames[id], id))
		}
		v.Members = append(v.Members, row)
	}
	if offset > 0 {
		v.Prev = memberPageLink(v.Guild.GuildID, q, max(0, offset-limit))
	}
	if members.HasMore {
		v.Next = memberPageLink(v.Guild.GuildID, q, offset+n)
	}
	return nil
}

// memberPageLink is the guild page at offset, keeping the other parameters.
func memberPageLink(gid string, q url.Values, offset int) string {
	return web.WithParam("/admin/chat/guilds/"+url.PathEscape(gid), q, "offset", strconv.Itoa(offset)) + "#members"
}

// SaveGuildLanguage is POST /admin/chat/guilds/{guild_id}/settings: PUT
// /v1/chatplatform/guilds/{guild_id}/settings; an empty language is null,
// the global default.
func (cp *ChatPages) SaveGuildLanguage(w http.ResponseWriter, r *http.Request) {
	p := cp.H.ConsolePost(w, r)
	if p == nil {
		return
	}
	ctx := r.Context()
	g, err := cp.Chat.Guild(ctx, chi.URLParam(r, "guild_id"))
	if err != nil {
		cp.H.Fail(w, r, err)
		return
	}
	lang := strings.TrimSpace(r.PostFormValue("default_language"))
	opt := httpx.Opt[string]{Set: true, Null: lang == "", Value: lang}
	if err := cp.Chat.SetGuildLanguage(ctx, p, g, opt, audit.FromRequest(r, audit.Event{SourceService: adminSource})); err != nil {
		if apperr.FieldOf(err) == "default_language" {
			cp.renderGuild(w, r, g.GuildID, cp.H.Status(w, err), web.Translator(cp.H.UserLanguage(r, p))("admin.chat.check"), &[2]string{lang, cp.H.ErrorText(r, err)})
			return
		}
		cp.renderGuild(w, r, g.GuildID, cp.H.Status(w, err), cp.H.ErrorText(r, err), nil)
		return
	}
	cp.H.Done(w, r, "/admin/chat/guilds/"+url.PathEscape(g.GuildID), "admin.chat.languagesaved")
}

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"admin.chat.title":                 "Chat platform",
			"admin.chat.intro":                 "The guilds the chat-platform bot is in, as it last reported them, and the bot's settings. The bot connects to hmid's real-time channel; a sync asks it for fresh data.",
			"admin.chat.sync":                  "Sync now",
			"admin.chat.sync.title":            "Sync with the bot",
			"admin.chat.sync.help":             "Asks the connected bot for every guild with its channels and roles and stores what it reports. Guilds it no longer reports stay until deleted.",
			"admin.chat.synced":                "The sync is done: the lists show what the bot reported.",
			"admin.chat.nobot":                 "No chat-platform bot is connected, so there is nothing to sync from (503 Service Unavailable). Start the bot with an API key that holds the chatplatform permissions; once it has connected to the real-time channel, sync again.",
			"admin.chat.botfailed":             "The bot could not do the sync and reported:",
			"admin.chat.botunavailable":        "The sync did not complete (503 Service Unavailable):",
			"admin.chat.guilds":                "Guilds",
			"admin.chat.noguilds":              "No guilds are stored yet. Sync with the bot to fetch them.",
			"admin.chat.col.guild":             "Guild",
			"admin.chat.col.members":           "Members",
			"admin.chat.col.boosts":            "Boosts",
			"admin.chat.col.joined":            "Bot joined",
			"admin.chat.col.synced":            "Last synced",
			"admin.chat.tier":                  "Tier %d",
			"admin.chat.settings":              "Bot settings",
			"admin.chat.autosync":              "Sync automatically",
			"admin.chat.interval":              "Sync interval (seconds)",
			"admin.chat.interval.help":         "From 60 seconds to 7 days (604800).",
			"admin.chat.delay":                 "Delay before the first sync (seconds)",
			"admin.chat.cooldown":              "Command cooldown (seconds)",
			"admin.chat.language":              "Default language",
			"admin.chat.language.help":         "A language tag such as en, de or pt-BR.",
			"admin.chat.notifyjoin":            "Notify when the bot joins a guild",
			"admin.chat.notifyleave":           "Notify when the bot leaves a guild",
			"admin.chat.save":                  "Save settings",
			"admin.chat.saved":                 "The bot settings were saved.",
			"admin.chat.unchanged":             "Nothing was changed.",
			"admin.chat.check":                 "Please check the marked fields.",
			"admin.chat.wholenumber":           "Enter a whole number of seconds.",
			"admin.chat.updated":               "Last changed",
			"admin.chat.yes":                   "Yes",
			"admin.chat.no":                    "No",
			"admin.chat.never":                 "Never",
			"admin.chat.back":                  "All guilds",
			"admin.chat.guild.title":           "Guild",
			"admin.chat.guild.id":              "Platform ID",
			"admin.chat.guild.owner":           "Owner",
			"admin.chat.guild.premium":         "Premium tier",
			"admin.chat.syncguild":             "Sync this guild",
			"admin.chat.syncmembers":           "Sync members",
			"admin.chat.memberssynced":         "The members were synced: the list shows what the bot reported.",
			"admin.chat.guildlanguage":         "Language of this guild",
			"admin.chat.guildlanguage.help":    "A language tag such as en, de or pt-BR. Leave empty to use the bot's default (%s).",
			"admin.chat.guildlanguage.default": "The bot's default language (%s).",
			"admin.chat.savelanguage":          "Save language",
			"admin.chat.languagesaved":         "The guild's language was saved.",
			"admin.chat.channels":              "Channels",
			"admin.chat.nochannels":            "The bot reported no channels for this guild.",
			"admin.chat.col.channel":           "Channel",
			"admin.chat.col.type":              "Type",
			"admin.chat.col.category":          "Category",
			"admin.chat.col.position":          "Position",
			"admin.chat.nsfw":                  "Age-restricted",
			"admin.chat.members":               "Members",
			"admin.chat.search":                "Search",
			"admin.chat.search.help":           "Part of a username, global name or nickname.",
			"admin.chat.hasrole":               "Role",
			"admin.chat.anyrole":               "Any role",
			"admin.chat.botsonly":              "Bots only",
			"admin.chat.humansonly":            "People only",
			"admin.chat.filter":                "Search members",
			"admin.chat.apply":                 "Search",
			"admin.chat.clear":                 "Clear",
			"admin.chat.count":                 "Members %d to %d of %d",
			"admin.chat.nomembers":             "No members match.",
			"admin.chat.col.member":            "Member",
			"admin.chat.col.roles":             "Roles",
			"admin.chat.col.memberjoined":      "Joined",
			"admin.chat.bot":                   "Bot",
			"admin.chat.timedout":              "Timed out",
			"admin.chat.pending":               "Pending",
			"admin.chat.pages":                 "Member pages",
			"admin.chat.prev":                  "Previous members",
			"admin.chat.next":                  "More members",
		},
		"de": {
			"admin.chat.title":                 "Chat-Plattform",
			"admin.chat.intro":                 "Die Server, in denen der Bot der Chat-Plattform ist, so wie er sie zuletzt gemeldet hat, und die Einstellungen des Bots. Der Bot verbindet sich mit dem Echtzeitkanal von hmid; ein Abgleich fragt ihn nach aktuellen Daten.",
			"admin.chat.sync":                  "Jetzt abgleichen",
			"admin.chat.sync.title":            "Mit dem Bot abgleichen",
			"admin.chat.sync.help":             "Fragt den verbundenen Bot nach allen Servern mit ihren Kanälen und Rollen und speichert, was er meldet. Server, die er nicht mehr meldet, bleiben, bis sie gelöscht werden.",
			"admin.chat.synced":                "Der Abgleich ist fertig: Die Listen zeigen, was der Bot gemeldet hat.",
			"admin.chat.nobot":                 "Es ist kein Bot der Chat-Plattform verbunden, daher gibt es nichts abzugleichen (503 Service Unavailable). Starten Sie den Bot mit einem API-Schlüssel, der die chatplatform-Berechtigungen hat; sobald er mit dem Echtzeitkanal verbunden ist, gleichen Sie erneut ab.",
			"admin.chat.botfailed":             "Der Bot konnte nicht abgleichen und meldete:",
			"admin.chat.botunavailable":        "Der Abgleich wurde nicht abgeschlossen (503 Service Unavailable):",
			"admin.chat.guilds":                "Server",
			"admin.chat.noguilds":              "Noch keine Server gespeichert. Gleichen Sie mit dem Bot ab, um sie zu holen.",
			"admin.chat.col.guild":             "Server",
			"admin.chat.col.members":           "Mitglieder",
			"admin.chat.col.boosts":            "Boosts",
			"admin.chat.col.joined":            "Bot beigetreten",
			"admin.chat.col.synced":            "Zuletzt abgeglichen",
			"admin.chat.tier":                  "Stufe %d",
			"admin.chat.settings":              "Einstellungen des Bots",
			"admin.chat.autosync":              "Automatisch abgleichen",
			"admin.chat.interval":              "Abgleichintervall (Sekunden)",
			"admin.chat.interval.help":         "Von 60 Sekunden bis 7 Tage (604800).",
			"admin.chat.delay":                 "Wartezeit vor dem ersten Abgleich (Sekunden)",
			"admin.chat.cooldown":              "Abklingzeit für Befehle (Sekunden)",
			"admin.chat.language":              "Standardsprache",
			"admin.chat.language.help":         "Ein Sprach-Tag wie en, de oder pt-BR.",
			"admin.chat.notifyjoin":            "Benachrichtigen, wenn der Bot einem Server beitritt",
			"admin.chat.notifyleave":           "Benachrichtigen, wenn der Bot einen Server verlässt",
			"admin.chat.save":                  "Einstellungen speichern",
			"admin.chat.saved":                 "Die Einstellungen des Bots wurden gespeichert.",
			"admin.chat.unchanged":             "Es wurde nichts geändert.",
			"admin.chat.check":                 "Bitte prüfen Sie die markierten Felder.",
			"admin.chat.wholenumber":           "Geben Sie eine ganze Zahl von Sekunden ein.",
			"admin.chat.updated":               "Zuletzt geändert",
			"admin.chat.yes":                   "Ja",
			"admin.chat.no":                    "Nein",
			"admin.chat.never":                 "Nie",
			"admin.chat.back":                  "Alle Server",
			"admin.chat.guild.title":           "Server",
			"admin.chat.guild.id":              "Plattform-ID",
			"admin.chat.guild.owner":           "Inhaber",
			"admin.chat.guild.premium":         "Premium-Stufe",
			"admin.chat.syncguild":             "Diesen Server abgleichen",
			"admin.chat.syncmembers":           "Mitglieder abgleichen",
			"admin.chat.memberssynced":         "Die Mitglieder wurden abgeglichen: Die Liste zeigt, was der Bot gemeldet hat.",
			"admin.chat.guildlanguage":         "Sprache dieses Servers",
			"admin.chat.guildlanguage.help":    "Ein Sprach-Tag wie en, de oder pt-BR. Leer lassen, um die Standardsprache des Bots (%s) zu verwenden.",
			"admin.chat.guildlanguage.default": "Die Standardsprache des Bots (%s).",
			"admin.chat.savelanguage":          "Sprache speichern",
			"admin.chat.languagesaved":         "Die Sprache des Servers wurde gespeichert.",
			"admin.chat.channels":              "Kanäle",
			"admin.chat.nochannels":            "Der Bot hat für diesen Server keine Kanäle gemeldet.",
			"admin.chat.col.channel":           "Kanal",
			"admin.chat.col.type":              "Art",
			"admin.chat.col.category":          "Kategorie",
			"admin.chat.col.position":          "Position",
			"admin.chat.nsfw":                  "Altersbeschränkt",
			"admin.chat.members":               "Mitglieder",
			"admin.chat.search":                "Suche",
			"admin.chat.search.help":           "Teil eines Benutzernamens, globalen Namens oder Spitznamens.",
			"admin.chat.hasrole":               "Rolle",
			"admin.chat.anyrole":               "Alle Rollen",
			"admin.chat.botsonly":              "Nur Bots",
			"admin.chat.humansonly":            "Nur Menschen",
			"admin.chat.filter":                "Mitglieder suchen",
			"admin.chat.apply":                 "Suchen",
			"admin.chat.clear":                 "Zurücksetzen",
			"admin.chat.count":                 "Mitglieder %d bis %d von %d",
			"admin.chat.nomembers":             "Keine Mitglieder gefunden.",
			"admin.chat.col.member":            "Mitglied",
			"admin.chat.col.roles":             "Rollen",
			"admin.chat.col.memberjoined":      "Beigetreten",
			"admin.chat.bot":                   "Bot",
			"admin.chat.timedout":              "Stummgeschaltet",
			"admin.chat.pending":               "Ausstehend",
			"admin.chat.pages":                 "Seiten der Mitglieder",
			"admin.chat.prev":                  "Vorherige Mitglieder",
			"admin.chat.next":                  "Weitere Mitglieder",
		},
	})
}
