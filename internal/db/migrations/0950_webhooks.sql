-- Webhooks (Standard Webhooks specification): endpoints that want audit
-- events, the messages built from those events, and one delivery per message
-- and endpoint, which is the outbox row (package outbox) its sender claims.

-- An endpoint. secret is the signing secret (whsec_…) sealed with the
-- service key (package secretbox), not hashed: signing needs it.
-- previous_secret signs alongside until previous_secret_expires_at after a
-- rotation, so receivers can switch without losing a message. event_types is
-- a JSON array of event type names. disabled_reason says why hmid turned the
-- endpoint off ('' when an operator did, or it is on).
CREATE TABLE webhook_endpoints (
    id TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    event_types TEXT NOT NULL DEFAULT '[]',
    enabled BOOLEAN NOT NULL DEFAULT TRUE,
    secret TEXT NOT NULL,
    previous_secret TEXT,
    previous_secret_expires_at BIGINT,
    disabled_reason TEXT NOT NULL DEFAULT '',
    disabled_at BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX webhook_endpoints_created ON webhook_endpoints (created_at);

-- A message: the body every endpoint it goes to receives, fixed when the
-- event is written so retries and resends send the same bytes. Its id is
-- the webhook-id header.
CREATE TABLE webhook_messages (
    id TEXT PRIMARY KEY,
    event_type TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX webhook_messages_created ON webhook_messages (created_at);

-- A delivery of one message to one endpoint, and the outbox row its sender
-- claims: next_attempt_at is NULL once it is finished (delivered or
-- failed), so finished rows stay for the console without being due.
CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    message_id TEXT NOT NULL REFERENCES webhook_messages (id) ON DELETE CASCADE,
    status TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT,
    last_attempt_at BIGINT,
    last_status_code INTEGER,
    last_duration_ms INTEGER,
    last_error TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at);
CREATE INDEX webhook_deliveries_message ON webhook_deliveries (message_id);

-- A counter every change of an endpoint advances in its transaction: each
-- instance keeps the set of subscribed event types in memory and reloads it
-- when this moves, so writing an audit event nobody subscribes to costs no
-- statement.
CREATE TABLE webhook_state (
    id INTEGER PRIMARY KEY,
    version BIGINT NOT NULL
);
INSERT INTO webhook_state (id, version) VALUES (1, 0);
