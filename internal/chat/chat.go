package chat

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/httpx"
	"hmid/internal/realtime"
)

// Default sync timeouts (spec 3, Limits: guild sync 30 seconds; member sync 60).
const (
	DefaultSyncTimeout       = 30 * time.Second
	DefaultMemberSyncTimeout = 60 * time.Second
)

// DefaultCDN is the platform's CDN, used when HMID_CHATPLATFORM_CDN_URL is empty.
const DefaultCDN = "https://cdn.discordapp.com"

// Topics of the requests sent to the bot over the real-time channel.
const (
	TopicSync        = "chatplatform.sync"
	TopicMembersSync = "chatplatform.members.sync"
)

// Bot reaches the connected chat-platform bot (the real-time Hub implements it).
type Bot interface {
	Request(ctx context.Context, topic string, payload any) (json.RawMessage, error)
}

// Service holds the area's dependencies.
type Service struct {
	DB    *db.DB
	Clock clock.Clock
	Audit *audit.Writer
	Bot   Bot
	CDN   string // HMID_CHATPLATFORM_CDN_URL, without trailing slash

	SyncTimeout       time.Duration // zero means DefaultSyncTimeout
	MemberSyncTimeout time.Duration // zero means DefaultMemberSyncTimeout
}

// SyncWait is how long a guild sync waits for the bot's answer. The route
// table gives POST /v1/chatplatform/sync this much time on top of the
// request timeout.
func (s *Service) SyncWait() time.Duration { return or(s.SyncTimeout, DefaultSyncTimeout) }

// MemberSyncWait is how long a member sync waits for the bot's answer; the
// route table gives the member sync this much time on top of the request
// timeout.
func (s *Service) MemberSyncWait() time.Duration {
	return or(s.MemberSyncTimeout, DefaultMemberSyncTimeout)
}

// Handler serves the chat-platform endpoints.
type Handler struct{ S *Service }

// settingsID is the fixed id of the one bot-settings row.
var settingsID = uuid.NewSHA1(uuid.MustParse("6f1c2a44-4a3e-4f7e-9a59-0d7b1c7a3e10"), []byte("chatplatform:bot-settings")).String()

const guildCols = `id, guild_id, name, icon, owner_id, member_count, boost_count, premium_tier, bot_joined_at, last_synced_at`

func (s *Service) scanGuild(row db.Scanner) (Guild, error) {
	var g Guild
	var icon, owner sql.NullString
	var joined, synced db.NullTime
	err := row.Scan(&g.ID, &g.GuildID, &g.Name, &icon, &owner, &g.MemberCount, &g.BoostCount, &g.PremiumTier, &joined, &synced)
	g.Icon, g.OwnerID = db.StringPtr(icon), db.StringPtr(owner)
	g.IconURL = IconURL(s.CDN, g.GuildID, g.Icon)
	g.BotJoinedAt, g.LastSyncedAt = joined.Ptr(), synced.Ptr()
	return g, err
}

// Guild returns a stored guild by its platform id (snowflake), as GET
// /v1/chatplatform/guilds/{guild_id} serves it: 400 for an id that is not a
// snowflake, 404 for an unknown one.
func (s *Service) Guild(ctx context.Context, guildID string) (Guild, error) {
	if !validSnowflake(guildID) {
		return Guild{}, apperr.Invalid("guild_id must be a platform snowflake (decimal digits)")
	}
	g, err := s.scanGuild(s.DB.QueryRowContext(ctx, `SELECT `+guildCols+` FROM chat_guilds WHERE guild_id = $1`, guildID))
	return g, db.NotFoundOr(err, "guild")
}

// guildByID loads a stored guild by its internal UUID.
func (s *Service) guildByID(ctx context.Context, id string) (Guild, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Guild{}, apperr.NotFoundf("guild not found")
	}
	g, err := s.scanGuild(s.DB.QueryRowContext(ctx, `SELECT `+guildCols+` FROM chat_guilds WHERE id = $1`, id))
	return g, db.NotFoundOr(err, "guild")
}

// Channels lists the stored channels of g by position, then name.
func (s *Service) Channels(ctx context.Context, g Guild) ([]Channel, error) {
	scan := func(row db.Scanner) (Channel, error) {
		c := Channel{GuildID: g.GuildID}
		var parent, topic sql.NullString
		err := row.Scan(&c.ID, &c.ChannelID, &c.Name, &c.ChannelTypeRaw, &parent, &c.Position, &topic, &c.NSFW)
		c.ParentID, c.Topic = db.StringPtr(parent), db.StringPtr(topic)
		c.ChannelType = ChannelTypeName(c.ChannelTypeRaw)
		c.IsTextBased, c.IsVoice = IsTextBased(c.ChannelTypeRaw), IsVoice(c.ChannelTypeRaw)
		return c, err
	}
	return db.All(ctx, s.DB, scan, `SELECT id, channel_id, name, channel_type, parent_id, position, topic, nsfw
		FROM chat_channels WHERE guild_id = $1 ORDER BY position, name, channel_id`, g.ID)
}

