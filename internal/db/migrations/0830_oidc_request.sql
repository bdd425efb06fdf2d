-- OpenID Connect request parameters (issue 15, docs/decisions.md "OIDC
-- request parameters").

-- How the user authenticated in a session (OpenID Connect Core §2 amr, RFC
-- 8176 values as a JSON array: "pwd" or "fed", plus "otp" after a second
-- factor). The ID token's acr and amr come from it. Sessions created before
-- this column read as '[]': nothing is claimed about them beyond acr "1".
ALTER TABLE sessions ADD COLUMN amr TEXT NOT NULL DEFAULT '[]';

-- The authentication context of a pending authorization: acr, amr and the
-- claims request parameter (Core §5.5), as JSON.
ALTER TABLE oauth_pending_authorizations ADD COLUMN auth_context TEXT NOT NULL DEFAULT '{}';

-- The same context for every token descended from one authorization code
-- (keyed by the family id the code and its tokens share), so refreshed ID
-- tokens and UserInfo answer with what the authorization request asked for.
-- Purged with the last token of the family.
CREATE TABLE oauth_auth_context (
    family_id TEXT PRIMARY KEY,
    context TEXT NOT NULL DEFAULT '{}',
    created_at BIGINT NOT NULL
);
CREATE INDEX oauth_auth_context_created ON oauth_auth_context (created_at);
