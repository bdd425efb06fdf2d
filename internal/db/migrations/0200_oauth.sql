-- OAuth 2.0 / OpenID Connect provider (spec 1): registered clients, the
-- users' consents, pending authorizations awaiting consent, authorization
-- codes, access and refresh tokens, and the RSA signing key for RS256 ID
-- tokens. Every code, token and secret is stored only as its SHA-256 hash.

CREATE TABLE oauth_clients (
    id TEXT PRIMARY KEY,
    owner_id TEXT REFERENCES users (id) ON DELETE SET NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    logo_url TEXT,
    homepage_url TEXT,
    privacy_policy_url TEXT,
    terms_of_service_url TEXT,
    redirect_uris TEXT NOT NULL DEFAULT '[]',
    allowed_scopes TEXT NOT NULL DEFAULT '[]',
    client_type TEXT NOT NULL DEFAULT 'confidential',
    is_first_party BOOLEAN NOT NULL DEFAULT FALSE,
    is_active BOOLEAN NOT NULL DEFAULT TRUE,
    secret_hash TEXT,
    id_token_alg TEXT NOT NULL DEFAULT 'HS256',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX oauth_clients_owner ON oauth_clients (owner_id, created_at);
CREATE INDEX oauth_clients_created ON oauth_clients (created_at, id);

CREATE TABLE oauth_consents (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    scopes TEXT NOT NULL DEFAULT '[]',
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, client_id)
);
CREATE INDEX oauth_consents_client ON oauth_consents (client_id);

CREATE TABLE oauth_pending_authorizations (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    redirect_uri TEXT NOT NULL,
    scopes TEXT NOT NULL DEFAULT '[]',
    state TEXT NOT NULL DEFAULT '',
    nonce TEXT NOT NULL DEFAULT '',
    code_challenge TEXT NOT NULL DEFAULT '',
    auth_time BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    decided_at BIGINT
);
CREATE INDEX oauth_pending_user ON oauth_pending_authorizations (user_id, created_at);

CREATE TABLE oauth_codes (
    code_hash TEXT PRIMARY KEY,
    family_id TEXT NOT NULL,
    client_id TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    redirect_uri TEXT NOT NULL,
    scopes TEXT NOT NULL DEFAULT '[]',
    nonce TEXT NOT NULL DEFAULT '',
    code_challenge TEXT NOT NULL DEFAULT '',
    auth_time BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT
);
CREATE INDEX oauth_codes_expires ON oauth_codes (expires_at);

-- kind is 'access' or 'refresh'. Tokens issued by one grant share pair_id;
-- every token descended from one authorization code shares family_id, which
-- is what reuse detection revokes.
CREATE TABLE oauth_tokens (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    family_id TEXT NOT NULL,
    pair_id TEXT NOT NULL,
    client_id TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    scopes TEXT NOT NULL DEFAULT '[]',
    auth_time BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    rotated_at BIGINT,
    revoked_at BIGINT
);
CREATE INDEX oauth_tokens_family ON oauth_tokens (family_id);
CREATE INDEX oauth_tokens_pair ON oauth_tokens (pair_id);
CREATE INDEX oauth_tokens_user ON oauth_tokens (user_id, client_id);
CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at);

-- The RSA key of RS256 ID tokens, sealed with the server key. slot names the
-- key's role so concurrent first uses on several instances agree on one key.
CREATE TABLE oauth_signing_keys (
    slot TEXT PRIMARY KEY,
    kid TEXT NOT NULL,
    private_key TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