// Guilds lists the stored guilds by name (GET /v1/chatplatform/guilds).
func (s *Service) Guilds(ctx context.Context) ([]Guild, error) {
	return db.All(ctx, s.DB, s.scanGuild, `SELECT `+guildCols+` FROM chat_guilds ORDER BY name, guild_id`)
}

// Roles lists the stored roles of g, highest first (the platform's order).
// No REST route serves them; the admin console names members' roles with them.
func (s *Service) Roles(ctx context.Context, g Guild) ([]Role, error) {
	return db.All(ctx, s.DB, func(row db.Scanner) (Role, error) {
		var r Role
		err := row.Scan(&r.RoleID, &r.Name, &r.Position)
		return r, err
	}, `SELECT role_id, name, position FROM chat_roles WHERE guild_id = $1 ORDER BY position DESC, name, role_id`, g.ID)
}

// ListGuilds serves GET /v1/chatplatform/guilds.
func (h *Handler) ListGuilds(w http.ResponseWriter, r *http.Request) {
	out, err := h.S.Guilds(r.Context())
	httpx.RespondJSON(w, r, http.StatusOK, map[string]any{"data": out}, err)
}

// GetGuild serves GET /v1/chatplatform/guilds/{guild_id} (snowflake).
func (h *Handler) GetGuild(w http.ResponseWriter, r *http.Request) {
	g, err := h.S.Guild(r.Context(), chi.URLParam(r, "guild_id"))
	httpx.RespondJSON(w, r, http.StatusOK, g, err)
}

// ListChannels serves GET /v1/chatplatform/guilds/{guild_id}/channels.
func (h *Handler) ListChannels(w http.ResponseWriter, r *http.Request) {
	_, chs, err := h.guildChannels(r)
	httpx.RespondJSON(w, r, http.StatusOK, map[string]any{"data": chs}, err)
}

// GetGuildFull serves GET /v1/chatplatform/guilds/{guild_id}/full: {guild, channels}.
func (h *Handler) GetGuildFull(w http.ResponseWriter, r *http.Request) {
	g, chs, err := h.guildChannels(r)
	httpx.RespondJSON(w, r, http.StatusOK, map[string]any{"guild": g, "channels": chs}, err)
}

// guildChannels loads the guild of the path's {guild_id} (snowflake) and its
// channels.
func (h *Handler) guildChannels(r *http.Request) (Guild, []Channel, error) {
	g, err := h.S.Guild(r.Context(), chi.URLParam(r, "guild_id"))
	if err != nil {
		return g, nil, err
	}
	chs, err := h.S.Channels(r.Context(), g)
	return g, chs, err
}

// storedGuild reads the stored guild of the path's {guild_id}, its internal
// UUID; on false the error is written and the handler returns.
func (h *Handler) storedGuild(w http.ResponseWriter, r *http.Request) (Guild, bool) {
	g, err := h.S.guildByID(r.Context(), chi.URLParam(r, "guild_id"))
	if err != nil {
		httpx.Error(w, r, err)
		return g, false
	}
	return g, true
}

