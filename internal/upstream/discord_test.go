package upstream

import (
	"reflect"
	"testing"

	"hmid/internal/upstream/upstreamtest"
)

// fakeDiscord is a fake Discord whose GET /api/users/@me answers user.
func fakeDiscord(t *testing.T, user map[string]any) *upstreamtest.Provider {
	f := upstreamtest.NewDiscord(t)
	f.Set(func() { f.User = user })
	return f
}

func TestDiscordSignIn(t *testing.T) {
	f := fakeDiscord(t, map[string]any{
		"id": "80351110224678912", "username": "nelly", "discriminator": "0", "global_name": "Nelly",
		"avatar": "8342729096ea3675442027381ff50dfe", "verified": true, "email": "nelly@discord.example",
		"flags": 64, "premium_type": 1, "public_flags": 64, "mfa_enabled": true, "locale": "en-US",
	})
	g := newRig(t, f.Env("discord"))
	id, err := g.signIn(t, "discord")
	if err != nil {
		t.Fatal(err)
	}
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
			g := newRig(t, fakeDiscord(t, tc.user).Env("discord"))
			id, err := g.signIn(t, "discord")
			if err != nil {
				t.Fatal(err)
			}
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
