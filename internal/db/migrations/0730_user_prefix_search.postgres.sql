-- A search for users (the users list's search, the audit log's user_search)
-- matches the exact id, or the start of the lower-cased username, email or
-- name (db.UserMatch): a range of bytes in each of these indexes, so a
-- search reads the users it finds rather than every user. They compare in
-- the "C" collation (bytes, which orders UTF-8 as code points), where a
-- prefix is a range whatever the database's own collation is. lower() runs
-- in the database's collation as before, so letters beyond ASCII fold too.
CREATE INDEX users_username_prefix ON users ((LOWER(username) COLLATE "C"));
CREATE INDEX users_email_prefix ON users ((LOWER(email) COLLATE "C"));
CREATE INDEX users_name_prefix ON users ((LOWER(name) COLLATE "C"));

-- The substring search's covering index (0720) has no reader left.
DROP INDEX users_search;
