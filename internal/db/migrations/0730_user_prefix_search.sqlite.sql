-- A search for users (the users list's search, the audit log's user_search)
-- matches the exact id, or the start of the lower-cased username, email or
-- name (db.UserMatch): a range of bytes in an index of each. SQLite's
-- built-in collation compares bytes, so the indexes users_username_lower and
-- users_email_lower (0001) serve the username and the email; the name gets
-- its own.
CREATE INDEX users_name_lower ON users (LOWER(name));

-- The substring search's covering index (0720) has no reader left.
DROP INDEX users_search;
