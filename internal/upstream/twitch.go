package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"golang.org/x/oauth2"
)

// Twitch's endpoints (https://dev.twitch.tv/docs/authentication/getting-tokens-oauth/,
// https://dev.twitch.tv/docs/api/reference/#get-users).
const (
	twitchAuthURL  = "https://id.twitch.tv/oauth2/authorize"
	twitchTokenURL = "https://id.twitch.tv/oauth2/token"
	twitchAPIURL   = "https://api.twitch.tv/helix"
)

// twitch signs in with Twitch: OAuth 2.0 with scope "user:read:email", then
// Helix GET {api}/users, which answers the token's own user.
type twitch struct {
	oauthClient
	api string
}

var _ Provider = (*twitch)(nil)

func newTwitch(c endpointConfig, n *network) *twitch {
	// Twitch's token endpoint reads client_id and client_secret from the
	// form body (RFC 6749 §2.3.1 client_secret_post).
	return &twitch{oauthClient: newOAuthClient("twitch", "Twitch", c, n, oauth2.AuthStyleInParams, "user:read:email"), api: c.apiURL}
}

// twitchUsers is Helix's Get Users answer: {"data": [user]}.
type twitchUsers struct {
	Data []json.RawMessage `json:"data"`
}

// twitchUser is the part of a Helix user hmid uses. Helix returns email only
// with the user:read:email scope and only as "the user's verified email
// address", so an address from Twitch is verified.
type twitchUser struct {
	ID              string `json:"id"`
	Login           string `json:"login"`
	DisplayName     string `json:"display_name"`
	Email           string `json:"email"`
	ProfileImageURL string `json:"profile_image_url"`
}

// Exchange redeems the code and reads the user from Helix, which wants the
// application's Client-Id beside the user's token.
func (t *twitch) Exchange(ctx context.Context, code string, p Params) (*Identity, error) {
	ctx, cancel := t.net.bound(ctx)
	defer cancel()
	tok, err := t.exchange(ctx, code, p)
	if err != nil {
		return nil, err
	}
	var users twitchUsers
	h := http.Header{"Client-Id": {t.conf.ClientID}}
	if err := t.net.getJSON(ctx, t.slug, t.api+"/users", tok, h, &users); err != nil {
		return nil, err
	}
	if len(users.Data) != 1 {
		return nil, newError(ErrProvider, t.slug, "user API answered no user", nil)
	}
	var u twitchUser
	raw, err := decodeObject(t.slug, users.Data[0], &u)
	if err != nil {
		return nil, err
	}
	if !isDigits(u.ID) {
		return nil, newError(ErrProvider, t.slug, "user object without a valid id", nil)
	}
	id := &Identity{
		Provider: t.slug, Subject: u.ID, Username: u.Login, DisplayName: u.DisplayName,
		Email: strings.TrimSpace(u.Email), AvatarURL: httpsURL(u.ProfileImageURL), Raw: raw,
	}
	id.EmailVerified = id.Email != ""
	if id.DisplayName == "" {
		id.DisplayName = u.Login
	}
	return id, nil
}
