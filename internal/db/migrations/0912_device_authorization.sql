-- The device authorization grant (RFC 8628; issue 21). One row per device
-- authorization request, from issue until it is redeemed or expires; the
-- state lives here so any instance can answer the device's polls and the
-- person's verification page alike. Only SHA-256 hashes of the device code
-- and of the normalized user code are stored.
--
-- status: pending → approved or denied (on the verification page) →
-- redeemed (tokens issued, once). interval_seconds grows by 5 with each
-- slow_down (§3.5); last_polled_at is the previous poll, and slowed says
-- whether the poll that wrote it came too early.
CREATE TABLE oauth_device_authorizations (
    id TEXT PRIMARY KEY,
    device_code_hash TEXT NOT NULL UNIQUE,
    user_code_hash TEXT NOT NULL UNIQUE,
    client_id TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    scopes TEXT NOT NULL DEFAULT '[]',
    status TEXT NOT NULL DEFAULT 'pending',
    user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
    auth_time BIGINT,
    auth_context TEXT NOT NULL DEFAULT '{}',
    interval_seconds INTEGER NOT NULL DEFAULT 5,
    last_polled_at BIGINT,
    slowed BOOLEAN NOT NULL DEFAULT FALSE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    decided_at BIGINT
);
CREATE INDEX oauth_device_authorizations_expires ON oauth_device_authorizations (expires_at);
