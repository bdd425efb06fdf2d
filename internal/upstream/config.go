package upstream

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// endpointConfig is one provider's settings after FromEnv's checks.
type endpointConfig struct {
	clientID, clientSecret string
	redirectURL            string
	authURL, tokenURL      string // OAuth 2.0 providers
	apiURL                 string // base of the user API
	issuer                 string // OpenID Connect providers
}

// builtin describes a provider hmid knows by slug.
type builtin struct {
	slug                     string
	oidc                     bool
	auth, token, api, issuer string // defaults
}

var builtins = []builtin{
	{slug: "discord", auth: discordAuthURL, token: discordTokenURL, api: discordAPIURL},
	{slug: "twitch", auth: twitchAuthURL, token: twitchTokenURL, api: twitchAPIURL},
	{slug: "github", auth: githubAuthURL, token: githubTokenURL, api: githubAPIURL},
	{slug: "google", oidc: true, issuer: googleIssuer},
}

// slugPattern is the shape of a generic provider's name: lowercase letters,
// digits and inner hyphens, so it is a path segment and, upper-cased with
// "_" for "-", part of an environment variable name.
var slugPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$`)

// reservedSlugs cannot name a generic provider: the built-in platforms.
var reservedSlugs = map[string]bool{"email": true, "discord": true, "twitch": true, "github": true, "google": true}

// FromEnv builds the registry from the HMID_LOGIN_* variables (names fixed by
// the project's decisions):
//
//   - HMID_LOGIN_<SLUG>_CLIENT_ID and _CLIENT_SECRET for discord, twitch,
//     github and google; a provider without a client id is not offered.
//   - _AUTH_URL, _TOKEN_URL and _API_URL (the user API's base, Discord's is
//     https://discord.com/api) override the endpoints of discord, twitch and
//     github; _ISSUER overrides google's issuer (https://accounts.google.com).
//   - HMID_LOGIN_PROVIDERS=acme,corp names generic OpenID Connect providers,
//     each with HMID_LOGIN_<NAME>_ISSUER, _CLIENT_ID, _CLIENT_SECRET and
//     _NAME (the button's label, default the name); "-" in a name is "_" in
//     its variables.
//
// Each redirect URI is publicURL + "/login/{slug}/callback". A client id
// without a secret, an endpoint variable the provider does not use, a URL
// that is not absolute http(s), a bad or duplicate generic name, or a listed
// generic provider without issuer or client id is an error naming the
// variable.
func FromEnv(getenv func(string) string, publicURL string) (*Registry, error) {
	reg := &Registry{net: newNetwork()}
	base := strings.TrimRight(publicURL, "/")
	for _, b := range builtins {
		p, err := fromEnvBuiltin(getenv, base, b, reg.net)
		if err != nil {
			return nil, err
		}
		if p != nil {
			reg.list = append(reg.list, p)
		}
	}
	generic, err := genericSlugs(getenv("HMID_LOGIN_PROVIDERS"))
	if err != nil {
		return nil, err
	}
	for _, slug := range generic {
		p, err := fromEnvGeneric(getenv, base, slug, reg.net)
		if err != nil {
			return nil, err
		}
		reg.list = append(reg.list, p)
	}
	if len(reg.list) > 0 {
		if err := checkURL("HMID_PUBLIC_URL", base); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// envPrefix is the variable prefix of slug: HMID_LOGIN_MY_CORP_ for my-corp.
func envPrefix(slug string) string {
	return "HMID_LOGIN_" + strings.ToUpper(strings.ReplaceAll(slug, "-", "_")) + "_"
}

func fromEnvBuiltin(getenv func(string) string, base string, b builtin, n *network) (Provider, error) {
	pre := envPrefix(b.slug)
	get := func(k string) string { return strings.TrimSpace(getenv(pre + k)) }
	c := endpointConfig{clientID: get("CLIENT_ID"), clientSecret: get("CLIENT_SECRET"),
		redirectURL: base + "/login/" + b.slug + "/callback"}
	if c.clientID == "" {
		return nil, nil
	}
	if c.clientSecret == "" {
		return nil, fmt.Errorf("%sCLIENT_ID is set but %sCLIENT_SECRET is not", pre, pre)
	}
	// Variables that do not apply to this kind of provider are refused,
	// so a typo does not silently send people to the real provider.
	unused := []string{"ISSUER"}
	if b.oidc {
		unused = []string{"AUTH_URL", "TOKEN_URL", "API_URL"}
	}
	for _, k := range unused {
		if get(k) != "" {
			return nil, fmt.Errorf("%s%s does not apply to %s", pre, k, b.slug)
		}
	}
	var err error
	if b.oidc {
		if c.issuer, err = urlVar(pre+"ISSUER", get("ISSUER"), b.issuer); err != nil {
			return nil, err
		}
		return newOpenID(b.slug, "Google", c, n), nil
	}
	if c.authURL, err = urlVar(pre+"AUTH_URL", get("AUTH_URL"), b.auth); err != nil {
		return nil, err
	}
	if c.tokenURL, err = urlVar(pre+"TOKEN_URL", get("TOKEN_URL"), b.token); err != nil {
		return nil, err
	}
	if c.apiURL, err = urlVar(pre+"API_URL", get("API_URL"), b.api); err != nil {
		return nil, err
	}
	c.apiURL = strings.TrimRight(c.apiURL, "/")
	switch b.slug {
	case "discord":
		return newDiscord(c, n), nil
	case "twitch":
		return newTwitch(c, n), nil
	default:
		return newGitHub(c, n), nil
	}
}

// genericSlugs parses HMID_LOGIN_PROVIDERS: comma-separated names, spaces
// ignored, upper case folded.
func genericSlugs(list string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, s := range strings.Split(list, ",") {
		s = strings.ToLower(strings.TrimSpace(s))
		if s == "" {
			continue
		}
		switch {
		case !slugPattern.MatchString(s):
			return nil, fmt.Errorf("HMID_LOGIN_PROVIDERS: %q is not a valid name (lowercase letters, digits and inner hyphens, at most 32)", s)
		case reservedSlugs[s]:
			return nil, fmt.Errorf("HMID_LOGIN_PROVIDERS: %q is a built-in platform; configure it with HMID_LOGIN_%s_*", s, strings.ToUpper(s))
		case seen[s]:
			return nil, fmt.Errorf("HMID_LOGIN_PROVIDERS: %q is listed twice", s)
		}
		seen[s] = true
		out = append(out, s)
	}
	return out, nil
}

func fromEnvGeneric(getenv func(string) string, base, slug string, n *network) (Provider, error) {
	pre := envPrefix(slug)
	get := func(k string) string { return strings.TrimSpace(getenv(pre + k)) }
	c := endpointConfig{clientID: get("CLIENT_ID"), clientSecret: get("CLIENT_SECRET"),
		redirectURL: base + "/login/" + slug + "/callback"}
	for _, k := range []string{"ISSUER", "CLIENT_ID", "CLIENT_SECRET"} {
		if get(k) == "" {
			return nil, fmt.Errorf("HMID_LOGIN_PROVIDERS lists %q but %s%s is not set", slug, pre, k)
		}
	}
	for _, k := range []string{"AUTH_URL", "TOKEN_URL", "API_URL"} {
		if get(k) != "" {
			return nil, fmt.Errorf("%s%s does not apply to an OpenID Connect provider (its endpoints come from %sISSUER)", pre, k, pre)
		}
	}
	var err error
	if c.issuer, err = urlVar(pre+"ISSUER", get("ISSUER"), ""); err != nil {
		return nil, err
	}
	name := get("NAME")
	if name == "" {
		name = slug
	}
	return newOpenID(slug, name, c, n), nil
}

// urlVar returns v, or def when v is empty, after checking it is an
// absolute http(s) URL.
func urlVar(name, v, def string) (string, error) {
	if v == "" {
		v = def
	}
	return v, checkURL(name, v)
}

func checkURL(name, v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("%s must be an absolute http or https URL, got %q", name, v)
	}
	return nil
}
