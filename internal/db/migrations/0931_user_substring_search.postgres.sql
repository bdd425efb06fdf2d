-- The users list's search finds a part of the username, email or name
-- anywhere (issue 22), not only their start: a trigram index (pg_trgm)
-- of each lower-cased text serves LOWER(col) LIKE '%part%' for a part of
-- three characters or more (db.UserSubstring). The extension is installed
-- in the schema public when the server may (it is a trusted extension from
-- PostgreSQL 13 on); the indexes name its operator class with the schema it
-- lives in. Without the extension the search still works, comparing every
-- user (docs/decisions.md, "Operators' user management").
DO $$ DECLARE s text
; BEGIN
  BEGIN CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public
  ; EXCEPTION WHEN OTHERS THEN RAISE NOTICE 'pg_trgm is not available (%): the user search compares every user', SQLERRM
  ; END
  ; SELECT n.nspname INTO s FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'
  ; IF s IS NOT NULL THEN
    EXECUTE format('CREATE INDEX users_username_trgm ON users USING gin (LOWER(username) %I.gin_trgm_ops)', s)
    ; EXECUTE format('CREATE INDEX users_email_trgm ON users USING gin (LOWER(email) %I.gin_trgm_ops)', s)
    ; EXECUTE format('CREATE INDEX users_name_trgm ON users USING gin (LOWER(name) %I.gin_trgm_ops)', s)
  ; END IF
; END $$;

-- The list sorts by the username, the email and the last sign-in too. Like
-- users_active_created (0720) for the default order, each index holds the
-- users that are not deleted in its order, so a deep page is skipped in the
-- index; users without an email or a sign-in count as the least
-- (users.ListQuery.orderBy), as SQLite orders NULLs.
CREATE INDEX users_active_username ON users ((LOWER(username)), id) WHERE deleted_at IS NULL;
CREATE INDEX users_active_email ON users ((LOWER(email)) NULLS FIRST, id) WHERE deleted_at IS NULL;
CREATE INDEX users_active_login ON users (last_login_at NULLS FIRST, id) WHERE deleted_at IS NULL;
