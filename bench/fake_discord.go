package main

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"hmid/internal/httpx"
)

// The client the fake Discord knows: the credentials hmid is configured with.
// A Discord client id is a snowflake.
const (
	fakeDiscordClientID     = "1100000000000000001"
	fakeDiscordClientSecret = "bench-discord-client-secret"
)

// benchUserParam is the query parameter the bench adds to the authorization
// URL to say who signs in: the number of a Discord account of the fake.
// Where a real person would pick their account, a worker picks its own, so
// concurrent sign-ins do not all update the same user.
const benchUserParam = "bench_user"

// fakeDiscord stands in for Discord in the provider-login scenario: the
// three endpoints a sign-in touches, over real HTTP on the loopback, doing
// the checks Discord does, so the bench measures hmid's whole sign-in
// rather than a shortcut:
//
//   - GET /oauth2/authorize approves at once (no consent page) for the
//     known client and its one registered redirect URI, wants a state and a
//     PKCE S256 challenge (RFC 7636 §4.3), and redirects back with a code
//     and the state (RFC 6749 §4.1.2);
//   - POST /api/oauth2/token authenticates the client (HTTP Basic or the
//     form body, RFC 6749 §2.3.1), redeems a code once (RFC 6749 §4.1.2),
//     wants the code's redirect URI (§4.1.3) and a verifier whose S256 is
//     the challenge (RFC 7636 §4.6), and answers Discord's token JSON;
//   - GET /api/users/@me answers the token's user object with id,
//     username, global_name, avatar, and email and verified when the
//     "email" scope was granted, as Discord does
//     (https://discord.com/developers/docs/resources/user#user-object).
type fakeDiscord struct {
	url      string // base URL, http://127.0.0.1:port
	redirect string // the registered redirect URI
	srv      *http.Server

	mu     sync.Mutex
	codes  map[string]discordGrant // unredeemed codes
	tokens map[string]discordGrant // access tokens; Discord's live a week, longer than any run
}

// discordGrant is what a code, then its access token, stands for.
type discordGrant struct {
	person    int
	email     bool   // the "email" scope was granted
	challenge string // PKCE S256 challenge of the code
	redirect  string
}

