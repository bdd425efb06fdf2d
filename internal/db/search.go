package db

// UserSearchHandle is the text a search for a user by username or email
// looks in: both, lower-cased, on two lines. The users list's search and the
// audit log's user_search use it, and the index users_search holds it, so
// SQLite answers such a search from the index alone, a few dozen bytes per
// user, instead of reading every row of the users table. A search text
// without a line break can only be found within one line, that is within
// one field, as separate comparisons of the fields would find it; a search
// text with one must compare the fields one by one.
const UserSearchHandle = `LOWER(username || '
' || COALESCE(email, ''))`
