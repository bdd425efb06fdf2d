-- private_key_jwt client authentication (RFC 7523 §2.2, OpenID Connect Core
-- §9). token_endpoint_auth_method is the one way a confidential client
-- authenticates; '' is the historical default, client_secret_basic (or
-- client_secret_post: both are accepted) for confidential clients and none
-- for public ones. A private_key_jwt client registers its public keys inline
-- (jwks, a JWK Set as JSON) or where hmid fetches them (jwks_uri), never both
-- (RFC 7591 §2).
ALTER TABLE oauth_clients ADD COLUMN token_endpoint_auth_method TEXT NOT NULL DEFAULT '';
ALTER TABLE oauth_clients ADD COLUMN jwks TEXT;
ALTER TABLE oauth_clients ADD COLUMN jwks_uri TEXT;