// DeleteGuild serves DELETE /v1/chatplatform/guilds/{guild_id} (internal UUID):
// it removes the stored guild with its channels, roles and members only.
func (h *Handler) DeleteGuild(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	g, ok := h.storedGuild(w, r)
	if !ok {
		return
	}
	err := h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		// Children first: SQLite enforces the cascade only with foreign keys on, PostgreSQL always.
		for _, t := range []string{"chat_members", "chat_roles", "chat_channels"} {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+t+` WHERE guild_id = $1`, g.ID); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM chat_guilds WHERE id = $1`, g.ID)
		return err
	})
	httpx.RespondEmpty(w, r, err)
}

// ---- sync ----

// SyncResult is the answer of POST /v1/chatplatform/sync.
type SyncResult struct {
	Success        bool    `json:"success"`
	Error          *string `json:"error"`
	GuildsSynced   int     `json:"guilds_synced"`
	ChannelsSynced int     `json:"channels_synced"`
	RolesSynced    int     `json:"roles_synced"`
}

// MemberSyncResult is the answer of POST …/members/sync.
type MemberSyncResult struct {
	Success       bool    `json:"success"`
	Error         *string `json:"error"`
	MembersSynced int     `json:"members_synced"`
}

// BotGuild is a guild as the bot reports it.
type BotGuild struct {
	GuildID     string       `json:"guild_id"`
	Name        string       `json:"name"`
	Icon        *string      `json:"icon"`
	OwnerID     *string      `json:"owner_id"`
	MemberCount int          `json:"member_count"`
	BoostCount  int          `json:"boost_count"`
	PremiumTier int          `json:"premium_tier"`
	BotJoinedAt *time.Time   `json:"bot_joined_at"`
	Channels    []BotChannel `json:"channels"`
	Roles       []BotRole    `json:"roles"`
	Members     *[]BotMember `json:"members"` // optional; when present it replaces the stored members
}

// BotChannel is a channel as the bot reports it.
type BotChannel struct {
	ChannelID string  `json:"channel_id"`
	Name      string  `json:"name"`
	Type      int     `json:"type"`
	ParentID  *string `json:"parent_id"`
	Position  int     `json:"position"`
	Topic     *string `json:"topic"`
	NSFW      bool    `json:"nsfw"`
}

// BotRole is a role as the bot reports it.
type BotRole struct {
	RoleID      string `json:"role_id"`
	Name        string `json:"name"`
	Color       int    `json:"color"`
	Position    int    `json:"position"`
	Permissions string `json:"permissions"`
	Managed     bool   `json:"managed"`
	Mentionable bool   `json:"mentionable"`
	Hoist       bool   `json:"hoist"`
}

// BotMember is a member as the bot reports it.
type BotMember struct {
	UserID                     string     `json:"user_id"`
	Username                   string     `json:"username"`
	Discriminator              string     `json:"discriminator"`
	GlobalName                 *string    `json:"global_name"`
	Nickname                   *string    `json:"nickname"`
	Avatar                     *string    `json:"avatar"`
	Bot                        bool       `json:"bot"`
	System                     bool       `json:"system"`
	JoinedAt                   *time.Time `json:"joined_at"`
	PremiumSince               *time.Time `json:"premium_since"`
	Deaf                       bool       `json:"deaf"`
	Mute                       bool       `json:"mute"`
	Pending                    bool       `json:"pending"`
	CommunicationDisabledUntil *time.Time `json:"communication_disabled_until"`
	Roles                      []string   `json:"roles"`
}

// botAnswer is the payload of the bot's response to a sync request.
type botAnswer struct {
	Success bool         `json:"success"`
	Error   *string      `json:"error"`
	Guilds  []BotGuild   `json:"guilds"`
	Members *[]BotMember `json:"members"` // nil when the answer has no members field
}

// ask sends a request to the bot and decodes its answer, mapping "no bot"
// and "no answer in time" to 503.
func (s *Service) ask(ctx context.Context, topic string, payload any, timeout time.Duration) (botAnswer, error) {
	var ans botAnswer
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := s.Bot.Request(ctx, topic, payload)
	switch {
	case errors.Is(err, realtime.ErrNoBot):
		// The cause stays for NoBot; the answer shows only the message.
		e := apperr.Unavailablef("no chat-platform bot is connected to the real-time channel")
		e.Err = err
		return ans, e
	case errors.Is(err, context.DeadlineExceeded):
		return ans, apperr.Unavailablef("the chat-platform bot did not answer within %s", timeout)
	case err != nil:
		return ans, err
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return ans, apperr.Unavailablef("the chat-platform bot sent an answer that could not be read")
	}
	if !ans.Success && ans.Error == nil {
		msg := "the bot reported a failure"
		ans.Error = &msg
	}
	return ans, nil
}

func validateGuild(g BotGuild) error {
	if !validSnowflake(g.GuildID) || strings.TrimSpace(g.Name) == "" || g.PremiumTier < 0 || g.PremiumTier > 3 {
		return apperr.Unavailablef("the chat-platform bot reported an invalid guild")
	}
	for _, c := range g.Channels {
		if !validSnowflake(c.ChannelID) {
			return apperr.Unavailablef("the chat-platform bot reported an invalid channel")
		}
	}
	for _, r := range g.Roles {
		if !validSnowflake(r.RoleID) {
			return apperr.Unavailablef("the chat-platform bot reported an invalid role")
		}
	}
	if g.Members != nil {
		return validateMembers(*g.Members)
	}
	return nil
}

func validateMembers(ms []BotMember) error {
	for _, m := range ms {
		if !validSnowflake(m.UserID) || m.Username == "" {
			return apperr.Unavailablef("the chat-platform bot reported an invalid member")
		}
	}
	return nil
}

// NoBot reports whether err is the refusal of a sync because no bot is
// connected to the real-time channel (a 503, like a bot that does not answer
// in time, but one the operator fixes by starting the bot).
func NoBot(err error) bool { return errors.Is(err, realtime.ErrNoBot) }

// Sync asks the bot for its guilds (only the one with guildID, when not nil)
// and stores what it reports (POST /v1/chatplatform/sync). A bot that
// reports a failure is a result with Success false, not an error; no bot, no
// answer in time or an answer that cannot be stored is a 503.
func (s *Service) Sync(ctx context.Context, guildID *string) (SyncResult, error) {
	req := map[string]any{}
	if guildID != nil {
		if !validSnowflake(*guildID) {
			return SyncResult{}, apperr.Invalid("guild_id must be a platform snowflake (decimal digits)")
		}
		req["guild_id"] = *guildID
	}
	ans, err := s.ask(ctx, TopicSync, req, s.SyncWait())
	if err != nil {
		return SyncResult{}, err
	}
	res := SyncResult{Success: ans.Success, Error: ans.Error}
	if !ans.Success {
		return res, nil
	}
	for _, g := range ans.Guilds {
		if err := validateGuild(g); err != nil {
			return SyncResult{}, err
		}
	}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		for _, g := range ans.Guilds {
			if err := s.storeGuild(ctx, tx, g); err != nil {
				return err
			}
			res.GuildsSynced++
			res.ChannelsSynced += len(g.Channels)
			res.RolesSynced += len(g.Roles)
		}
		return nil
	})
	if err != nil {
		return SyncResult{}, err
	}
	return res, nil
}

// Sync serves POST /v1/chatplatform/sync: asks the bot for its guilds (one,
// with guild_id) and stores what it reports.
func (h *Handler) Sync(w http.ResponseWriter, r *http.Request) {
	var body struct {
		GuildID *string `json:"guild_id"`
	}
	if err := httpx.DecodeOptional(r, &body); err != nil {
		httpx.Error(w, r, err)
		return
	}
	res, err := h.S.Sync(r.Context(), body.GuildID)
	httpx.RespondJSON(w, r, http.StatusOK, res, err)
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// storeGuild upserts a reported guild and replaces its channels and roles
// (and members, when reported), keeping the internal ids of rows that stay.
func (s *Service) storeGuild(ctx context.Context, tx *db.Tx, g BotGuild) error {
	now := db.TS(s.Clock.Now())
	var id string
	err := tx.QueryRowContext(ctx, `INSERT INTO chat_guilds (id, guild_id, name, icon, owner_id, member_count, boost_count, premium_tier, bot_joined_at, last_synced_at, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $10)
		ON CONFLICT (guild_id) DO UPDATE SET name = excluded.name, icon = excluded.icon, owner_id = excluded.owner_id,
			member_count = excluded.member_count, boost_count = excluded.boost_count, premium_tier = excluded.premium_tier,
			bot_joined_at = excluded.bot_joined_at, last_synced_at = excluded.last_synced_at, updated_at = excluded.updated_at
		RETURNING id`,
		uuid.NewString(), g.GuildID, g.Name, g.Icon, g.OwnerID, g.MemberCount, g.BoostCount, g.PremiumTier, db.NullTS(g.BotJoinedAt), now).Scan(&id)
	if err != nil {
		return err
	}
	keepCh := make([]string, 0, len(g.Channels))
	for _, c := range g.Channels {
		if _, err := tx.ExecContext(ctx, `INSERT INTO chat_channels (id, guild_id, channel_id, name, channel_type, parent_id, position, topic, nsfw)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (guild_id, channel_id) DO UPDATE SET name = excluded.name, channel_type = excluded.channel_type,
				parent_id = excluded.parent_id, position = excluded.position, topic = excluded.topic, nsfw = excluded.nsfw`,
			uuid.NewString(), id, c.ChannelID, c.Name, c.Type, c.ParentID, c.Position, c.Topic, c.NSFW); err != nil {
			return err
		}
		keepCh = append(keepCh, c.ChannelID)
	}
	if err := deleteMissing(ctx, tx, "chat_channels", "channel_id", id, keepCh); err != nil {
		return err
	}
	keepRoles := make([]string, 0, len(g.Roles))
	for _, rl := range g.Roles {
		perms := rl.Permissions
		if perms == "" {
			perms = "0"
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO chat_roles (id, guild_id, role_id, name, color, position, permissions, managed, mentionable, hoist)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (guild_id, role_id) DO UPDATE SET name = excluded.name, color = excluded.color, position = excluded.position,
				permissions = excluded.permissions, managed = excluded.managed, mentionable = excluded.mentionable, hoist = excluded.hoist`,
			uuid.NewString(), id, rl.RoleID, rl.Name, rl.Color, rl.Position, perms, rl.Managed, rl.Mentionable, rl.Hoist); err != nil {
			return err
		}
		keepRoles = append(keepRoles, rl.RoleID)
	}
	if err := deleteMissing(ctx, tx, "chat_roles", "role_id", id, keepRoles); err != nil {
		return err
	}
	if g.Members != nil {
		return storeMembers(ctx, tx, id, *g.Members)
	}
	return nil
}

