package db

// ActiveBanSQL is the condition that a row of the bans table is in force at
// the time bound to $2 (Unix microseconds): not lifted, and permanent or
// ending later. Every query that asks whether a user is banned uses it,
// directly or through UserBannedSQL, so the rule is written once. It lives
// here rather than in package bans because the authentication resolver,
// which package bans depends on, needs it too.
//
// The columns name their table, so the condition cannot pick up an
// expires_at of an outer query (tokens and sessions have one); a query using
// it must therefore not give bans an alias.
const ActiveBanSQL = `bans.unbanned_at IS NULL AND (bans.expires_at IS NULL OR bans.expires_at > $2)`

// UserBannedSQL is a boolean expression, over the users table aliased u,
// true when u has a ban in force at the time bound to $2.
const UserBannedSQL = `EXISTS (SELECT 1 FROM bans WHERE bans.user_id = u.id AND ` + ActiveBanSQL + `)`
