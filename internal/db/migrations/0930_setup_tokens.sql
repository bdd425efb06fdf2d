-- First administrator (issue 22): while no super admin exists, each start
-- issues a one-time setup link (/setup?token=…). Only the SHA-256 hash of
-- the token is stored. A token works until it is used or until a super
-- admin exists, however that admin came to be (the setup page, hmid admin
-- create, HMID_ADMIN_EMAIL); using one uses up all of them.
CREATE TABLE setup_tokens (
    id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    used_at BIGINT
);
