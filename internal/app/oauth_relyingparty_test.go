package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"hmid/internal/apptest"
)

// TestRelyingPartyLifecycle is a relying party written the way developers
// write one, golang.org/x/oauth2 with go-oidc, using nothing but what
// discovery announces. Its client has ES256 ID tokens, a post-logout
// redirect URI and a back-channel logout URI. It signs in (code flow with
// PKCE), verifies the ID token, refreshes, introspects its access token with
// its own credentials (RFC 7662), sends the browser to the
// end_session_endpoint with id_token_hint (RP-Initiated Logout 1.0), receives
// a logout token for the session at its back-channel URI and verifies it
// against the same JWKS (Back-Channel Logout 1.0), and finally revokes its
// refresh token (RFC 7009), after which introspection answers inactive.
func TestRelyingPartyLifecycle(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		ctx := context.Background()
		user := e.NewUser(t, apptest.UserSpec{})
		rp := newFakeRP(t)
		redirect, postLogout := rp.srv.URL+"/cb", rp.srv.URL+"/logged-out"
		c := mkClient(t, e, user.Token, map[string]any{"redirect_uris": []string{redirect},
			"id_token_signed_response_alg": "ES256", "post_logout_redirect_uris": []string{postLogout},
			"backchannel_logout_uri": rp.srv.URL + "/bcl", "allowed_scopes": []string{"openid", "email", "offline_access"}})

		provider, err := oidc.NewProvider(ctx, e.URL)
		if err != nil {
			t.Fatalf("discovery: %v", err)
		}
		var meta struct {
			EndSession    string `json:"end_session_endpoint"`
			Introspection string `json:"introspection_endpoint"`
			Revocation    string `json:"revocation_endpoint"`
		}
		if err := provider.Claims(&meta); err != nil || meta.EndSession == "" || meta.Introspection == "" || meta.Revocation == "" {
			t.Fatalf("discovery lacks an endpoint: %+v, %v", meta, err)
		}
		conf := &oauth2.Config{ClientID: c.ID, ClientSecret: c.Secret, RedirectURL: redirect,
			Scopes: []string{"openid", "email", "offline_access"}, Endpoint: provider.Endpoint()}
		verifier := provider.Verifier(&oidc.Config{ClientID: c.ID, SupportedSigningAlgs: []string{"ES256"}, Now: e.Clock.Now})

		// Sign in, verify, refresh.
		tok := pkceFlow(t, ctx, e, conf, user.Token, "n-rp")
		rawID, _ := tok.Extra("id_token").(string)
		idt, err := verifier.Verify(ctx, rawID)
		if err != nil || idt.Subject != user.ID || idt.Nonce != "n-rp" {
			t.Fatalf("ID token: %+v, %v", idt, err)
		}
		var sid struct {
			SID string `json:"sid"`
		}
		if err := idt.Claims(&sid); err != nil || sid.SID == "" {
			t.Fatalf("the ID token names no session (sid): %v", err)
		}
		tok = refreshWith(t, ctx, conf, tok.RefreshToken)
		if _, err := verifier.Verify(ctx, tok.Extra("id_token").(string)); err != nil {
			t.Fatalf("refreshed ID token: %v", err)
		}

		// Introspection with client_secret_basic, as a resource server of
		// the client would.
		introspected := func(token string) map[string]any {
			t.Helper()
			req, _ := http.NewRequestWithContext(ctx, "POST", meta.Introspection, strings.NewReader(url.Values{"token": {token}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var m map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("introspection: %d, %v", resp.StatusCode, err)
			}
			return m
		}
		if m := introspected(tok.AccessToken); m["active"] != true || m["client_id"] != c.ID || m["sub"] != user.ID {
			t.Fatalf("introspection of the live access token: %v", m)
		}

		// RP-Initiated Logout: the browser (the session's cookie) is sent to
		// the end_session_endpoint and comes back to the registered URI.
		logout := meta.EndSession + "?" + url.Values{"id_token_hint": {rawID}, "post_logout_redirect_uri": {postLogout}, "state": {"bye"}}.Encode()
		req, _ := http.NewRequestWithContext(ctx, "GET", logout, nil)
		req.Header.Set("Cookie", "hmid_session="+user.Token)
		req.Header.Set("Accept", "text/html")
		noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != postLogout+"?state=bye" {
			t.Fatalf("end session: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		e.Call(t, "GET", "/v1/users/me", user.Token, nil, http.StatusUnauthorized)

		// Back-channel: the logout token names the session of the ID token
		// and verifies against the JWKS discovery points to.
		lt := rp.await(t, e, rawID)
		keys := oidc.NewRemoteKeySet(ctx, e.URL+"/v1/oauth/jwks")
		payload, err := keys.VerifySignature(ctx, lt)
		if err != nil {
			t.Fatalf("logout token signature: %v", err)
		}
		var claims struct {
			Iss    string         `json:"iss"`
			Aud    string         `json:"aud"`
			Sub    string         `json:"sub"`
			SID    string         `json:"sid"`
			Events map[string]any `json:"events"`
		}
		if err := json.Unmarshal(payload, &claims); err != nil || claims.Iss != e.URL || claims.Aud != c.ID ||
			claims.Sub != user.ID || claims.SID != sid.SID || claims.Events["http://schemas.openid.net/event/backchannel-logout"] == nil {
			t.Fatalf("logout token claims %+v, %v", claims, err)
		}

		// The relying party drops its refresh token; introspection agrees.
		form := url.Values{"token": {tok.RefreshToken}, "token_type_hint": {"refresh_token"}, "client_id": {c.ID}, "client_secret": {c.Secret}}
		rv, err := http.PostForm(meta.Revocation, form)
		if err != nil {
			t.Fatal(err)
		}
		rv.Body.Close()
		if rv.StatusCode != http.StatusOK {
			t.Fatalf("revocation: %d", rv.StatusCode)
		}
		if m := introspected(tok.RefreshToken); m["active"] != false || len(m) != 1 {
			t.Fatalf("introspection of the revoked refresh token: %v", m)
		}
	}, apptest.AllowLoopbackOutbound)
}
