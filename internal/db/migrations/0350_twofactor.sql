-- Two-factor authentication (spec 2, Two-factor state): one row per user
-- who has started or finished a TOTP setup, and their backup codes.
--
-- status is 'pending' between setup and verify (setup_expires_at bounds it
-- to 10 minutes) and 'enabled' afterwards; disabling deletes the row. The
-- TOTP secret is stored sealed with AES-256-GCM (associated data: user id),
-- never in plain text. last_totp_step is the RFC 6238 time step of the last
-- accepted code, so each code is accepted once only.
CREATE TABLE two_factor (
    user_id TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    secret_sealed TEXT NOT NULL,
    platform_id TEXT NOT NULL REFERENCES platforms (id),
    setup_expires_at BIGINT NOT NULL,
    enabled_at BIGINT,
    last_totp_step BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- Single-use backup codes, stored as Argon2id PHC strings; used_at is set
-- (by a conditional UPDATE) when a code is spent. lookup_tag is 16 bits of a
-- keyed MAC of the code: it picks the one row worth an Argon2id check without
-- being a useful shortcut for guessing a code.
CREATE TABLE two_factor_backup_codes (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash TEXT NOT NULL,
    lookup_tag TEXT NOT NULL,
    used_at BIGINT,
    created_at BIGINT NOT NULL
);
CREATE INDEX two_factor_backup_codes_user ON two_factor_backup_codes (user_id, lookup_tag);
