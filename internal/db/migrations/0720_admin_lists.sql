-- Indexes of the admin console's lists on big data (issue 14).

-- The users list (GET /v1/users) shows the users that are not soft-deleted,
-- newest first: ORDER BY created_at DESC, id. This partial index holds just
-- those users in just that order, so counting them and skipping to a deep
-- page walk the index alone instead of reading every row to test
-- deleted_at. deleted_at is NULL in every entry; it is in the index so that
-- SQLite sees the index answers the WHERE clause by itself (a covering
-- index) and does not read the rows to test it again.
CREATE INDEX users_active_created ON users (created_at DESC, id, deleted_at) WHERE deleted_at IS NULL;

-- A search for users (the users list's search, the audit log's user_search)
-- looks for a part of the username, email or name: no ordered index can
-- find that, every user is compared. This index holds the compared texts,
-- lower-cased (db.UserSearchHandle: username and email on two lines; the
-- name), with each user's deleted_at, created_at and id, so SQLite scans it
-- alone, a few dozen bytes per user, instead of the table.
CREATE INDEX users_search ON users (LOWER(username || '
' || COALESCE(email, '')), LOWER(name), deleted_at, created_at, id);

-- The audit log's default order is created_at, then id. An index of both
-- lets a deep page (OFFSET) skip the rows before it in the index alone;
-- with created_at alone, every skipped row was read for its id to order
-- ties. It replaces the created_at index, which it serves as well.
CREATE INDEX audit_events_created_id ON audit_events (created_at, id);
DROP INDEX audit_events_created;
