-- Verification of the address a user registered with (login extension
-- endpoints). A user has at most one pending token: a new mail replaces the
-- earlier one. Only the SHA-256 hash of the mailed token is stored; the row
-- is deleted when the token is used (single use) and it expires after 24
-- hours. email is the address the token proves, so a token cannot verify an
-- address the account changed to later.
CREATE TABLE email_verification_tokens (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
