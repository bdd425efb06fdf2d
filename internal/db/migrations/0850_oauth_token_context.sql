-- Hot paths read only the token row (issue 19, "Lost throughput").
--
-- 1. oauth_tokens_live (0210) goes. Its predicate names revoked_at, so no
--    rotation UPDATE could be a heap-only tuple update on PostgreSQL any
--    more, and without statistics the planner walked the whole index for
--    the rotation. The purge job finds dead families by grouping on the
--    family index instead (internal/oauth/purge.go).
DROP INDEX oauth_tokens_live;
-- No query reads oauth_tokens by expiry alone (the purge walks ids and
-- families), and every issued pair paid for this index twice.
DROP INDEX oauth_tokens_expires;

-- 2. What a token answers with rides on the token row itself, filled when
--    it is issued and copied on rotation, so a refresh and UserInfo read it
--    with the token: session_id is the browser session the authorization
--    was granted in (the ID token's sid, and what ends the token with the
--    session), auth_context the acr, amr and claims request (JSON, as in
--    oauth_auth_context). offline marks what outlives its session: refresh
--    tokens granted with offline_access and the access tokens they mint
--    (OpenID Connect Back-Channel Logout 1.0 §2.7, Core §11).
ALTER TABLE oauth_tokens ADD COLUMN session_id TEXT;
ALTER TABLE oauth_tokens ADD COLUMN auth_context TEXT NOT NULL DEFAULT '{}';
ALTER TABLE oauth_tokens ADD COLUMN offline BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE oauth_codes ADD COLUMN auth_context TEXT NOT NULL DEFAULT '{}';

-- Rows issued before carry what the side tables held for them.
UPDATE oauth_tokens SET
    auth_context = COALESCE((SELECT c.context FROM oauth_auth_context c WHERE c.family_id = oauth_tokens.family_id), '{}'),
    session_id = (SELECT g.session_id FROM oauth_session_grants g WHERE g.family_id = oauth_tokens.family_id),
    offline = (kind = 'refresh' AND scopes LIKE '%"offline_access"%');
UPDATE oauth_codes SET
    auth_context = COALESCE((SELECT c.context FROM oauth_auth_context c WHERE c.family_id = oauth_codes.family_id), '{}');

-- Ending a session ends its tokens in one statement. session_id never
-- changes after the insert, so the index keeps rotations HOT.
CREATE INDEX oauth_tokens_session ON oauth_tokens (session_id) WHERE session_id IS NOT NULL;
