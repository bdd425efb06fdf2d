// Package upstream signs people in with outside identity providers: Discord,
// Twitch, GitHub, Google and any OpenID Connect issuer. Each provider is one
// file behind the small Provider interface; the Registry holds the ones the
// environment configures (FromEnv), and Flow keeps the state of a sign-in
// between the redirect to the provider and its callback.
//
// A sign-in runs in two requests of the same browser:
//
//  1. GET /login/{slug}: the page calls Flow.Begin, which draws a random
//     256-bit state, a PKCE verifier (RFC 7636) and an OpenID Connect nonce,
//     stores them with the slug and the local return_to path in the shared
//     cache under the SHA-256 of the state for ten minutes, sets a cookie that
//     binds the state to this browser, and returns the provider's authorization
//     URL to redirect to.
//  2. GET /login/{slug}/callback: the page calls Flow.Finish, which checks the
//     state and the cookie, consumes the state exactly once and hands back the
//     code, the verifier and the nonce; Provider.Exchange then redeems the code
//     at the provider's token endpoint (with the verifier) and reads who the
//     person is: the provider's user API for Discord, Twitch and GitHub, the ID
//     token verified against the issuer's keys (with the nonce) for OpenID
//     Connect.
//
// The result is an Identity: the provider's stable user id, the email address
// and whether the provider verified it, a username, a display name and an
// avatar URL. What to do with it (find, link or create a user) is not this
// package's business.
//
// Every call to a provider goes through one HTTP client with a time limit and
// a cap on the response size, so a slow or hostile provider cannot hold a
// request or fill memory. Failures are *Error values whose Kind is one of the
// sentinel errors below and whose text is safe to show: it never contains a
// code, token or secret.
package upstream
