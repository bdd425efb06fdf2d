package upstream

import (
	"testing"

	"hmid/internal/upstream/upstreamtest"
)

// fakeTwitch is a fake Twitch whose Helix GET /helix/users answers user,
// or no user when it is nil.
func fakeTwitch(t *testing.T, user map[string]any) *upstreamtest.Provider {
	f := upstreamtest.NewTwitch(t)
	f.Set(func() { f.User = user })
	return f
}

func TestTwitchSignIn(t *testing.T) {
	f := fakeTwitch(t, map[string]any{
		"id": "141981764", "login": "twitchdev", "display_name": "TwitchDev", "type": "", "broadcaster_type": "partner",
		"description": "Supporting third-party developers", "profile_image_url": "https://static-cdn.jtvnw.net/jtv_user_pictures/8a6381c7-d0c0-4576-b179-38bd5ce1d6af-profile_image-300x300.png",
		"offline_image_url": "", "view_count": 5980557, "email": "dev@twitch.example", "created_at": "2016-12-14T20:32:28Z",
	})
	g := newRig(t, f.Env("twitch"))
	id, err := g.signIn(t, "twitch")
	if err != nil {
		t.Fatal(err)
	}
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
