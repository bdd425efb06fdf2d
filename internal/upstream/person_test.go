package upstream

import (
	"testing"
	"time"

	"hmid/internal/clock/clocktest"
	"hmid/internal/upstream/upstreamtest"
)

// Each fake writes a Person in its provider's format the way hmid reads it
// back, so tests elsewhere can choose who signs in without knowing the
// formats; the fakes' first person signs in too.
func TestFakePerson(t *testing.T) {
	verified := upstreamtest.Person{Subject: "4242", Username: "ada", Name: "Ada Lovelace",
		Email: "ada@example.com", EmailVerified: true}
	unverified := verified
	unverified.EmailVerified = false
	bare := upstreamtest.Person{Subject: "77", Username: "bare"}
	for _, tc := range []struct {
		slug string
		fake func(t *testing.T, clk *clocktest.Fake) (*upstreamtest.Provider, map[string]string)
		who  *upstreamtest.Person // nil: the fake's first person
		want Identity
	}{
		{"discord", discordFake, nil, Identity{Subject: "80351110224678912", Email: "nelly@discord.example", EmailVerified: true, Username: "nelly", DisplayName: "Nelly"}},
		{"discord", discordFake, &verified, Identity{Subject: "4242", Email: "ada@example.com", EmailVerified: true, Username: "ada", DisplayName: "Ada Lovelace"}},
		{"discord", discordFake, &unverified, Identity{Subject: "4242", Email: "ada@example.com", Username: "ada", DisplayName: "Ada Lovelace"}},
		{"discord", discordFake, &bare, Identity{Subject: "77", Username: "bare", DisplayName: "bare"}},
		{"github", githubFake, nil, Identity{Subject: "583231", Email: "octocat@github.example", EmailVerified: true, Username: "octocat", DisplayName: "The Octocat",
			AvatarURL: "https://avatars.githubusercontent.com/u/583231?v=4"}},
		{"github", githubFake, &unverified, Identity{Subject: "4242", Email: "ada@example.com", Username: "ada", DisplayName: "Ada Lovelace",
			AvatarURL: "https://avatars.githubusercontent.com/u/4242?v=4"}},
		{"github", githubFake, &bare, Identity{Subject: "77", Username: "bare", DisplayName: "bare", AvatarURL: "https://avatars.githubusercontent.com/u/77?v=4"}},
		{"twitch", twitchFake, nil, Identity{Subject: "141981764", Email: "dev@twitch.example", EmailVerified: true, Username: "twitchdev", DisplayName: "TwitchDev"}},
		{"twitch", twitchFake, &verified, Identity{Subject: "4242", Email: "ada@example.com", EmailVerified: true, Username: "ada", DisplayName: "Ada Lovelace"}},
		{"twitch", twitchFake, &unverified, Identity{Subject: "4242", Username: "ada", DisplayName: "Ada Lovelace"}},
		{"acme", oidcFake, nil, Identity{Subject: "oidc-user-1"}},
		{"acme", oidcFake, &verified, Identity{Subject: "4242", Email: "ada@example.com", EmailVerified: true, Username: "ada", DisplayName: "Ada Lovelace"}},
		{"acme", oidcFake, &unverified, Identity{Subject: "4242", Email: "ada@example.com", Username: "ada", DisplayName: "Ada Lovelace"}},
		{"acme", oidcFake, &bare, Identity{Subject: "77", Username: "bare", DisplayName: "bare"}},
	} {
		name := tc.slug + "/first"
		if tc.who != nil {
			name = tc.slug + "/" + tc.who.Username
			if tc.who.Email != "" && !tc.who.EmailVerified {
				name += " unverified"
			}
		}
		t.Run(name, func(t *testing.T) {
			clk := clocktest.NewFake(time.Now())
			f, env := tc.fake(t, clk)
			if tc.who != nil {
				f.SetPerson(*tc.who)
			}
			id, err := newRigWith(t, env, clk).signIn(t, tc.slug)
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Provider = tc.slug
			checkIdentity(t, id, tc.want)
		})
	}
}

func discordFake(t *testing.T, _ *clocktest.Fake) (*upstreamtest.Provider, map[string]string) {
	f := upstreamtest.NewDiscord(t)
	return f, f.Env("discord")
}

func githubFake(t *testing.T, _ *clocktest.Fake) (*upstreamtest.Provider, map[string]string) {
	f := upstreamtest.NewGitHub(t)
	return f, f.Env("github")
}

func twitchFake(t *testing.T, _ *clocktest.Fake) (*upstreamtest.Provider, map[string]string) {
	f := upstreamtest.NewTwitch(t)
	return f, f.Env("twitch")
}

func oidcFake(t *testing.T, clk *clocktest.Fake) (*upstreamtest.Provider, map[string]string) {
	o := upstreamtest.NewOIDC(t, clk.Now)
	return o.Provider, o.Env("acme")
}
