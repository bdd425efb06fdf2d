package app_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"hmid/internal/apptest"
	"hmid/internal/config"
	"hmid/internal/db"
	"hmid/internal/dbtest"
	"hmid/internal/oauth/signing"
)

// jwtKid returns the kid of a compact JWT's header.
func jwtKid(t *testing.T, raw string) string {
	t.Helper()
	head, err := base64.RawURLEncoding.DecodeString(strings.SplitN(raw, ".", 2)[0])
	if err != nil {
		t.Fatalf("JWT header: %v", err)
	}
	var h struct {
		Alg, Kid string
	}
	if err := json.Unmarshal(head, &h); err != nil {
		t.Fatalf("JWT header: %v", err)
	}
	return h.Kid
}

// jwksKids returns the kids of the JWK set, by algorithm, checking that each
// key has the members of its type (RFC 7518 §6.2.1, §6.3.1).
func jwksKids(t *testing.T, e *apptest.Env) map[string][]string {
	t.Helper()
	var set struct {
		Keys []signing.JWK `json:"keys"`
	}
	e.Call(t, "GET", "/v1/oauth/jwks", "", nil, http.StatusOK).Decode(t, &set)
	out := map[string][]string{}
	for _, k := range set.Keys {
		switch k.Alg {
		case "RS256":
			if k.Kty != "RSA" || k.N == "" || k.E == "" || k.X != "" || k.Crv != "" {
				t.Fatalf("RSA key %+v", k)
			}
		case "ES256":
			if k.Kty != "EC" || k.Crv != "P-256" || len(k.X) != 43 || len(k.Y) != 43 || k.N != "" {
				t.Fatalf("EC key %+v", k)
			}
		default:
			t.Fatalf("key of alg %q", k.Alg)
		}
		if k.Use != "sig" || k.Kid == "" {
			t.Fatalf("key %+v", k)
		}
		out[k.Alg] = append(out[k.Alg], k.Kid)
	}
	return out
}

// pkceFlow runs authorize with PKCE S256 (consenting when asked) and the code
// exchange through golang.org/x/oauth2.
func pkceFlow(t *testing.T, ctx context.Context, e *apptest.Env, conf *oauth2.Config, userTok, nonce string) *oauth2.Token {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL("st4te", oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce))
	r := e.Do(t, apptest.Req{Method: "GET", Path: strings.TrimPrefix(authURL, e.URL), Token: userTok})
	var u *url.URL
	if r.Status == http.StatusOK {
		u = consent(t, e, userTok, r.JSON()["pending_authorization_id"].(string), true)
	} else {
		u = location(t, r)
	}
	if u.Query().Get("code") == "" {
		t.Fatalf("authorize answered %s", u)
	}
	tok, err := conf.Exchange(ctx, u.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	return tok
}

// refreshWith runs the refresh_token grant through golang.org/x/oauth2.
func refreshWith(t *testing.T, ctx context.Context, conf *oauth2.Config, rt string) *oauth2.Token {
	t.Helper()
	tok, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: rt, Expiry: time.Now().Add(-time.Hour)}).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	return tok
}

