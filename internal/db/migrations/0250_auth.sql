-- Password reset tokens of the login extension endpoints. Only the SHA-256
-- hash of a token is stored; a token is single use (used_at set by a
-- conditional UPDATE) and expires after one hour.
CREATE TABLE password_reset_tokens (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    ip_address TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT
);
CREATE INDEX password_reset_tokens_user ON password_reset_tokens (user_id, created_at);