// storeMembers replaces the stored members of guild id with ms.
func storeMembers(ctx context.Context, tx *db.Tx, id string, ms []BotMember) error {
	keep := make([]string, 0, len(ms))
	for _, m := range ms {
		disc := m.Discriminator
		if disc == "" {
			disc = "0"
		}
		roles := m.Roles
		if roles == nil {
			roles = []string{}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO chat_members (id, guild_id, user_id, username, discriminator, global_name, nickname, avatar,
				bot, system, joined_at, premium_since, deaf, mute, pending, communication_disabled_until, roles)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
			ON CONFLICT (guild_id, user_id) DO UPDATE SET username = excluded.username, discriminator = excluded.discriminator,
				global_name = excluded.global_name, nickname = excluded.nickname, avatar = excluded.avatar, bot = excluded.bot,
				system = excluded.system, joined_at = excluded.joined_at, premium_since = excluded.premium_since, deaf = excluded.deaf,
				mute = excluded.mute, pending = excluded.pending, communication_disabled_until = excluded.communication_disabled_until,
				roles = excluded.roles`,
			uuid.NewString(), id, m.UserID, m.Username, disc, m.GlobalName, m.Nickname, m.Avatar, m.Bot, m.System,
			db.NullTS(m.JoinedAt), db.NullTS(m.PremiumSince), m.Deaf, m.Mute, m.Pending, db.NullTS(m.CommunicationDisabledUntil), db.JSON(roles)); err != nil {
			return err
		}
		keep = append(keep, m.UserID)
	}
	return deleteMissing(ctx, tx, "chat_members", "user_id", id, keep)
}

// deleteMissing removes the guild's rows of table whose key column is not in keep.
func deleteMissing(ctx context.Context, tx *db.Tx, table, col, guildID string, keep []string) error {
	stored, err := db.All(ctx, tx, db.ScanString, `SELECT `+col+` FROM `+table+` WHERE guild_id = $1`, guildID)
	if err != nil {
		return err
	}
	set := make(map[string]bool, len(keep))
	for _, k := range keep {
		set[k] = true
	}
	for _, k := range stored {
		if set[k] {
			continue
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE guild_id = $1 AND `+col+` = $2`, guildID, k); err != nil {
			return err
		}
	}
	return nil
}