// TestOAuthSigningKeysWithGoOIDC drives RS256 and ES256 clients with
// golang.org/x/oauth2 and verifies their ID tokens with go-oidc, which reads
// discovery and fetches the JWKS: code flow with PKCE, refresh, a key
// rotation (the function "hmid keys rotate" calls) after which old tokens
// still verify and new ones carry the new kid, and the old kid leaving the
// JWKS once its grace has passed.
func TestOAuthSigningKeysWithGoOIDC(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		user := e.NewUser(t, apptest.UserSpec{})
		provider, err := oidc.NewProvider(ctx, e.URL)
		if err != nil {
			t.Fatalf("discovery: %v", err)
		}
		var algs struct {
			Algs []string `json:"id_token_signing_alg_values_supported"`
		}
		if err := provider.Claims(&algs); err != nil || strings.Join(algs.Algs, " ") != "HS256 RS256 ES256" {
			t.Fatalf("id_token_signing_alg_values_supported = %v, %v", algs.Algs, err)
		}
		for _, alg := range []string{"RS256", "ES256"} {
			c := mkClient(t, e, user.Token, map[string]any{"id_token_signed_response_alg": alg,
				"allowed_scopes": []string{"openid", "email", "offline_access"}})
			conf := &oauth2.Config{ClientID: c.ID, ClientSecret: c.Secret, RedirectURL: cb,
				Scopes: []string{"openid", "email", "offline_access"}, Endpoint: provider.Endpoint()}
			verifier := provider.Verifier(&oidc.Config{ClientID: c.ID, SupportedSigningAlgs: []string{alg}, Now: e.Clock.Now})

			tok := pkceFlow(t, ctx, e, conf, user.Token, "n-"+alg)
			first, _ := tok.Extra("id_token").(string)
			idt, err := verifier.Verify(ctx, first)
			if err != nil {
				t.Fatalf("%s: verify the code flow's ID token: %v", alg, err)
			}
			var claims struct {
				Email string `json:"email"`
			}
			if err := idt.Claims(&claims); err != nil || idt.Nonce != "n-"+alg || idt.Subject != user.ID || claims.Email != user.Email {
				t.Fatalf("%s: claims nonce %q sub %q email %q, %v", alg, idt.Nonce, idt.Subject, claims.Email, err)
			}
			oldKid := jwtKid(t, first)
			if kids := jwksKids(t, e); len(kids[alg]) != 1 || kids[alg][0] != oldKid {
				t.Fatalf("%s: JWKS %v, token kid %s", alg, kids, oldKid)
			}
			tok = refreshWith(t, ctx, conf, tok.RefreshToken)
			if _, err := verifier.Verify(ctx, tok.Extra("id_token").(string)); err != nil {
				t.Fatalf("%s: verify the refreshed ID token: %v", alg, err)
			}

			// Rotate this algorithm's key, as "hmid keys rotate --alg" does.
			keys, err := e.Server.OAuth.Keys.Rotate(ctx, alg)
			if err != nil {
				t.Fatal(err)
			}
			var newKid string
			for _, k := range keys {
				if k.Alg == alg && k.RetiredAt == nil {
					newKid = k.Kid
				}
			}
			if newKid == "" || newKid == oldKid {
				t.Fatalf("%s: keys after rotation %+v", alg, keys)
			}
			if kids := jwksKids(t, e); len(kids[alg]) != 2 || kids[alg][0] != newKid || kids[alg][1] != oldKid {
				t.Fatalf("%s: JWKS after rotation %v, want %s then %s", alg, kids, newKid, oldKid)
			}
			// A verifier that fetches the JWKS now still accepts the old token.
			fresh := oidc.NewVerifier(e.URL, oidc.NewRemoteKeySet(ctx, e.URL+"/v1/oauth/jwks"),
				&oidc.Config{ClientID: c.ID, SupportedSigningAlgs: []string{alg}, Now: e.Clock.Now})
			if _, err := fresh.Verify(ctx, first); err != nil {
				t.Fatalf("%s: old token after rotation: %v", alg, err)
			}
			if _, err := e.Server.OAuth.VerifyIDToken(ctx, first, false); err != nil {
				t.Fatalf("%s: the server's own check of the old token: %v", alg, err)
			}
			// New tokens carry the new kid; the first verifier, whose cached
			// set lacks it, fetches the set again and accepts them.
			tok = refreshWith(t, ctx, conf, tok.RefreshToken)
			second := tok.Extra("id_token").(string)
			if kid := jwtKid(t, second); kid != newKid {
				t.Fatalf("%s: refreshed token kid %s, want the new %s", alg, kid, newKid)
			}
			if _, err := verifier.Verify(ctx, second); err != nil {
				t.Fatalf("%s: new token: %v", alg, err)
			}

			// Once every token of the old key has expired, the key leaves the
			// JWKS, the server refuses it, and the job deletes it.
			e.Clock.Advance(signing.KeyGrace + time.Minute)
			if kids := jwksKids(t, e); len(kids[alg]) != 1 || kids[alg][0] != newKid {
				t.Fatalf("%s: JWKS after the grace %v, want only %s", alg, kids, newKid)
			}
			late := oidc.NewVerifier(e.URL, oidc.NewRemoteKeySet(ctx, e.URL+"/v1/oauth/jwks"),
				&oidc.Config{ClientID: c.ID, SupportedSigningAlgs: []string{alg}, Now: e.Clock.Now, SkipExpiryCheck: true})
			if _, err := late.Verify(ctx, first); err == nil {
				t.Fatalf("%s: a token of the dropped key still verifies", alg)
			}
			if _, err := late.Verify(ctx, second); err != nil {
				t.Fatalf("%s: token of the current key: %v", alg, err)
			}
			if _, err := e.Server.OAuth.VerifyIDToken(ctx, first, true); err == nil {
				t.Fatalf("%s: the server still accepts the dropped key", alg)
			}
			if err := e.Server.OAuth.Keys.Maintain(ctx, 0); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := e.Server.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM oauth_signing_keys WHERE kid = $1`, oldKid).Scan(&n); err != nil || n != 0 {
				t.Fatalf("%s: old key rows %d, %v", alg, n, err)
			}
		}
	})
}

// TestOAuthIDTokenAlgSetting checks HMID_ID_TOKEN_ALG: clients registered
// without an algorithm get it (public clients included, which then can
// verify their tokens), an explicit algorithm wins, and an unknown one is a
// validation error.
func TestOAuthIDTokenAlgSetting(t *testing.T) {
	t.Parallel()
	alg := func(t *testing.T, e *apptest.Env, tok string, body map[string]any) (string, *apptest.Resp) {
		t.Helper()
		b := map[string]any{"name": "App", "redirect_uris": []string{cb}}
		for k, v := range body {
			b[k] = v
		}
		r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/oauth/clients", Token: tok, Body: b})
		if r.Status != http.StatusCreated {
			return "", r
		}
		return r.JSON()["data"].(map[string]any)["id_token_signed_response_alg"].(string), r
	}
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		if a, _ := alg(t, e, u.Token, map[string]any{"client_type": "public"}); a != "HS256" {
			t.Fatalf("default for a public client = %q, want HS256 (spec)", a)
		}
		if a, _ := alg(t, e, u.Token, map[string]any{"id_token_signed_response_alg": "ES256"}); a != "ES256" {
			t.Fatalf("explicit ES256 = %q", a)
		}
		_, r := alg(t, e, u.Token, map[string]any{"id_token_signed_response_alg": "PS256"})
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "HS256, RS256 or ES256") {
			t.Fatalf("PS256: %d %s", r.Status, r.Body)
		}
	})
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		if a, _ := alg(t, e, u.Token, map[string]any{"client_type": "public"}); a != "ES256" {
			t.Fatalf("public client with HMID_ID_TOKEN_ALG=ES256 got %q", a)
		}
		if a, _ := alg(t, e, u.Token, nil); a != "ES256" {
			t.Fatalf("confidential client with HMID_ID_TOKEN_ALG=ES256 got %q", a)
		}
		if a, _ := alg(t, e, u.Token, map[string]any{"id_token_signed_response_alg": "HS256"}); a != "HS256" {
			t.Fatalf("explicit HS256 = %q", a)
		}
		// The public client's ES256 token verifies against the JWKS.
		pc := mkClient(t, e, u.Token, map[string]any{"client_type": "public"})
		provider, err := oidc.NewProvider(context.Background(), e.URL)
		if err != nil {
			t.Fatal(err)
		}
		ep := provider.Endpoint()
		ep.AuthStyle = oauth2.AuthStyleInParams
		conf := &oauth2.Config{ClientID: pc.ID, RedirectURL: cb, Scopes: []string{"openid"}, Endpoint: ep}
		tok := pkceFlow(t, context.Background(), e, conf, u.Token, "pub")
		v := provider.Verifier(&oidc.Config{ClientID: pc.ID, SupportedSigningAlgs: []string{"ES256"}, Now: e.Clock.Now})
		if _, err := v.Verify(context.Background(), tok.Extra("id_token").(string)); err != nil {
			t.Fatalf("public client's ES256 token: %v", err)
		}
	}, func(c *config.Config) { c.IDTokenAlg = "ES256" })
}

// TestSigningKeysRotateByAge checks the key job: it rotates a key once it is
// older than the configured age, not before, and deletes the retired key
// after its grace.
func TestSigningKeysRotateByAge(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		first := jwksKids(t, e)
		const age = 24 * time.Hour
		e.Clock.Advance(age - time.Minute)
		if err := e.Server.OAuth.Keys.Maintain(ctx, age); err != nil {
			t.Fatal(err)
		}
		if kids := jwksKids(t, e); len(kids["RS256"]) != 1 || len(kids["ES256"]) != 1 {
			t.Fatalf("rotated before the age: %v", kids)
		}
		e.Clock.Advance(2 * time.Minute)
		if err := e.Server.OAuth.Keys.Maintain(ctx, age); err != nil {
			t.Fatal(err)
		}
		kids := jwksKids(t, e)
		for _, alg := range signing.Algs {
			if len(kids[alg]) != 2 || kids[alg][1] != first[alg][0] || kids[alg][0] == first[alg][0] {
				t.Fatalf("%s after the age: %v, first %v", alg, kids[alg], first[alg])
			}
		}
		e.Clock.Advance(signing.KeyGrace)
		if err := e.Server.OAuth.Keys.Maintain(ctx, age); err != nil {
			t.Fatal(err)
		}
		keys, err := e.Server.OAuth.Keys.List(ctx)
		if err != nil || len(keys) != 2 || keys[0].Generation != 2 || keys[1].Generation != 2 {
			t.Fatalf("keys after the grace: %+v, %v", keys, err)
		}
	})
}

// TestSigningKeysLegacyRow checks that a database with the single RS256 key
// of earlier versions (slot 'rs256') keeps its key through migration 0840:
// same kid, still published and signing.
func TestSigningKeysLegacyRow(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		u := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, u.Token, map[string]any{"id_token_signed_response_alg": "RS256"})
		old := jwksKids(t, e)["RS256"][0]
		var sealed string
		var created int64
		d := e.Server.DB
		if err := d.QueryRowContext(ctx, `SELECT private_key, created_at FROM oauth_signing_keys WHERE kid = $1`, old).Scan(&sealed, &created); err != nil {
			t.Fatal(err)
		}
		// Put the table back as it was before 0840, with the key in its slot.
		for _, q := range []string{
			`DROP TABLE oauth_signing_keys`,
			`CREATE TABLE oauth_signing_keys (slot TEXT PRIMARY KEY, kid TEXT NOT NULL, private_key TEXT NOT NULL, created_at BIGINT NOT NULL)`,
			`DELETE FROM schema_migrations WHERE version = '0840_signing_keys'`,
		} {
			if _, err := d.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		if _, err := d.ExecContext(ctx, `INSERT INTO oauth_signing_keys (slot, kid, private_key, created_at) VALUES ('rs256', $1, $2, $3)`, old, sealed, created); err != nil {
			t.Fatal(err)
		}
		if err := d.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		keys, err := e.Server.OAuth.Keys.List(ctx)
		if err != nil || len(keys) != 1 || keys[0].Alg != "RS256" || keys[0].Kid != old || keys[0].Generation != 1 || keys[0].RetiredAt != nil ||
			!keys[0].CreatedAt.Equal(db.FromTS(created)) {
			t.Fatalf("keys after migration: %+v, %v", keys, err)
		}
		e.Clock.Advance(time.Minute) // past the signing cache
		conf := &oauth2.Config{ClientID: c.ID, ClientSecret: c.Secret, RedirectURL: cb, Scopes: []string{"openid"},
			Endpoint: oauth2.Endpoint{AuthURL: e.URL + "/v1/oauth/authorize", TokenURL: e.URL + "/v1/oauth/token"}}
		tok := pkceFlow(t, ctx, e, conf, u.Token, "legacy")
		if kid := jwtKid(t, tok.Extra("id_token").(string)); kid != old {
			t.Fatalf("kid %s, want the migrated %s", kid, old)
		}
		if _, err := e.Server.OAuth.VerifyIDToken(ctx, tok.Extra("id_token").(string), false); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSigningKeysTwoInstances runs two instances on one PostgreSQL database:
// they publish the same keys; when both find a key due for rotation at once,
// exactly one new key per algorithm results; a rotation on one is in the
// other's JWKS at once and signs there within the key cache's time.
func TestSigningKeysTwoInstances(t *testing.T) {
	t.Parallel()
	if dbtest.PostgresURL() == "" {
		t.Skip("HMID_TEST_POSTGRES_URL is not set")
	}
	ctx := context.Background()
	a, b := apptest.NewPair(t, dbtest.RedisURL())
	first := jwksKids(t, a)
	if got := jwksKids(t, b); got["RS256"][0] != first["RS256"][0] || got["ES256"][0] != first["ES256"][0] {
		t.Fatalf("A publishes %v, B %v", first, got)
	}

	// Both instances find the keys a day old and rotate at the same moment.
	a.Clock.Advance(25 * time.Hour)
	b.Clock.Advance(25 * time.Hour)
	envs := []*apptest.Env{a, b}
	errs := apptest.AtOnce(len(envs), func(i int) error {
		return envs[i].Server.OAuth.Keys.Maintain(ctx, 24*time.Hour)
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	keys, err := a.Server.OAuth.Keys.List(ctx)
	if err != nil || len(keys) != 4 {
		t.Fatalf("after racing rotations: %+v, %v", keys, err)
	}
	kidsA, kidsB := jwksKids(t, a), jwksKids(t, b)
	for _, alg := range signing.Algs {
		if len(kidsA[alg]) != 2 || strings.Join(kidsA[alg], " ") != strings.Join(kidsB[alg], " ") || kidsA[alg][1] != first[alg][0] {
			t.Fatalf("%s: A %v, B %v", alg, kidsA[alg], kidsB[alg])
		}
	}

	// A rotation by A (or by the CLI) is in B's JWKS at once, and B signs
	// with it once its key cache has expired.
	u := a.NewUser(t, apptest.UserSpec{})
	c := mkClient(t, a, u.Token, map[string]any{"id_token_signed_response_alg": "ES256", "allowed_scopes": []string{"openid", "offline_access"}})
	conf := &oauth2.Config{ClientID: c.ID, ClientSecret: c.Secret, RedirectURL: cb, Scopes: []string{"openid", "offline_access"},
		Endpoint: oauth2.Endpoint{AuthURL: b.URL + "/v1/oauth/authorize", TokenURL: b.URL + "/v1/oauth/token"}}
	tok := pkceFlow(t, ctx, b, conf, u.Token, "pair")
	if kid := jwtKid(t, tok.Extra("id_token").(string)); kid != kidsA["ES256"][0] {
		t.Fatalf("B signs with %s, want %s", kid, kidsA["ES256"][0])
	}
	rotated, err := a.Server.OAuth.Keys.Rotate(ctx, "ES256")
	if err != nil {
		t.Fatal(err)
	}
	newKid := ""
	for _, k := range rotated {
		if k.Alg == "ES256" && k.RetiredAt == nil {
			newKid = k.Kid
		}
	}
	if newKid == "" || newKid == kidsA["ES256"][0] {
		t.Fatalf("rotated keys %+v", rotated)
	}
	if kids := jwksKids(t, b); kids["ES256"][0] != newKid {
		t.Fatalf("B's JWKS %v lacks the new key %s", kids["ES256"], newKid)
	}
	b.Clock.Advance(time.Minute)
	tok = refreshWith(t, ctx, conf, tok.RefreshToken)
	if kid := jwtKid(t, tok.Extra("id_token").(string)); kid != newKid {
		t.Fatalf("B signs with %s after the rotation, want %s", kid, newKid)
	}
}
