-- Passkeys (WebAuthn Level 3 credential records, §4 "Credential Record"):
-- one row per registered credential of a user. credential_id and
-- public_key are base64url (RFC 4648 §5) without padding; public_key is the
-- COSE key of the attestation (RFC 9052 §7). sign_count is the last
-- authenticator signature counter seen (WebAuthn §6.1.1): an assertion with
-- a counter not above it is refused as a possible clone. aaguid names the
-- authenticator model; backup_eligible (BE) says the credential may be
-- synced between devices, backup_state (BS) that it is. No secret is kept:
-- the private key never leaves the authenticator.
CREATE TABLE passkeys (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    credential_id TEXT NOT NULL UNIQUE,
    public_key TEXT NOT NULL,
    sign_count BIGINT NOT NULL DEFAULT 0,
    aaguid TEXT NOT NULL,
    transports TEXT NOT NULL DEFAULT '[]',
    backup_eligible BOOLEAN NOT NULL,
    backup_state BOOLEAN NOT NULL,
    user_verified BOOLEAN NOT NULL,
    attestation_format TEXT NOT NULL DEFAULT '',
    attachment TEXT NOT NULL DEFAULT '',
    name TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    last_used_at BIGINT
);
CREATE INDEX passkeys_user ON passkeys (user_id, created_at);
