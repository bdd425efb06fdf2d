-- Accounts: pending email changes and pending email links. Each row is one
-- pending request; a user has at most one of each kind (a new request
-- replaces the old one). Only the SHA-256 hash of the emailed token is kept.

CREATE TABLE email_change_requests (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
    new_email TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    requested_by TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

-- password_hash is the Argon2id hash of the password chosen at request time;
-- it moves to the new email platform account when the link is verified.
CREATE TABLE email_link_requests (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    requested_by TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

-- Ban history is read newest first per user; the active-ban lookup of every
-- authentication filters on unbanned_at.
CREATE INDEX bans_user_active ON bans (user_id, unbanned_at);
