-- Resource indicators (RFC 8707) on every grant (issue 33): a client
-- credentials token records the resources it was issued for, as a user's
-- access token does in oauth_tokens.audience (NULL: none named, the client
-- is the audience), and a device authorization the resources its request
-- named, which bound the audience of the tokens the device then polls for.
ALTER TABLE oauth_client_tokens ADD COLUMN audience TEXT;
ALTER TABLE oauth_device_authorizations ADD COLUMN resources TEXT;
