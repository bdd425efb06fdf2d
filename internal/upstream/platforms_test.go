package upstream

// The sign-ins with the built-in platforms, Discord, Twitch and GitHub,
// each against its fake from upstreamtest.

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"hmid/internal/upstream/upstreamtest"
)

// withUser makes f's user API answer user.
func withUser(f *upstreamtest.Provider, user map[string]any) *upstreamtest.Provider {
	f.Set(func() { f.User = user })
	return f
}

// fakeDiscord is a fake Discord whose GET /api/users/@me answers user.
func fakeDiscord(t *testing.T, user map[string]any) *upstreamtest.Provider {
	return withUser(upstreamtest.NewDiscord(t), user)
}

func TestDiscordSignIn(t *testing.T) {
	f := fakeDiscord(t, map[string]any{
		"id": "80351110224678912", "username": "nelly", "discriminator": "0", "global_name": "Nelly",
		"avatar": "8342729096ea3675442027381ff50dfe", "verified": true, "email": "nelly@discord.example",
		"flags": 64, "premium_type": 1, "public_flags": 64, "mfa_enabled": true, "locale": "en-US",
	})
	id := mustSignIn(t, f.Env("discord"), "discord")
	want := Identity{Provider: "discord", Subject: "80351110224678912", Email: "nelly@discord.example", EmailVerified: true,
		Username: "nelly", DisplayName: "Nelly",
		AvatarURL: "https://cdn.discordapp.com/avatars/80351110224678912/8342729096ea3675442027381ff50dfe.png"}
	checkIdentity(t, id, want)
	if id.Raw["locale"] != "en-US" {
		t.Errorf("Raw = %v, want the whole user object", id.Raw)
	}
}

func TestDiscordUnverifiedAndBareUser(t *testing.T) {
	for _, tc := range []struct {
		name string
		user map[string]any
		want Identity
	}{
		{"unverified address", map[string]any{"id": "1", "username": "u", "global_name": nil, "avatar": nil,
			"email": "u@example.com", "verified": false},
			Identity{Provider: "discord", Subject: "1", Email: "u@example.com", Username: "u", DisplayName: "u"}},
		{"no email scope", map[string]any{"id": "2", "username": "v", "avatar": "a_1269e74af4df7417b13759eae50c83dc"},
			Identity{Provider: "discord", Subject: "2", Username: "v", DisplayName: "v",
				AvatarURL: "https://cdn.discordapp.com/avatars/2/a_1269e74af4df7417b13759eae50c83dc.gif"}},
		{"null address marked verified", map[string]any{"id": "3", "username": "w", "email": nil, "verified": true},
			Identity{Provider: "discord", Subject: "3", Username: "w", DisplayName: "w"}},
		{"avatar hash that is not a hash", map[string]any{"id": "4", "username": "x", "avatar": "../../evil"},
			Identity{Provider: "discord", Subject: "4", Username: "x", DisplayName: "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := mustSignIn(t, fakeDiscord(t, tc.user).Env("discord"), "discord")
			checkIdentity(t, id, tc.want)
		})
	}
}

func TestDiscordUserWithoutValidID(t *testing.T) {
	for _, user := range []map[string]any{{"username": "nobody"}, {"id": "12/../3", "username": "x"}, {"id": 5}} {
		g := newRig(t, fakeDiscord(t, user).Env("discord"))
		if _, err := g.signIn(t, "discord"); !isKind(err, ErrProvider) {
			t.Errorf("user %v: err = %v, want ErrProvider", user, err)
		}
	}
}

// checkIdentity compares every field but Raw.
func checkIdentity(t *testing.T, got *Identity, want Identity) {
	t.Helper()
	if got == nil {
		t.Fatal("no identity")
	}
	g := *got
	g.Raw = nil
	if !reflect.DeepEqual(g, want) {
		t.Errorf("identity =\n %+v\nwant\n %+v", g, want)
	}
	if got.Raw == nil {
		t.Error("Raw is empty")
	}
}

// fakeTwitch is a fake Twitch whose Helix GET /helix/users answers user,
// or no user when it is nil.
func fakeTwitch(t *testing.T, user map[string]any) *upstreamtest.Provider {
	return withUser(upstreamtest.NewTwitch(t), user)
}