// startFakeDiscord serves a fake Discord on a loopback port that accepts
// redirect as its client's only redirect URI.
func startFakeDiscord(redirect string) (*fakeDiscord, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &fakeDiscord{url: "http://" + ln.Addr().String(), redirect: redirect,
		codes: map[string]discordGrant{}, tokens: map[string]discordGrant{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /oauth2/authorize", f.authorize)
	mux.HandleFunc("POST /api/oauth2/token", f.token)
	mux.HandleFunc("GET /api/users/@me", f.me)
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go f.srv.Serve(ln)
	return f, nil
}

// env answers the HMID_LOGIN_DISCORD_* variables that point hmid at the
// fake (config.Config.LoginEnv); every other variable is unset.
func (f *fakeDiscord) env(name string) string {
	switch name {
	case "HMID_LOGIN_DISCORD_CLIENT_ID":
		return fakeDiscordClientID
	case "HMID_LOGIN_DISCORD_CLIENT_SECRET":
		return fakeDiscordClientSecret
	case "HMID_LOGIN_DISCORD_AUTH_URL":
		return f.url + "/oauth2/authorize"
	case "HMID_LOGIN_DISCORD_TOKEN_URL":
		return f.url + "/api/oauth2/token"
	case "HMID_LOGIN_DISCORD_API_URL":
		return f.url + "/api"
	}
	return ""
}

// Close stops the fake.
func (f *fakeDiscord) Close() { f.srv.Close() }

// s256Challenge is the shape of a base64url SHA-256 (RFC 7636 §4.2).
var s256Challenge = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// codeVerifier is the shape of a PKCE verifier (RFC 7636 §4.1).
var codeVerifier = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

func (f *fakeDiscord) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	person, err := strconv.Atoi(q.Get(benchUserParam))
	scopes := strings.Fields(q.Get("scope"))
	// Discord shows an error page, not a redirect, for a request it cannot
	// trust to send back (RFC 6749 §4.1.2.1); the fake answers 400 for
	// every refusal, which the bench reports.
	switch {
	case q.Get("client_id") != fakeDiscordClientID:
		http.Error(w, "unknown client_id", http.StatusBadRequest)
	case q.Get("redirect_uri") != f.redirect:
		http.Error(w, "redirect_uri is not registered for this client", http.StatusBadRequest)
	case q.Get("response_type") != "code":
		http.Error(w, "response_type must be code", http.StatusBadRequest)
	case q.Get("state") == "":
		http.Error(w, "state is missing", http.StatusBadRequest)
	case q.Get("code_challenge_method") != "S256" || !s256Challenge.MatchString(q.Get("code_challenge")):
		http.Error(w, "a PKCE S256 code_challenge is required", http.StatusBadRequest)
	case !slices.Contains(scopes, "identify"):
		http.Error(w, "the identify scope is required", http.StatusBadRequest)
	case err != nil || person < 0:
		http.Error(w, benchUserParam+" must name the account that signs in", http.StatusBadRequest)
	default:
		code := secret()
		f.mu.Lock()
		f.codes[code] = discordGrant{person: person, email: slices.Contains(scopes, "email"),
			challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri")}
		f.mu.Unlock()
		back := url.Values{"code": {code}, "state": {q.Get("state")}}
		http.Redirect(w, r, f.redirect+"?"+back.Encode(), http.StatusFound)
	}
}

func (f *fakeDiscord) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	id, sec, basic := r.BasicAuth()
	if basic {
		// RFC 6749 §2.3.1: the Basic credentials are form-urlencoded first.
		id, _ = url.QueryUnescape(id)
		sec, _ = url.QueryUnescape(sec)
	} else {
		id, sec = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != fakeDiscordClientID || subtle.ConstantTimeCompare([]byte(sec), []byte(fakeDiscordClientSecret)) != 1 {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	if r.PostForm.Get("grant_type") != "authorization_code" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	// The code is spent by this request whatever its outcome: a code is
	// redeemed at most once (RFC 6749 §4.1.2).
	code := r.PostForm.Get("code")
	f.mu.Lock()
	g, ok := f.codes[code]
	delete(f.codes, code)
	f.mu.Unlock()
	verifier := r.PostForm.Get("code_verifier")
	sum := sha256.Sum256([]byte(verifier))
	if !ok || r.PostForm.Get("redirect_uri") != g.redirect || !codeVerifier.MatchString(verifier) ||
		subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(g.challenge)) != 1 {
		oauthError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	tok := secret()
	f.mu.Lock()
	f.tokens[tok] = g
	f.mu.Unlock()
	scope := "identify"
	if g.email {
		scope += " email"
	}
	w.Header().Set("Cache-Control", "no-store") // RFC 6749 §5.1
	httpx.JSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "Bearer",
		"expires_in": 604800, "refresh_token": secret(), "scope": scope})
}

func (f *fakeDiscord) me(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.mu.Lock()
	g, known := f.tokens[tok]
	f.mu.Unlock()
	if !ok || !known {
		httpx.JSON(w, http.StatusUnauthorized, map[string]any{"message": "401: Unauthorized", "code": 0})
		return
	}
	// Discord ids are snowflakes; the fake's are one per bench account.
	id := strconv.FormatUint(1_200_000_000_000_000_000+uint64(g.person), 10)
	u := map[string]any{"id": id, "username": fmt.Sprintf("bench%d", g.person),
		"global_name": fmt.Sprintf("Bench %d", g.person), "avatar": fmt.Sprintf("%032x", g.person+1)}
	if g.email {
		u["email"], u["verified"] = fmt.Sprintf("discord%d@bench.test", g.person), true
	}
	httpx.JSON(w, http.StatusOK, u)
}

// oauthError is an OAuth 2.0 error answer (RFC 6749 §5.2).
func oauthError(w http.ResponseWriter, status int, code string) {
	httpx.JSON(w, status, map[string]string{"error": code})
}

// secret is 256 random bits, base64url: a code or a token.
func secret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
