package upstream

import (
	"net/http"
	"strings"
	"testing"

	"hmid/internal/upstream/upstreamtest"
)

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
			g := newRig(t, fakeGitHub(t, octocat, tc.emails).Env("github"))
			id, err := g.signIn(t, "github")
			if err != nil {
				t.Fatal(err)
			}
			checkIdentity(t, id, Identity{Provider: "github", Subject: "583231", Email: tc.want, EmailVerified: tc.wantVerified,
				Username: "octocat", DisplayName: "The Octocat", AvatarURL: "https://avatars.githubusercontent.com/u/583231?v=4"})
		})
	}
}

func TestGitHubNameless(t *testing.T) {
	user := map[string]any{"login": "ghost", "id": 10137, "name": nil, "avatar_url": "https://avatars.githubusercontent.com/u/10137?v=4"}
	g := newRig(t, fakeGitHub(t, user, nil).Env("github"))
	id, err := g.signIn(t, "github")
	if err != nil {
		t.Fatal(err)
	}
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