func TestTwitchSignIn(t *testing.T) {
	f := fakeTwitch(t, map[string]any{
		"id": "141981764", "login": "twitchdev", "display_name": "TwitchDev", "type": "", "broadcaster_type": "partner",
		"description": "Supporting third-party developers", "profile_image_url": "https://static-cdn.jtvnw.net/jtv_user_pictures/8a6381c7-d0c0-4576-b179-38bd5ce1d6af-profile_image-300x300.png",
		"offline_image_url": "", "view_count": 5980557, "email": "dev@twitch.example", "created_at": "2016-12-14T20:32:28Z",
	})
	id := mustSignIn(t, f.Env("twitch"), "twitch")
	checkIdentity(t, id, Identity{Provider: "twitch", Subject: "141981764", Email: "dev@twitch.example", EmailVerified: true,
		Username: "twitchdev", DisplayName: "TwitchDev",
		AvatarURL: "https://static-cdn.jtvnw.net/jtv_user_pictures/8a6381c7-d0c0-4576-b179-38bd5ce1d6af-profile_image-300x300.png"})
}

func TestTwitchWithoutEmail(t *testing.T) {
	g := newRig(t, fakeTwitch(t, map[string]any{
		"id": "7", "login": "quiet", "display_name": "", "profile_image_url": "http://insecure.example/p.png"}).Env("twitch"))
	id, err := g.signIn(t, "twitch")
	if err != nil {
		t.Fatal(err)
	}
	checkIdentity(t, id, Identity{Provider: "twitch", Subject: "7", Username: "quiet", DisplayName: "quiet"})
}

func TestTwitchNoUser(t *testing.T) {
	g := newRig(t, fakeTwitch(t, nil).Env("twitch"))
	if _, err := g.signIn(t, "twitch"); !isKind(err, ErrProvider) {
		t.Fatalf("err = %v, want ErrProvider", err)
	}
}

// fakeGitHub is a fake GitHub whose GET /user answers user and GET
// /user/emails answers emails.
func fakeGitHub(t *testing.T, user map[string]any, emails []map[string]any) *upstreamtest.Provider {
	f := upstreamtest.NewGitHub(t)
	f.Set(func() { f.User, f.Emails = user, emails })
	return f
}

var octocat = map[string]any{
	"login": "octocat", "id": 583231, "node_id": "MDQ6VXNlcjU4MzIzMQ==", "avatar_url": "https://avatars.githubusercontent.com/u/583231?v=4",
	"type": "User", "site_admin": false, "name": "The Octocat", "company": "@github", "email": "public@octocat.example",
}

func TestGitHubEmailSelection(t *testing.T) {
	for _, tc := range []struct {
		name         string
		emails       []map[string]any
		want         string
		wantVerified bool
	}{
		{"primary verified among others", []map[string]any{
			{"email": "old@octocat.example", "primary": false, "verified": true, "visibility": nil},
			{"email": "octocat@github.example", "primary": true, "verified": true, "visibility": "public"},
			{"email": "unverified@octocat.example", "primary": false, "verified": false, "visibility": nil},
		}, "octocat@github.example", true},
		{"primary unverified, another verified", []map[string]any{
			{"email": "verified@octocat.example", "primary": false, "verified": true},
			{"email": "new@octocat.example", "primary": true, "verified": false},
		}, "new@octocat.example", false},
		{"no addresses", []map[string]any{}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := mustSignIn(t, fakeGitHub(t, octocat, tc.emails).Env("github"), "github")
			checkIdentity(t, id, Identity{Provider: "github", Subject: "583231", Email: tc.want, EmailVerified: tc.wantVerified,
				Username: "octocat", DisplayName: "The Octocat", AvatarURL: "https://avatars.githubusercontent.com/u/583231?v=4"})
		})
	}
}

func TestGitHubNameless(t *testing.T) {
	user := map[string]any{"login": "ghost", "id": 10137, "name": nil, "avatar_url": "https://avatars.githubusercontent.com/u/10137?v=4"}
	id := mustSignIn(t, fakeGitHub(t, user, nil).Env("github"), "github")
	if id.DisplayName != "ghost" || id.Subject != "10137" || id.Email != "" {
		t.Errorf("identity = %+v", id)
	}
}

// GitHub answers a bad code with status 200 and an error body.
func TestGitHubTokenErrorWithStatus200(t *testing.T) {
	f := fakeGitHub(t, octocat, nil)
	f.Fail("/token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-www-form-urlencoded")
		_, _ = w.Write([]byte("error=bad_verification_code&error_description=The+code+passed+is+incorrect+or+expired.&error_uri=https%3A%2F%2Fdocs.github.com"))
	})
	g := newRig(t, f.Env("github"))
	_, err := g.signIn(t, "github")
	if !isKind(err, ErrProvider) || !strings.Contains(err.Error(), "bad_verification_code") {
		t.Fatalf("err = %v, want ErrProvider with the error code", err)
	}
}