// SyncMembers asks the bot for the members of the guild with the platform
// id guildID and replaces the stored ones with them (POST
// /v1/chatplatform/guilds/{guild_id}/members/sync).
func (s *Service) SyncMembers(ctx context.Context, guildID string) (MemberSyncResult, error) {
	g, err := s.Guild(ctx, guildID)
	if err != nil {
		return MemberSyncResult{}, err
	}
	ans, err := s.ask(ctx, TopicMembersSync, map[string]any{"guild_id": g.GuildID}, s.MemberSyncWait())
	if err != nil {
		return MemberSyncResult{}, err
	}
	res := MemberSyncResult{Success: ans.Success, Error: ans.Error}
	if !ans.Success {
		return res, nil
	}
	// A success without a members list is an answer that cannot be
	// read, not an empty guild: storing it would delete every member.
	if ans.Members == nil {
		return MemberSyncResult{}, apperr.Unavailablef("the chat-platform bot answered the member sync without members")
	}
	members := *ans.Members
	if err := validateMembers(members); err != nil {
		return MemberSyncResult{}, err
	}
	err = s.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := storeMembers(ctx, tx, g.ID, members); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE chat_guilds SET last_synced_at = $1 WHERE id = $2`, db.TS(s.Clock.Now()), g.ID)
		return err
	})
	if err != nil {
		return MemberSyncResult{}, err
	}
	res.MembersSynced = len(members)
	return res, nil
}

// SyncMembers serves POST /v1/chatplatform/guilds/{guild_id}/members/sync (snowflake).
func (h *Handler) SyncMembers(w http.ResponseWriter, r *http.Request) {
	res, err := h.S.SyncMembers(r.Context(), chi.URLParam(r, "guild_id"))
	httpx.RespondJSON(w, r, http.StatusOK, res, err)
}

// ---- members ----

const memberCols = `id, guild_id, user_id, username, discriminator, global_name, nickname, avatar, bot, system, joined_at,
	premium_since, deaf, mute, pending, communication_disabled_until, roles`

func (s *Service) scanMember(row db.Scanner, now time.Time) (Member, error) {
	var m Member
	var global, nick, avatar sql.NullString
	var joined, premium, timeout db.NullTime
	var roles db.Strings
	err := row.Scan(&m.ID, &m.GuildID, &m.UserID, &m.Username, &m.Discriminator, &global, &nick, &avatar, &m.Bot, &m.System,
		&joined, &premium, &m.Deaf, &m.Mute, &m.Pending, &timeout, &roles)
	m.GlobalName, m.Nickname, m.Avatar = db.StringPtr(global), db.StringPtr(nick), db.StringPtr(avatar)
	m.JoinedAt, m.PremiumSince, m.CommunicationDisabledUntil = joined.Ptr(), premium.Ptr(), timeout.Ptr()
	m.Roles = roles
	if m.Roles == nil {
		m.Roles = []string{}
	}
	m.AvatarURL = AvatarURL(s.CDN, m.UserID, m.Discriminator, m.Avatar)
	m.DisplayName = DisplayName(m.Username, m.GlobalName, m.Nickname)
	m.FormattedUsername = FormattedUsername(m.Username, m.Discriminator)
	m.IsTimedOut = timeout.Valid && timeout.Time.After(now)
	return m, err
}

func parseBool(q, name string) (bool, error) {
	switch strings.ToLower(q) {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	}
	return false, apperr.OnField(name, apperr.Invalid("%s must be true or false", name))
}

// MemberQuery selects members of a guild: the query parameters of GET
// /v1/chatplatform/guilds/{guild_id}/members as sent (the booleans as text,
// checked by Members), with limit and offset already bounded.
type MemberQuery struct {
	Search     string // part of the username, global name or nickname, any case
	BotOnly    string // "true"/"1" or "false"/"0"/""
	HumansOnly string
	HasRole    string // a role snowflake, "" for any
	Limit      int
	Offset     int
}

// MemberPage is one page of a guild's members.
type MemberPage struct {
	Members    []Member
	TotalCount int
	HasMore    bool
}

// Members lists the members of the guild with the internal id guildID that
// match q, by username (GET /v1/chatplatform/guilds/{guild_id}/members).
func (s *Service) Members(ctx context.Context, guildID string, q MemberQuery) (MemberPage, error) {
	g, err := s.guildByID(ctx, guildID)
	if err != nil {
		return MemberPage{}, err
	}
	botOnly, err := parseBool(q.BotOnly, "bot_only")
	if err != nil {
		return MemberPage{}, err
	}
	humansOnly, err := parseBool(q.HumansOnly, "humans_only")
	if err != nil {
		return MemberPage{}, err
	}
	if botOnly && humansOnly {
		return MemberPage{}, apperr.Invalid("bot_only and humans_only cannot both be true")
	}
	where := []string{"guild_id = $1"}
	args := []any{g.ID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if term := strings.TrimSpace(q.Search); term != "" {
		p := arg("%" + db.Like(strings.ToLower(term)) + "%")
		where = append(where, `(LOWER(username) LIKE `+p+` ESCAPE '\' OR LOWER(COALESCE(global_name, '')) LIKE `+p+` ESCAPE '\' OR LOWER(COALESCE(nickname, '')) LIKE `+p+` ESCAPE '\')`)
	}
	if botOnly {
		where = append(where, "bot = TRUE")
	}
	if humansOnly {
		where = append(where, "bot = FALSE")
	}
	if role := q.HasRole; role != "" {
		if !validSnowflake(role) {
			return MemberPage{}, apperr.OnField("has_role", apperr.Invalid("has_role must be a role snowflake"))
		}
		// Roles are a JSON array of digit strings, so the quoted id matches exactly one element.
		where = append(where, "roles LIKE "+arg(`%"`+role+`"%`))
	}
	cond := strings.Join(where, " AND ")
	var total int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM chat_members WHERE `+cond, args...).Scan(&total); err != nil {
		return MemberPage{}, err
	}
	lp, op := arg(q.Limit), arg(q.Offset)
	now := s.Clock.Now()
	out, err := db.All(ctx, s.DB, func(row db.Scanner) (Member, error) { return s.scanMember(row, now) },
		`SELECT `+memberCols+` FROM chat_members WHERE `+cond+` ORDER BY LOWER(username), user_id LIMIT `+lp+` OFFSET `+op, args...)
	if err != nil {
		return MemberPage{}, err
	}
	return MemberPage{Members: out, TotalCount: total, HasMore: q.Offset+len(out) < total}, nil
}

// ListMembers serves GET /v1/chatplatform/guilds/{guild_id}/members (internal UUID).
func (h *Handler) ListMembers(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, offset := httpx.ParseLimitOffset(r, 50)
	page, err := h.S.Members(r.Context(), chi.URLParam(r, "guild_id"), MemberQuery{Search: q.Get("search"),
		BotOnly: q.Get("bot_only"), HumansOnly: q.Get("humans_only"), HasRole: q.Get("has_role"), Limit: limit, Offset: offset})
	httpx.RespondJSON(w, r, http.StatusOK, map[string]any{"members": page.Members, "total_count": page.TotalCount, "has_more": page.HasMore}, err)
}

// GetMember serves GET /v1/chatplatform/guilds/{guild_id}/members/{user_id}.
func (h *Handler) GetMember(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	g, ok := h.storedGuild(w, r)
	if !ok {
		return
	}
	uid := chi.URLParam(r, "user_id")
	if !validSnowflake(uid) {
		httpx.Error(w, r, apperr.Invalid("user_id must be a platform snowflake (decimal digits)"))
		return
	}
	m, err := h.S.scanMember(h.S.DB.QueryRowContext(ctx, `SELECT `+memberCols+` FROM chat_members WHERE guild_id = $1 AND user_id = $2`, g.ID, uid), h.S.Clock.Now())
	httpx.RespondJSON(w, r, http.StatusOK, m, db.NotFoundOr(err, "member"))
}

// ---- settings ----

// langTag is a BCP 47 language tag in the short forms bots use (en, de, pt-BR).
var langTag = regexp.MustCompile(`^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8}){0,2}$`)

func (s *Service) settings(ctx context.Context, q db.Querier) (BotSettings, error) {
	if _, err := q.ExecContext(ctx, `INSERT INTO chat_bot_settings (id, auto_sync_enabled, sync_interval_seconds, initial_delay_seconds,
		default_language, notify_on_guild_join, notify_on_guild_leave, command_cooldown_seconds, updated_at)
		VALUES ($1, TRUE, 3600, 10, 'en', TRUE, TRUE, 3, $2) ON CONFLICT DO NOTHING`, settingsID, db.TS(s.Clock.Now())); err != nil {
		return BotSettings{}, err
	}
	var b BotSettings
	var u int64
	err := q.QueryRowContext(ctx, `SELECT id, auto_sync_enabled, sync_interval_seconds, initial_delay_seconds, default_language,
		notify_on_guild_join, notify_on_guild_leave, command_cooldown_seconds, updated_at FROM chat_bot_settings WHERE id = $1`, settingsID).
		Scan(&b.ID, &b.AutoSyncEnabled, &b.SyncIntervalSeconds, &b.InitialDelaySeconds, &b.DefaultLanguage,
			&b.NotifyOnGuildJoin, &b.NotifyOnGuildLeave, &b.CommandCooldownSeconds, &u)
	b.UpdatedAt = db.FromTS(u)
	return b, err
}

// Settings returns the bot's settings, the defaults until they are first
// changed (GET /v1/chatplatform/settings).
func (s *Service) Settings(ctx context.Context) (BotSettings, error) {
	var b BotSettings
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		var err error
		b, err = s.settings(ctx, tx)
		return err
	})
	return b, err
}

// GetSettings serves GET /v1/chatplatform/settings.
func (h *Handler) GetSettings(w http.ResponseWriter, r *http.Request) {
	b, err := h.S.Settings(r.Context())
	httpx.RespondJSON(w, r, http.StatusOK, b, err)
}

// SettingsChange is the body of PUT /v1/chatplatform/settings: the fields
// to change; id and updated_at are refused (they cannot be changed).
type SettingsChange struct {
	ID                     json.RawMessage `json:"id"`
	UpdatedAt              json.RawMessage `json:"updated_at"`
	AutoSyncEnabled        *bool           `json:"auto_sync_enabled"`
	SyncIntervalSeconds    *int            `json:"sync_interval_seconds"`
	InitialDelaySeconds    *int            `json:"initial_delay_seconds"`
	DefaultLanguage        *string         `json:"default_language"`
	NotifyOnGuildJoin      *bool           `json:"notify_on_guild_join"`
	NotifyOnGuildLeave     *bool           `json:"notify_on_guild_leave"`
	CommandCooldownSeconds *int            `json:"command_cooldown_seconds"`
}

func checkRange(name string, v *int, lo, hi int) error {
	if v != nil && (*v < lo || *v > hi) {
		return apperr.OnField(name, apperr.Invalid("%s must be between %d and %d", name, lo, hi))
	}
	return nil
}

// UpdateSettings changes the bot settings named in in, audited as
// bot_guild_configured by p with the request details of ev (PUT
// /v1/chatplatform/settings). Nothing changes when a field is out of range.
func (s *Service) UpdateSettings(ctx context.Context, p *authn.Principal, in SettingsChange, ev audit.Event) error {
	if in.ID != nil || in.UpdatedAt != nil {
		return apperr.Invalid("id and updated_at cannot be changed")
	}
	for _, err := range []error{
		checkRange("sync_interval_seconds", in.SyncIntervalSeconds, 60, 7*86400),
		checkRange("initial_delay_seconds", in.InitialDelaySeconds, 0, 86400),
		checkRange("command_cooldown_seconds", in.CommandCooldownSeconds, 0, 86400),
	} {
		if err != nil {
			return err
		}
	}
	if in.DefaultLanguage != nil && !langTag.MatchString(*in.DefaultLanguage) {
		return apperr.OnField("default_language", apperr.Invalid("default_language must be a language tag such as en or pt-BR"))
	}
	var set []string
	var args []any
	add := func(col string, v any) {
		args = append(args, v)
		set = append(set, col+" = $"+strconv.Itoa(len(args)))
	}
	changed := map[string]any{}
	for _, f := range []struct {
		col string
		v   any // nil: not given
	}{
		{"auto_sync_enabled", deref(in.AutoSyncEnabled)}, {"sync_interval_seconds", deref(in.SyncIntervalSeconds)},
		{"initial_delay_seconds", deref(in.InitialDelaySeconds)}, {"default_language", deref(in.DefaultLanguage)},
		{"notify_on_guild_join", deref(in.NotifyOnGuildJoin)}, {"notify_on_guild_leave", deref(in.NotifyOnGuildLeave)},
		{"command_cooldown_seconds", deref(in.CommandCooldownSeconds)},
	} {
		if f.v != nil {
			add(f.col, f.v)
			changed[f.col] = f.v
		}
	}
	if len(set) == 0 {
		return apperr.Invalid("give at least one settings field to change")
	}
	add("updated_at", db.TS(s.Clock.Now()))
	args = append(args, settingsID)
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := s.settings(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE chat_bot_settings SET `+strings.Join(set, ", ")+` WHERE id = $`+strconv.Itoa(len(args)), args...); err != nil {
			return err
		}
		ev.UserID, ev.EventType, ev.ResourceType, ev.ResourceID = p.UserID, audit.BotGuildConfigured, "chatplatform_settings", settingsID
		ev.Description, ev.Metadata = "Chat-platform bot settings changed", changed
		_, err := s.Audit.Record(ctx, tx, ev)
		return err
	})
}

