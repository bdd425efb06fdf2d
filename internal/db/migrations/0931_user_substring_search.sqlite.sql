-- The users list's search finds a part of the username, email or name
-- anywhere (issue 22), not only their start: an FTS5 table with the
-- trigram tokenizer holds the three texts of every user, and a phrase query
-- of three characters or more finds the users containing it, any case
-- (db.UserSubstring). Triggers keep it in step with users. Its rowids are
-- the keys of users_search_keys, an INTEGER PRIMARY KEY per user id: a
-- users row's own rowid is no stable key (VACUUM may renumber a table
-- without an INTEGER PRIMARY KEY), and finding the FTS row by the user id
-- alone would scan the table (100 ms a rename at 100,000 users).
CREATE TABLE users_search_keys (k INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE);
CREATE VIRTUAL TABLE users_search USING fts5(id UNINDEXED, username, email, name, tokenize = 'trigram');
INSERT INTO users_search_keys (id) SELECT id FROM users;
INSERT INTO users_search (rowid, id, username, email, name) SELECT k.k, u.id, u.username, COALESCE(u.email, ''), u.name FROM users u JOIN users_search_keys k ON k.id = u.id;
CREATE TRIGGER users_search_insert AFTER INSERT ON users BEGIN INSERT INTO users_search_keys (id) VALUES (new.id); INSERT INTO users_search (rowid, id, username, email, name) VALUES ((SELECT k FROM users_search_keys WHERE id = new.id), new.id, new.username, COALESCE(new.email, ''), new.name); END;
CREATE TRIGGER users_search_update AFTER UPDATE OF username, email, name ON users BEGIN UPDATE users_search SET username = new.username, email = COALESCE(new.email, ''), name = new.name WHERE rowid = (SELECT k FROM users_search_keys WHERE id = old.id); END;
CREATE TRIGGER users_search_delete AFTER DELETE ON users BEGIN DELETE FROM users_search WHERE rowid = (SELECT k FROM users_search_keys WHERE id = old.id); DELETE FROM users_search_keys WHERE id = old.id; END;

-- The list sorts by the username, the email and the last sign-in too. Like
-- users_active_created (0720) for the default order, each index holds the
-- users that are not deleted in its order with deleted_at, so a deep page
-- is skipped in the index alone. SQLite orders NULLs as the least, which
-- users.ListQuery.orderBy asks of both engines.
CREATE INDEX users_active_username ON users (LOWER(username), id, deleted_at) WHERE deleted_at IS NULL;
CREATE INDEX users_active_email ON users (LOWER(email), id, deleted_at) WHERE deleted_at IS NULL;
CREATE INDEX users_active_login ON users (last_login_at, id, deleted_at) WHERE deleted_at IS NULL;
