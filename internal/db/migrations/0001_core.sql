-- Core schema: platforms, users, platform accounts, sessions, roles,
-- permissions, API keys, bans and the audit log. Portable DDL for SQLite and
-- PostgreSQL: ids TEXT, timestamps BIGINT Unix microseconds, JSON as TEXT.

CREATE TABLE platforms (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    slug TEXT NOT NULL UNIQUE,
    is_oauth BOOLEAN NOT NULL DEFAULT FALSE,
    enabled BOOLEAN NOT NULL DEFAULT TRUE,
    two_factor_supported BOOLEAN NOT NULL DEFAULT FALSE,
    two_factor_required BOOLEAN NOT NULL DEFAULT FALSE,
    registration_enabled BOOLEAN NOT NULL DEFAULT TRUE,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE users (
    id TEXT PRIMARY KEY,
    username TEXT NOT NULL,
    email TEXT,
    name TEXT NOT NULL DEFAULT '',
    avatar_url TEXT,
    is_super_admin BOOLEAN NOT NULL DEFAULT FALSE,
    privacy_mode BOOLEAN NOT NULL DEFAULT FALSE,
    preferred_locale TEXT,
    avatars_enabled BOOLEAN NOT NULL DEFAULT TRUE,
    primary_platform_account_id TEXT,
    last_login_provider TEXT,
    last_login_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    deleted_at BIGINT,
    scheduled_deletion_at BIGINT
);
CREATE UNIQUE INDEX users_username_lower ON users (LOWER(username));
CREATE INDEX users_email_lower ON users (LOWER(email));
CREATE INDEX users_created_at ON users (created_at, id);
CREATE INDEX users_scheduled_deletion ON users (scheduled_deletion_at) WHERE scheduled_deletion_at IS NOT NULL;

CREATE TABLE platform_accounts (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    platform_id TEXT NOT NULL REFERENCES platforms (id),
    platform_user_id TEXT NOT NULL,
    username TEXT,
    email TEXT,
    avatar_url TEXT,
    password_hash TEXT,
    email_verified BOOLEAN NOT NULL DEFAULT FALSE,
    is_primary BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (platform_id, platform_user_id)
);
CREATE INDEX platform_accounts_user ON platform_accounts (user_id);
CREATE INDEX platform_accounts_email_lower ON platform_accounts (LOWER(email));

CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    ip_address TEXT NOT NULL DEFAULT '',
    user_agent TEXT NOT NULL DEFAULT '',
    device_type TEXT NOT NULL DEFAULT 'desktop',
    browser_name TEXT NOT NULL DEFAULT '',
    os_name TEXT NOT NULL DEFAULT '',
    provider TEXT NOT NULL DEFAULT '',
    auth_time BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    last_activity_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX sessions_user ON sessions (user_id, created_at);

CREATE TABLE roles (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    is_system BOOLEAN NOT NULL DEFAULT FALSE,
    requires_two_factor BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE UNIQUE INDEX roles_name_lower ON roles (LOWER(name));

CREATE TABLE permissions (
    id TEXT PRIMARY KEY,
    resource TEXT NOT NULL,
    action TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (resource, action)
);

CREATE TABLE role_permissions (
    role_id TEXT NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
    permission_id TEXT NOT NULL REFERENCES permissions (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (role_id, permission_id)
);

CREATE TABLE user_roles (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role_id TEXT NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, role_id)
);
CREATE INDEX user_roles_role ON user_roles (role_id);

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    key_hash TEXT NOT NULL UNIQUE,
    key_prefix TEXT NOT NULL,
    scopes TEXT NOT NULL DEFAULT '[]',
    is_active BOOLEAN NOT NULL DEFAULT TRUE,
    is_system BOOLEAN NOT NULL DEFAULT FALSE,
    expires_at BIGINT,
    last_used_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX api_keys_user ON api_keys (user_id, created_at);

CREATE TABLE api_key_roles (
    api_key_id TEXT NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    role_id TEXT NOT NULL REFERENCES roles (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (api_key_id, role_id)
);

CREATE TABLE bans (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    reason TEXT,
    banned_by TEXT,
    banned_at BIGINT NOT NULL,
    expires_at BIGINT,
    is_permanent BOOLEAN NOT NULL DEFAULT FALSE,
    unbanned_at BIGINT,
    unbanned_by TEXT
);
CREATE INDEX bans_user ON bans (user_id, banned_at);

CREATE TABLE audit_events (
    id TEXT PRIMARY KEY,
    user_id TEXT,
    event_type TEXT NOT NULL,
    resource_type TEXT,
    resource_id TEXT,
    actor_id TEXT,
    ip_address TEXT,
    user_agent TEXT,
    description TEXT,
    metadata TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL DEFAULT 'success',
    error_message TEXT,
    country_code TEXT,
    country_name TEXT,
    city TEXT,
    region TEXT,
    source_service TEXT NOT NULL DEFAULT 'api',
    created_at BIGINT NOT NULL,
    is_reported BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX audit_events_user_created ON audit_events (user_id, created_at);
CREATE INDEX audit_events_created ON audit_events (created_at);

-- A single counter that every instance reads to know when cached
-- authentication results (permission sets, token lookups) went stale.
CREATE TABLE auth_epoch (
    id INTEGER PRIMARY KEY,
    epoch BIGINT NOT NULL
);
INSERT INTO auth_epoch (id, epoch) VALUES (1, 0);
