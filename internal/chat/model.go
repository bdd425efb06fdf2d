// Package chat manages the chat-platform bot's data (spec 3, Chat-platform bot
// management): the guilds, channels, roles and members the bot reports, the
// bot's settings and per-guild settings. The platform is Discord-like
// (snowflake ids, guilds); the bot is reached over the real-time channel,
// which carries sync requests to it and its answers back.
package chat

import (
	"strconv"
	"strings"
	"time"
)

// Guild is a stored guild as served.
type Guild struct {
	ID           string     `json:"id"`
	GuildID      string     `json:"guild_id"`
	Name         string     `json:"name"`
	Icon         *string    `json:"icon"`
	IconURL      *string    `json:"icon_url"`
	OwnerID      *string    `json:"owner_id"`
	MemberCount  int        `json:"member_count"`
	BoostCount   int        `json:"boost_count"`
	PremiumTier  int        `json:"premium_tier"`
	BotJoinedAt  *time.Time `json:"bot_joined_at"`
	LastSyncedAt *time.Time `json:"last_synced_at"`
}

// Channel is a stored channel as served; guild_id is the guild's snowflake.
type Channel struct {
	ID             string  `json:"id"`
	ChannelID      string  `json:"channel_id"`
	GuildID        string  `json:"guild_id"`
	Name           string  `json:"name"`
	ChannelType    string  `json:"channel_type"`
	ChannelTypeRaw int     `json:"channel_type_raw"`
	ParentID       *string `json:"parent_id"`
	Position       int     `json:"position"`
	Topic          *string `json:"topic"`
	NSFW           bool    `json:"nsfw"`
	IsTextBased    bool    `json:"is_text_based"`
	IsVoice        bool    `json:"is_voice"`
}

// Role is a stored role of a guild, as the bot reported it.
type Role struct {
	RoleID   string
	Name     string
	Position int
}

// Member is a stored guild member as served: the member as the bot
// reported it, with its row id, the guild's internal UUID as guild_id, and
// the names and avatar URL derived from it.
type Member struct {
	ID      string `json:"id"`
	GuildID string `json:"guild_id"`
	BotMember
	AvatarURL         string `json:"avatar_url"`
	DisplayName       string `json:"display_name"`
	FormattedUsername string `json:"formatted_username"`
	IsTimedOut        bool   `json:"is_timed_out"`
}

// BotSettings are the bot's global settings.
type BotSettings struct {
	ID                     string    `json:"id"`
	AutoSyncEnabled        bool      `json:"auto_sync_enabled"`
	SyncIntervalSeconds    int       `json:"sync_interval_seconds"`
	InitialDelaySeconds    int       `json:"initial_delay_seconds"`
	DefaultLanguage        string    `json:"default_language"`
	NotifyOnGuildJoin      bool      `json:"notify_on_guild_join"`
	NotifyOnGuildLeave     bool      `json:"notify_on_guild_leave"`
	CommandCooldownSeconds int       `json:"command_cooldown_seconds"`
	UpdatedAt              time.Time `json:"updated_at"`
}

// GuildSettings are one guild's settings; a null language means the global default.
type GuildSettings struct {
	GuildID         string  `json:"guild_id"`
	DefaultLanguage *string `json:"default_language"`
}

// channelTypes names the platform's raw channel types (spec 3, Channel).
var channelTypes = map[int]string{
	0: "Text", 2: "Voice", 4: "Category", 5: "Announcement", 10: "Announcement Thread",
	11: "Public Thread", 12: "Private Thread", 13: "Stage", 15: "Forum", 16: "Media",
}

// ChannelTypeName returns the name of a raw channel type ("Unknown" for others).
func ChannelTypeName(raw int) string {
	if n, ok := channelTypes[raw]; ok {
		return n
	}
	return "Unknown"
}

// IsTextBased reports whether messages are posted directly in channels of
// the raw type: text, announcement and the three thread kinds. Forum and
// media channels hold threads, not messages.
func IsTextBased(raw int) bool {
	switch raw {
	case 0, 5, 10, 11, 12:
		return true
	}
	return false
}

// IsVoice reports whether the raw type is a voice or stage channel.
func IsVoice(raw int) bool { return raw == 2 || raw == 13 }

// imageURL builds a CDN image URL: animated hashes (a_ prefix) are GIFs.
func imageURL(cdn, kind, owner, hash string) string {
	ext := ".png"
	if strings.HasPrefix(hash, "a_") {
		ext = ".gif"
	}
	return cdn + "/" + kind + "/" + owner + "/" + hash + ext
}

// IconURL is the guild icon's URL: <cdn>/icons/<guild_id>/<icon>.png (.gif when animated).
func IconURL(cdn, guildID string, icon *string) *string {
	if icon == nil || *icon == "" {
		return nil
	}
	u := imageURL(cdn, "icons", guildID, *icon)
	return &u
}

// AvatarURL is the member's avatar URL; without an avatar it is the
// platform's default avatar: index (user_id >> 22) % 6 for users without a
// discriminator, discriminator % 5 for legacy ones.
func AvatarURL(cdn, userID, discriminator string, avatar *string) string {
	if avatar != nil && *avatar != "" {
		return imageURL(cdn, "avatars", userID, *avatar)
	}
	idx := uint64(0)
	if discriminator == "" || discriminator == "0" {
		id, _ := strconv.ParseUint(userID, 10, 64)
		idx = (id >> 22) % 6
	} else {
		d, _ := strconv.ParseUint(discriminator, 10, 64)
		idx = d % 5
	}
	return cdn + "/embed/avatars/" + strconv.FormatUint(idx, 10) + ".png"
}

// DisplayName is the nickname, else the global name, else the username.
func DisplayName(username string, global, nick *string) string {
	if nick != nil && *nick != "" {
		return *nick
	}
	if global != nil && *global != "" {
		return *global
	}
	return username
}

// FormattedUsername is username#discriminator for legacy names, else @username.
func FormattedUsername(username, discriminator string) string {
	if discriminator != "" && discriminator != "0" {
		return username + "#" + discriminator
	}
	return "@" + username
}

// validSnowflake accepts a platform id: 1 to 20 decimal digits.
func validSnowflake(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
