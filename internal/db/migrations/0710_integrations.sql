-- Streaming-platform integrations (spec 3, Platform integrations). Access and
-- refresh tokens are sealed with the server key (AES-256-GCM) before storage.
CREATE TABLE integrations (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    platform_slug TEXT NOT NULL,
    platform_user_id TEXT NOT NULL,
    username TEXT NOT NULL,
    display_name TEXT,
    profile_image_url TEXT,
    scopes TEXT NOT NULL DEFAULT '[]',
    access_token TEXT NOT NULL,
    refresh_token TEXT,
    token_expires_at BIGINT,
    is_active BOOLEAN NOT NULL DEFAULT TRUE,
    bot_status TEXT NOT NULL DEFAULT 'active',
    connected_at BIGINT NOT NULL,
    last_refreshed_at BIGINT,
    updated_at BIGINT NOT NULL,
    UNIQUE (user_id, platform_slug, platform_user_id)
);

CREATE INDEX integrations_user ON integrations (user_id, platform_slug);
