package upstream

import (
	"context"
	"strings"

	"golang.org/x/oauth2"
)

// Discord's endpoints and the CDN that serves avatars
// (https://discord.com/developers/docs/topics/oauth2,
// https://discord.com/developers/docs/reference#image-formatting).
const (
	discordAuthURL  = "https://discord.com/oauth2/authorize"
	discordTokenURL = "https://discord.com/api/oauth2/token"
	discordAPIURL   = "https://discord.com/api"
	discordCDN      = "https://cdn.discordapp.com"
)

// discord signs in with Discord: OAuth 2.0 with scopes "identify email",
// then GET {api}/users/@me.
type discord struct {
	oauthClient
	api string
}

var _ Provider = (*discord)(nil)

func newDiscord(c endpointConfig, n *network) *discord {
	// Discord reads the client's credentials from HTTP Basic (RFC 6749
	// §2.3.1 client_secret_basic).
	return &discord{oauthClient: newOAuthClient("discord", "Discord", c, n, oauth2.AuthStyleInHeader, "identify", "email"), api: c.apiURL}
}

// discordUser is the part of Discord's user object
// (https://discord.com/developers/docs/resources/user#user-object) hmid uses.
// verified tells whether the address was verified by Discord.
type discordUser struct {
	ID         string  `json:"id"`
	Username   string  `json:"username"`
	GlobalName *string `json:"global_name"`
	Avatar     *string `json:"avatar"`
	Email      *string `json:"email"`
	Verified   bool    `json:"verified"`
}

// Exchange redeems the code and reads /users/@me.
func (d *discord) Exchange(ctx context.Context, code string, p Params) (*Identity, error) {
	ctx, cancel := d.net.bound(ctx)
	defer cancel()
	tok, err := d.exchange(ctx, code, p)
	if err != nil {
		return nil, err
	}
	var u discordUser
	raw, err := d.userObject(ctx, d.api+"/users/@me", tok, nil, &u)
	if err != nil {
		return nil, err
	}
	if !isDigits(u.ID) {
		return nil, newError(ErrProvider, d.slug, "user object without a valid id", nil)
	}
	id := &Identity{
		Provider: d.slug, Subject: u.ID, Username: u.Username,
		DisplayName: deref(u.GlobalName), Raw: raw,
	}
	if id.DisplayName == "" {
		id.DisplayName = u.Username
	}
	if u.Email != nil {
		id.Email = strings.TrimSpace(*u.Email)
		id.EmailVerified = u.Verified && id.Email != ""
	}
	if h := deref(u.Avatar); h != "" && isDiscordHash(h) {
		ext := ".png"
		if strings.HasPrefix(h, "a_") { // animated avatar
			ext = ".gif"
		}
		id.AvatarURL = discordCDN + "/avatars/" + u.ID + "/" + h + ext
	}
	return id, nil
}

// isDiscordHash accepts what Discord's image hashes look like (hex with an
// optional "a_"), so a strange value cannot bend the CDN URL.
func isDiscordHash(s string) bool {
	s = strings.TrimPrefix(s, "a_")
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
