-- Per-client OAuth token lifetimes (issue 22, policies): NULL means the
-- server-wide policies oauth.access_token_lifetime_seconds and
-- oauth.refresh_token_lifetime_seconds (system_config). Read with the
-- client row the token endpoint loads anyway, so no statement is added.
ALTER TABLE oauth_clients ADD COLUMN access_token_lifetime_seconds INTEGER;
ALTER TABLE oauth_clients ADD COLUMN refresh_token_lifetime_seconds INTEGER;
