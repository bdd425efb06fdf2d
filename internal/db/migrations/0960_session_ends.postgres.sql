-- The sessions that ended (revoked, or deleted with their user) while an
-- OAuth grant was open in them, queued for the back-channel logout worker:
-- it reads this short list on every pass instead of joining every open
-- grant with its session, which grows with the sessions in use. The full
-- join stays, run once a minute, for sessions that merely expired.
CREATE TABLE oauth_session_ends (
    session_id TEXT PRIMARY KEY
);
CREATE FUNCTION hmid_session_queue_end() RETURNS trigger AS $$
BEGIN INSERT INTO oauth_session_ends (session_id) SELECT OLD.id WHERE EXISTS (SELECT 1 FROM oauth_session_grants WHERE session_id = OLD.id AND ended_at IS NULL) ON CONFLICT DO NOTHING; RETURN NULL; END
$$ LANGUAGE plpgsql;
CREATE TRIGGER sessions_queue_end AFTER UPDATE OF revoked_at ON sessions
FOR EACH ROW WHEN (OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL)
EXECUTE FUNCTION hmid_session_queue_end();
CREATE TRIGGER sessions_queue_delete AFTER DELETE ON sessions
FOR EACH ROW EXECUTE FUNCTION hmid_session_queue_end();
