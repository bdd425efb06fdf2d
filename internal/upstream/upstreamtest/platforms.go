package upstreamtest

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"hmid/internal/httpx"
)

// Person is who signs in at a fake, in terms common to every provider.
// SetPerson writes it in the provider's own format.
type Person struct {
	// Subject is the provider's stable user id: digits for Discord,
	// GitHub and Twitch, any string for OpenID Connect (its "sub").
	Subject string
	// Username is the login name (Discord's username, GitHub's login,
	// Twitch's login, OpenID Connect's preferred_username).
	Username string
	// Name is the display name; empty sends none.
	Name string
	// Email is the address; empty sends none.
	Email string
	// EmailVerified tells whether the provider vouches for Email.
	EmailVerified bool
}

// NewDiscord starts a fake Discord: client authentication with HTTP Basic,
// JSON token answers and GET /api/users/@me answering User, a Discord user
// object (https://discord.com/developers/docs/resources/user#user-object).
// Env's API_URL is URL()+"/api", Discord's https://discord.com/api. It
// starts signed in as Person{Subject: "80351110224678912", Username:
// "nelly", Name: "Nelly", Email: "nelly@discord.example", EmailVerified:
// true}. SetPerson sends id, username, global_name, email, verified and a
// null avatar.
func NewDiscord(t testing.TB) *Provider {
	t.Helper()
	p := newPlatform(t, "basic", "/api", func(p *Provider, who Person) {
		p.User = map[string]any{"id": who.Subject, "username": who.Username, "global_name": orNull(who.Name),
			"avatar": nil, "email": orNull(who.Email), "verified": who.EmailVerified}
	}, Person{Subject: "80351110224678912", Username: "nelly", Name: "Nelly",
		Email: "nelly@discord.example", EmailVerified: true})
	p.HandleFunc("GET /api/users/@me", func(w http.ResponseWriter, r *http.Request) {
		p.serveUser(w, r, func() any { return p.User })
	})
	return p
}

// NewGitHub starts a fake GitHub: client authentication in the form body,
// form-encoded token answers (GitHub's default; set FormToken to false for
// JSON), and GET /user answering User and GET /user/emails answering
// Emails, both wanting GitHub's Accept header and a User-Agent
// (https://docs.github.com/en/rest/users). Env's API_URL is URL() itself,
// as GitHub's is https://api.github.com. It starts signed in as
// Person{Subject: "583231", Username: "octocat", Name: "The Octocat", Email:
// "octocat@github.example", EmailVerified: true}. SetPerson sends the user's
// id (a JSON number when Subject is digits), login and name, and Email as
// the only, primary address.
func NewGitHub(t testing.TB) *Provider {
	t.Helper()
	p := newPlatform(t, "post", "", func(p *Provider, who Person) {
		var id any = who.Subject
		if n, err := strconv.ParseUint(who.Subject, 10, 64); err == nil {
			id = n
		}
		p.User = map[string]any{"login": who.Username, "id": id, "name": orNull(who.Name), "type": "User",
			"avatar_url": "https://avatars.githubusercontent.com/u/" + url.PathEscape(who.Subject) + "?v=4"}
		p.Emails = []map[string]any{}
		if who.Email != "" {
			p.Emails = append(p.Emails, map[string]any{"email": who.Email, "primary": true,
				"verified": who.EmailVerified, "visibility": "private"})
		}
	}, Person{Subject: "583231", Username: "octocat", Name: "The Octocat",
		Email: "octocat@github.example", EmailVerified: true})
	p.Set(func() { p.FormToken = true })
	check := func(w http.ResponseWriter, r *http.Request) bool {
		accept := r.Header.Get("Accept")
		if !strings.Contains(accept, "application/vnd.github+json") && !strings.Contains(accept, "application/json") {
			http.Error(w, "bad accept", http.StatusBadRequest)
			return false
		}
		if r.Header.Get("User-Agent") == "" { // GitHub refuses requests without one
			w.WriteHeader(http.StatusForbidden)
			return false
		}
		return true
	}
	p.HandleFunc("GET /user", func(w http.ResponseWriter, r *http.Request) {
		if check(w, r) {
			p.serveUser(w, r, func() any { return p.User })
		}
	})
	p.HandleFunc("GET /user/emails", func(w http.ResponseWriter, r *http.Request) {
		if check(w, r) {
			p.serveUser(w, r, func() any { return p.Emails })
		}
	})
	return p
}

// NewTwitch starts a fake Twitch: client authentication in the form body,
// JSON token answers, and Helix GET /helix/users answering {"data": [User]}
// ({"data": []} when User is nil), which wants the Client-Id header
// (https://dev.twitch.tv/docs/api/reference/#get-users). Env's API_URL is
// URL()+"/helix". It starts signed in as Person{Subject: "141981764",
// Username: "twitchdev", Name: "TwitchDev", Email: "dev@twitch.example",
// EmailVerified: true}. SetPerson sends id, login, display_name and the
// address only when it is verified, as Helix returns only verified ones.
func NewTwitch(t testing.TB) *Provider {
	t.Helper()
	p := newPlatform(t, "post", "/helix", func(p *Provider, who Person) {
		p.User = map[string]any{"id": who.Subject, "login": who.Username, "display_name": who.Name,
			"type": "", "broadcaster_type": "", "profile_image_url": ""}
		if who.Email != "" && who.EmailVerified {
			p.User["email"] = who.Email
		}
	}, Person{Subject: "141981764", Username: "twitchdev", Name: "TwitchDev",
		Email: "dev@twitch.example", EmailVerified: true})
	p.HandleFunc("GET /helix/users", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Client-Id") != ClientID {
			httpx.JSON(w, http.StatusUnauthorized, map[string]any{"error": "Unauthorized", "status": 401, "message": "Client ID and OAuth token do not match"})
			return
		}
		p.serveUser(w, r, func() any {
			users := []map[string]any{}
			if p.User != nil {
				users = append(users, p.User)
			}
			return map[string]any{"data": users}
		})
	})
	return p
}

// newPlatform starts a fake of a platform with a user API: New with
// clientAuth, the user API below apiPath, person writing a Person into the
// knobs in the platform's format (it runs under the fake's lock), signed in
// as first.
func newPlatform(t testing.TB, clientAuth, apiPath string, person func(p *Provider, who Person), first Person) *Provider {
	t.Helper()
	p := New(t, clientAuth)
	p.apiPath = apiPath
	p.Set(func() { p.person = func(who Person) { person(p, who) } })
	p.SetPerson(first)
	return p
}

// orNull is s, or JSON null when it is empty, as the providers send absent
// optional strings.
func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}
