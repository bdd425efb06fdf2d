// Package users implements users, their platform accounts and the login
// platforms (spec 2, Users): listing, profiles, updates, usernames, locales,
// soft deletion, role assignment, and the sign-in upsert used by front ends.
package users
