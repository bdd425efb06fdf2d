-- The live tokens of each family (not revoked; expiry is checked by the
-- query). The purge job asks per family whether any live token is left: only
-- then may the family's spent refresh tokens still be presented, and reuse
-- detection still needs them (RFC 9700 §4.14.2). Rotation revokes the spent
-- token, so this index holds about two rows per family, however long the
-- family's chain of rotations.
CREATE INDEX oauth_tokens_live ON oauth_tokens (family_id, expires_at) WHERE revoked_at IS NULL;
