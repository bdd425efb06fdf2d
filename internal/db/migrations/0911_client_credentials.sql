-- Access tokens of the client credentials grant (RFC 6749 §4.4; issue 21).
-- They act for no user, so they live apart from oauth_tokens, whose rows
-- all belong to a user and a token family: the hot paths that read
-- oauth_tokens (refresh, UserInfo, code exchange) keep their joins and
-- plans. scopes are the permission strings the token holds. Only the
-- SHA-256 hash of a token is stored.
CREATE TABLE oauth_client_tokens (
    id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    client_id TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    scopes TEXT NOT NULL DEFAULT '[]',
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX oauth_client_tokens_client ON oauth_client_tokens (client_id);
CREATE INDEX oauth_client_tokens_expires ON oauth_client_tokens (expires_at);
