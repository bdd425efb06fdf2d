-- Resource indicators (RFC 8707) and RFC 9068 JWT access tokens.
--
-- resources lists the absolute URIs a client may ask tokens for (JSON array;
-- empty: any). access_token_format is 'opaque' (hm_at_ tokens) or 'jwt'
-- (RFC 9068, signed with the ID-token keys; its SHA-256 is stored like an
-- opaque token's). An access token's audience (JSON array) is the resources
-- it was issued for, NULL when none was asked: the client is its audience.
-- The resources an authorization granted ride in its auth_context, from the
-- pending authorization to the code and the token family.
ALTER TABLE oauth_clients ADD COLUMN resources TEXT NOT NULL DEFAULT '[]';
ALTER TABLE oauth_clients ADD COLUMN access_token_format TEXT NOT NULL DEFAULT 'opaque';
ALTER TABLE oauth_tokens ADD COLUMN audience TEXT;
