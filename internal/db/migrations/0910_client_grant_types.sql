-- Which grants a client may use (issue 21; RFC 7591 §2 grant_types). Every
-- client registered before keeps today's behaviour: the authorization code
-- flow with refresh tokens.
ALTER TABLE oauth_clients ADD COLUMN grant_types TEXT NOT NULL DEFAULT '["authorization_code","refresh_token"]';
