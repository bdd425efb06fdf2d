-- Signing keys of asymmetric ID tokens (RS256, ES256), several per algorithm
-- so keys can rotate. generation counts the keys of one algorithm; the
-- highest is the signing key. UNIQUE (alg, generation) lets exactly one of
-- several instances rotating at once win. A retired key stays published at
-- the JWKS until every token it signed has expired, then it is deleted.
-- private_key is sealed with the server key (additional data "oauth_signing_key:" || kid).
CREATE TABLE oauth_signing_keys_v2 (
    kid TEXT PRIMARY KEY,
    alg TEXT NOT NULL,
    generation BIGINT NOT NULL,
    private_key TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    activated_at BIGINT NOT NULL,
    retired_at BIGINT
);
-- The single RS256 key of earlier versions becomes RS256 generation 1.
INSERT INTO oauth_signing_keys_v2 (kid, alg, generation, private_key, created_at, activated_at)
    SELECT kid, 'RS256', 1, private_key, created_at, created_at FROM oauth_signing_keys WHERE slot = 'rs256';
DROP TABLE oauth_signing_keys;
ALTER TABLE oauth_signing_keys_v2 RENAME TO oauth_signing_keys;
CREATE UNIQUE INDEX oauth_signing_keys_generation ON oauth_signing_keys (alg, generation);
