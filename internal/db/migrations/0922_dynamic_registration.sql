-- Dynamic client registration (RFC 7591) and management (RFC 7592).
--
-- A dynamically registered client records how (registration_kind 'token':
-- with an initial access token, 'open': by anyone; NULL for clients
-- registered through the API or a console), the hash of its registration
-- access token, the initial access token it used, and the last time a token
-- was issued to it (kept by the hourly purge, which also deletes open
-- registrations unused for HMID_DYNAMIC_REGISTRATION_EXPIRY).
ALTER TABLE oauth_clients ADD COLUMN registration_kind TEXT;
ALTER TABLE oauth_clients ADD COLUMN registration_token_hash TEXT;
ALTER TABLE oauth_clients ADD COLUMN initial_token_id TEXT;
ALTER TABLE oauth_clients ADD COLUMN last_used_at BIGINT;
CREATE INDEX oauth_clients_registration ON oauth_clients (registration_kind, created_at) WHERE registration_kind IS NOT NULL;

-- Initial access tokens (RFC 7591 §3): made by a super admin or a system
-- key, each may register up to max_clients clients, with scopes within
-- allowed_scopes (JSON array; empty: any scope of the catalogue).
CREATE TABLE oauth_initial_access_tokens (
    id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    max_clients INTEGER NOT NULL,
    clients_registered INTEGER NOT NULL DEFAULT 0,
    allowed_scopes TEXT NOT NULL DEFAULT '[]',
    created_by TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    revoked_at BIGINT
);