// deref returns the value v points to, or nil when v is nil.
func deref[T any](v *T) any {
	if v == nil {
		return nil
	}
	return *v
}

// PutSettings serves PUT /v1/chatplatform/settings: any subset of the fields.
func (h *Handler) PutSettings(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var in SettingsChange
	if !httpx.Bind(w, r, &in) {
		return
	}
	err := h.S.UpdateSettings(ctx, authn.From(ctx), in, audit.FromRequest(r, audit.Event{}))
	httpx.RespondJSON(w, r, http.StatusOK, map[string]any{"success": true}, err)
}

// GuildSettings returns the settings of the guild with the platform id
// guildID; a guild never configured has the defaults (GET
// /v1/chatplatform/guilds/{guild_id}/settings).
func (s *Service) GuildSettings(ctx context.Context, guildID string) (GuildSettings, error) {
	if !validSnowflake(guildID) {
		return GuildSettings{}, apperr.Invalid("guild_id must be a platform snowflake (decimal digits)")
	}
	var lang sql.NullString
	err := s.DB.QueryRowContext(ctx, `SELECT default_language FROM chat_guild_settings WHERE guild_id = $1`, guildID).Scan(&lang)
	if errors.Is(err, sql.ErrNoRows) {
		// No settings yet: the guild's defaults, if the guild is known.
		if _, err := s.Guild(ctx, guildID); err != nil {
			return GuildSettings{}, err
		}
	} else if err != nil {
		return GuildSettings{}, err
	}
	return GuildSettings{GuildID: guildID, DefaultLanguage: db.StringPtr(lang)}, nil
}

