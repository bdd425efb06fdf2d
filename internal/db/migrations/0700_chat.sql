-- Chat-platform bot management (spec 3) and the real-time channel's deployment name.
-- Guilds, channels, roles and members are what the bot last reported; ids
-- are internal UUIDs, the platform's snowflakes are kept as text.
CREATE TABLE chat_guilds (
    id TEXT PRIMARY KEY,
    guild_id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    icon TEXT,
    owner_id TEXT,
    member_count INTEGER NOT NULL DEFAULT 0,
    boost_count INTEGER NOT NULL DEFAULT 0,
    premium_tier INTEGER NOT NULL DEFAULT 0,
    bot_joined_at BIGINT,
    last_synced_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE chat_channels (
    id TEXT PRIMARY KEY,
    guild_id TEXT NOT NULL REFERENCES chat_guilds(id) ON DELETE CASCADE,
    channel_id TEXT NOT NULL,
    name TEXT NOT NULL,
    channel_type INTEGER NOT NULL,
    parent_id TEXT,
    position INTEGER NOT NULL DEFAULT 0,
    topic TEXT,
    nsfw BOOLEAN NOT NULL DEFAULT FALSE,
    UNIQUE (guild_id, channel_id)
);

CREATE TABLE chat_roles (
    id TEXT PRIMARY KEY,
    guild_id TEXT NOT NULL REFERENCES chat_guilds(id) ON DELETE CASCADE,
    role_id TEXT NOT NULL,
    name TEXT NOT NULL,
    color INTEGER NOT NULL DEFAULT 0,
    position INTEGER NOT NULL DEFAULT 0,
    permissions TEXT NOT NULL DEFAULT '0',
    managed BOOLEAN NOT NULL DEFAULT FALSE,
    mentionable BOOLEAN NOT NULL DEFAULT FALSE,
    hoist BOOLEAN NOT NULL DEFAULT FALSE,
    UNIQUE (guild_id, role_id)
);

CREATE TABLE chat_members (
    id TEXT PRIMARY KEY,
    guild_id TEXT NOT NULL REFERENCES chat_guilds(id) ON DELETE CASCADE,
    user_id TEXT NOT NULL,
    username TEXT NOT NULL,
    discriminator TEXT NOT NULL DEFAULT '0',
    global_name TEXT,
    nickname TEXT,
    avatar TEXT,
    bot BOOLEAN NOT NULL DEFAULT FALSE,
    system BOOLEAN NOT NULL DEFAULT FALSE,
    joined_at BIGINT,
    premium_since BIGINT,
    deaf BOOLEAN NOT NULL DEFAULT FALSE,
    mute BOOLEAN NOT NULL DEFAULT FALSE,
    pending BOOLEAN NOT NULL DEFAULT FALSE,
    communication_disabled_until BIGINT,
    roles TEXT NOT NULL DEFAULT '[]',
    UNIQUE (guild_id, user_id)
);

CREATE INDEX chat_members_guild ON chat_members (guild_id, username);

-- Guild settings are keyed by snowflake so they survive deleting and re-syncing the guild.
CREATE TABLE chat_guild_settings (
    guild_id TEXT PRIMARY KEY,
    default_language TEXT,
    updated_at BIGINT NOT NULL
);

CREATE TABLE chat_bot_settings (
    id TEXT PRIMARY KEY,
    auto_sync_enabled BOOLEAN NOT NULL,
    sync_interval_seconds INTEGER NOT NULL,
    initial_delay_seconds INTEGER NOT NULL,
    default_language TEXT NOT NULL,
    notify_on_guild_join BOOLEAN NOT NULL,
    notify_on_guild_leave BOOLEAN NOT NULL,
    command_cooldown_seconds INTEGER NOT NULL,
    updated_at BIGINT NOT NULL
);

-- Names shared by every instance of one deployment (the real-time channel's
-- Redis pub/sub namespace lives here, so instances on one database meet).
CREATE TABLE realtime_state (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
