-- When a browser session ends, the OAuth tokens granted in it end with it,
-- in the same transaction, whichever path ended it (logout, RP-initiated
-- logout, signing out other sessions, revoking a session, a password reset,
-- a ban): OpenID Connect Back-Channel Logout 1.0 §2.7. Offline tokens
-- (offline_access refresh tokens and the access tokens they mint) outlive
-- the session. A session that merely expires ends nothing: nobody ended it.
CREATE TRIGGER sessions_end_tokens AFTER UPDATE OF revoked_at ON sessions
WHEN OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL
BEGIN
    UPDATE oauth_tokens SET revoked_at = NEW.revoked_at WHERE session_id = NEW.id AND NOT offline AND revoked_at IS NULL; END;
