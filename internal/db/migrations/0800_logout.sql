-- OpenID Connect logout: RP-Initiated Logout 1.0 and Back-Channel Logout 1.0.
--
-- Clients register where a browser may return after logout
-- (post_logout_redirect_uris, exact match like redirect_uris) and where they
-- want to be told that a session ended (backchannel_logout_uri).
ALTER TABLE oauth_clients ADD COLUMN post_logout_redirect_uris TEXT NOT NULL DEFAULT '[]';
ALTER TABLE oauth_clients ADD COLUMN backchannel_logout_uri TEXT;
ALTER TABLE oauth_clients ADD COLUMN backchannel_logout_session_required BOOLEAN NOT NULL DEFAULT FALSE;

-- The browser session an authorization was granted in, carried from the
-- authorization request (pending consent, then code) to the token response,
-- where it becomes the ID token's sid.
ALTER TABLE oauth_pending_authorizations ADD COLUMN session_id TEXT;
ALTER TABLE oauth_codes ADD COLUMN session_id TEXT;

-- One row per token family (one redeemed authorization code) issued in a
-- browser session: which client got tokens from which session. Deliberately
-- without foreign keys: the row must outlive its session and its user (an
-- account deletion removes both) so the client can still be told. ended_at is
-- set once the session's end has been noticed and its logout tokens queued.
CREATE TABLE oauth_session_grants (
    family_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    client_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    ended_at BIGINT
);
CREATE INDEX oauth_session_grants_live ON oauth_session_grants (session_id) WHERE ended_at IS NULL;
CREATE INDEX oauth_session_grants_ended ON oauth_session_grants (ended_at) WHERE ended_at IS NOT NULL;

-- The back-channel logout outbox: one row per logout token still to be
-- delivered. A row is claimed by pushing next_attempt_at past a lease, so of
-- several instances exactly one sends it; it is deleted once the client
-- answered 2xx or delivery is given up.
CREATE TABLE oauth_backchannel_outbox (
    id TEXT PRIMARY KEY,
    client_id TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    next_attempt_at BIGINT NOT NULL
);
CREATE INDEX oauth_backchannel_outbox_due ON oauth_backchannel_outbox (next_attempt_at);