// GetGuildSettings serves GET /v1/chatplatform/guilds/{guild_id}/settings (snowflake).
func (h *Handler) GetGuildSettings(w http.ResponseWriter, r *http.Request) {
	gs, err := h.S.GuildSettings(r.Context(), chi.URLParam(r, "guild_id"))
	httpx.RespondJSON(w, r, http.StatusOK, gs, err)
}

// SetGuildLanguage sets the default language of guild g (a language tag;
// null, not set, is refused; a set null means the global default), audited
// as bot_guild_configured by p with the request details of ev (PUT
// /v1/chatplatform/guilds/{guild_id}/settings).
func (s *Service) SetGuildLanguage(ctx context.Context, p *authn.Principal, g Guild, language httpx.Opt[string], ev audit.Event) error {
	if !language.Set {
		return apperr.OnField("default_language", apperr.Invalid("default_language is required (a language tag, or null for the global default)"))
	}
	lang := language.Ptr()
	if lang != nil && !langTag.MatchString(*lang) {
		return apperr.OnField("default_language", apperr.Invalid("default_language must be a language tag such as en or pt-BR, or null"))
	}
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO chat_guild_settings (guild_id, default_language, updated_at) VALUES ($1, $2, $3)
			ON CONFLICT (guild_id) DO UPDATE SET default_language = excluded.default_language, updated_at = excluded.updated_at`,
			g.GuildID, lang, db.TS(s.Clock.Now())); err != nil {
			return err
		}
		ev.UserID, ev.EventType, ev.ResourceType, ev.ResourceID = p.UserID, audit.BotGuildConfigured, "chatplatform_guild", g.GuildID
		ev.Description, ev.Metadata = "Chat-platform guild settings changed", map[string]any{"guild_id": g.GuildID, "default_language": lang}
		_, err := s.Audit.Record(ctx, tx, ev)
		return err
	})
}

// PutGuildSettings serves PUT /v1/chatplatform/guilds/{guild_id}/settings: {default_language: string or null}.
func (h *Handler) PutGuildSettings(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	g, err := h.S.Guild(ctx, chi.URLParam(r, "guild_id"))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	var in struct {
		DefaultLanguage httpx.Opt[string] `json:"default_language"`
	}
	if !httpx.Bind(w, r, &in) {
		return
	}
	err = h.S.SetGuildLanguage(ctx, authn.From(ctx), g, in.DefaultLanguage, audit.FromRequest(r, audit.Event{}))
	httpx.RespondJSON(w, r, http.StatusOK, map[string]any{"success": true}, err)
}
