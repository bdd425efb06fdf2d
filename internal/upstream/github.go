package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/oauth2"
)

// GitHub's endpoints (https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps,
// https://docs.github.com/en/rest/users/users, https://docs.github.com/en/rest/users/emails).
const (
	githubAuthURL  = "https://github.com/login/oauth/authorize"
	githubTokenURL = "https://github.com/login/oauth/access_token"
	githubAPIURL   = "https://api.github.com"
)

// githubHeader is what GitHub's REST API asks every request to send.
var githubHeader = http.Header{
	"Accept":               {"application/vnd.github+json"},
	"X-Github-Api-Version": {"2022-11-28"},
}

// github signs in with GitHub: OAuth 2.0 with scopes "read:user user:email",
// then GET {api}/user and GET {api}/user/emails.
type github struct {
	oauthClient
	api string
}

var _ Provider = (*github)(nil)

func newGitHub(c endpointConfig, n *network) *github {
	return &github{oauthClient: newOAuthClient("github", "GitHub", c, n, oauth2.AuthStyleInParams, "read:user", "user:email"), api: c.apiURL}
}

// githubUser is the part of GitHub's user object hmid uses; id is a number.
type githubUser struct {
	ID        json.Number `json:"id"`
	Login     string      `json:"login"`
	Name      *string     `json:"name"`
	AvatarURL string      `json:"avatar_url"`
}

// githubEmail is one entry of GET /user/emails.
type githubEmail struct {
	Email    string `json:"email"`
	Primary  bool   `json:"primary"`
	Verified bool   `json:"verified"`
}

// Exchange redeems the code, reads the user and picks the address.
func (g *github) Exchange(ctx context.Context, code string, p Params) (*Identity, error) {
	ctx, cancel := g.net.bound(ctx)
	defer cancel()
	tok, err := g.exchange(ctx, code, p)
	if err != nil {
		return nil, err
	}
	var u githubUser
	raw, err := g.userObject(ctx, g.api+"/user", tok, githubHeader, &u)
	if err != nil {
		return nil, err
	}
	if _, err := strconv.ParseUint(u.ID.String(), 10, 64); err != nil {
		return nil, newError(ErrProvider, g.slug, "user object without a valid id", nil)
	}
	var emails []githubEmail
	if err := g.net.getJSON(ctx, g.slug, g.api+"/user/emails", tok, githubHeader, &emails); err != nil {
		return nil, err
	}
	id := &Identity{
		Provider: g.slug, Subject: u.ID.String(), Username: u.Login,
		DisplayName: strings.TrimSpace(deref(u.Name)), AvatarURL: httpsURL(u.AvatarURL), Raw: raw,
	}
	if id.DisplayName == "" {
		id.DisplayName = u.Login
	}
	id.Email, id.EmailVerified = githubAddress(emails)
	return id, nil
}

// githubAddress picks the primary address and tells whether GitHub verified
// it. Only the primary address is used: it is the one the person chose for
// their account, and taking another verified one would link by an address
// the person may not expect. An unverified primary is returned unverified,
// so it is shown but never links.
func githubAddress(emails []githubEmail) (string, bool) {
	for _, e := range emails {
		if e.Primary {
			addr := strings.TrimSpace(e.Email)
			return addr, e.Verified && addr != ""
		}
	}
	return "", false
}
