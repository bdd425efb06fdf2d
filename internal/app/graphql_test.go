package app_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"hmid/internal/app"
	"hmid/internal/apptest"
	"hmid/internal/clock/clocktest"
	"hmid/internal/config"
	"hmid/internal/dbtest"
	"hmid/internal/graphql"
)

const gqlPath = "/v1/graphql"

// gqlResult is a decoded GraphQL response.
type gqlResult struct {
	Data   map[string]any `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Path       []any          `json:"path"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

// code is the extensions.code of the first error ("" without errors).
func (g gqlResult) code() string {
	if len(g.Errors) == 0 {
		return ""
	}
	c, _ := g.Errors[0].Extensions["code"].(string)
	return c
}

// gqlPost sends a document by POST and returns the decoded answer, failing
// unless the status is want.
func gqlPost(t testing.TB, e *apptest.Env, tok, query string, vars map[string]any, want int) gqlResult {
	t.Helper()
	body := map[string]any{"query": query}
	if vars != nil {
		body["variables"] = vars
	}
	r := e.Do(t, apptest.Req{Method: "POST", Path: gqlPath, Token: tok, Body: body})
	if r.Status != want {
		t.Fatalf("POST %s: status %d, want %d; body %s", query, r.Status, want, r.Body)
	}
	var g gqlResult
	r.Decode(t, &g)
	return g
}

// gqlData runs a document that must succeed and returns its data.
func gqlData(t testing.TB, e *apptest.Env, tok, query string, vars map[string]any) map[string]any {
	t.Helper()
	g := gqlPost(t, e, tok, query, vars, http.StatusOK)
	if len(g.Errors) > 0 || g.Data == nil {
		t.Fatalf("%s: errors %+v", query, g.Errors)
	}
	return g.Data
}

// gqlCode runs a document that must fail and returns errors[0].extensions.code.
func gqlCode(t testing.TB, e *apptest.Env, tok, query string, vars map[string]any) string {
	t.Helper()
	g := gqlPost(t, e, tok, query, vars, http.StatusOK)
	if len(g.Errors) == 0 {
		t.Fatalf("%s: no errors, data %v", query, g.Data)
	}
	return g.code()
}

func wantCode(t testing.TB, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("extensions.code = %q, want %q", got, want)
	}
}

func wantRFC3339(t testing.TB, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("%v is not an RFC 3339 timestamp: %v", v, err)
	}
	return at
}

const gqlCreate = `mutation($in: CreateOAuthClientInput!) {
  createOauthClient(input: $in) { client { id name clientType allowedScopes redirectUris isFirstParty isActive createdAt } clientSecret }
}`

func gqlMkClient(t testing.TB, e *apptest.Env, tok string, in map[string]any) (id, secret string) {
	t.Helper()
	body := map[string]any{"name": "GraphQL App", "redirectUris": []string{cb}, "allowedScopes": []string{"openid", "profile"}}
	for k, v := range in {
		body[k] = v
	}
	out := gqlData(t, e, tok, gqlCreate, map[string]any{"in": body})["createOauthClient"].(map[string]any)
	secret, _ = out["clientSecret"].(string)
	return out["client"].(map[string]any)["id"].(string), secret
}

func TestGraphQLOAuthClients(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		owner := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		admin := e.Admin(t)

		// Create: confidential by default with a secret shown once; public without one.
		out := gqlData(t, e, owner.Token, gqlCreate, map[string]any{"in": map[string]any{
			"name": "Conf", "description": "d", "logoUrl": "https://app.example/logo.png", "homepageUrl": "https://app.example",
			"redirectUris": []string{cb, "myapp://cb"}, "allowedScopes": []string{"openid", "email"},
		}})["createOauthClient"].(map[string]any)
		conf := out["client"].(map[string]any)
		secret, _ := out["clientSecret"].(string)
		if conf["clientType"] != "confidential" || conf["name"] != "Conf" || !strings.HasPrefix(secret, "hm_sec_") || conf["isFirstParty"] != false || conf["isActive"] != true {
			t.Fatalf("created %v", out)
		}
		wantRFC3339(t, conf["createdAt"])
		confID := conf["id"].(string)
		pubID, pubSecret := gqlMkClient(t, e, owner.Token, map[string]any{"name": "Pub", "clientType": "public"})
		if pubSecret != "" {
			t.Fatalf("public client got a secret %q", pubSecret)
		}
		// The REST API sees the same client.
		rest := e.Call(t, "GET", "/v1/oauth/clients/"+confID, owner.Token, nil, http.StatusOK).JSON()["data"].(map[string]any)
		if rest["name"] != "Conf" || len(rest["allowed_scopes"].([]any)) != 2 || len(rest["redirect_uris"].([]any)) != 2 {
			t.Fatalf("REST view %v", rest)
		}

		// myOauthClients: the caller's own only.
		list := gqlData(t, e, owner.Token, `{ myOauthClients { id name clientType allowedScopes redirectUris description logoUrl } }`, nil)["myOauthClients"].([]any)
		if len(list) != 2 {
			t.Fatalf("myOauthClients %v", list)
		}
		byID := map[string]map[string]any{}
		for _, c := range list {
			m := c.(map[string]any)
			byID[m["id"].(string)] = m
		}
		if c := byID[confID]; c["logoUrl"] != "https://app.example/logo.png" || len(c["redirectUris"].([]any)) != 2 || c["allowedScopes"].([]any)[1] != "email" {
			t.Fatalf("conf %v", c)
		}
		if byID[pubID]["clientType"] != "public" {
			t.Fatalf("pub %v", byID[pubID])
		}
		if l := gqlData(t, e, other.Token, `{ myOauthClients { id } }`, nil)["myOauthClients"].([]any); len(l) != 0 {
			t.Fatalf("other user sees %v", l)
		}
		if l := gqlData(t, e, owner.Token, `{ myOauthClients(page: 2, limit: 1) { id } }`, nil)["myOauthClients"].([]any); len(l) != 1 {
			t.Fatalf("page 2 %v", l)
		}

		// Authentication and input errors.
		wantCode(t, gqlCode(t, e, "", `{ myOauthClients { id } }`, nil), "UNAUTHENTICATED")
		wantCode(t, gqlCode(t, e, "", gqlCreate, map[string]any{"in": map[string]any{"name": "x", "redirectUris": []string{cb}, "allowedScopes": []string{}}}), "UNAUTHENTICATED")
		wantCode(t, gqlCode(t, e, owner.Token, gqlCreate, map[string]any{"in": map[string]any{"name": "x", "redirectUris": []string{"javascript://x"}, "allowedScopes": []string{}}}), "BAD_USER_INPUT")
		wantCode(t, gqlCode(t, e, owner.Token, gqlCreate, map[string]any{"in": map[string]any{"name": "x", "redirectUris": []string{cb}, "allowedScopes": []string{"everything"}}}), "BAD_USER_INPUT")
		wantCode(t, gqlCode(t, e, owner.Token, gqlCreate, map[string]any{"in": map[string]any{"name": "x", "redirectUris": []string{cb}, "allowedScopes": []string{}, "clientType": "odd"}}), "BAD_USER_INPUT")
		// allowedScopes is required in GraphQL (spec 1): the document is refused before execution.
		wantCode(t, gqlCode(t, e, owner.Token, gqlCreate, map[string]any{"in": map[string]any{"name": "x", "redirectUris": []string{cb}}}), graphql.CodeValidationFailed)
		wantCode(t, gqlCode(t, e, owner.Token, gqlCreate, map[string]any{"in": map[string]any{"name": "x", "redirectUris": []string{cb}, "allowedScopes": []string{}, "isFirstParty": true}}), "FORBIDDEN")
		firstID, _ := gqlMkClient(t, e, admin.Token, map[string]any{"isFirstParty": true})

		// regenerateOauthClientSecret.
		const regen = `mutation($id: ID!) { regenerateOauthClientSecret(id: $id) { success clientSecret error } }`
		r := gqlData(t, e, owner.Token, regen, map[string]any{"id": confID})["regenerateOauthClientSecret"].(map[string]any)
		if r["success"] != true || r["error"] != nil || !strings.HasPrefix(r["clientSecret"].(string), "hm_sec_") || r["clientSecret"] == secret {
			t.Fatalf("regenerate %v", r)
		}
		for _, c := range []struct{ tok, id string }{{owner.Token, pubID}, {other.Token, confID}, {owner.Token, "not-a-uuid"}} {
			r := gqlData(t, e, c.tok, regen, map[string]any{"id": c.id})["regenerateOauthClientSecret"].(map[string]any)
			if r["success"] != false || r["clientSecret"] != nil || r["error"] == nil || r["error"] == "" {
				t.Fatalf("regenerate %s: %v", c.id, r)
			}
		}
		wantCode(t, gqlCode(t, e, "", regen, map[string]any{"id": confID}), "UNAUTHENTICATED")
		// A reader (oauth_clients:read) who may not update is refused in the payload, as {success: false, error}.
		reader := roleUser(t, e, "oauth_clients:read")
		wantPayloadFailure(t, gqlData(t, e, reader.Token, regen, map[string]any{"id": confID})["regenerateOauthClientSecret"])

		// deleteOauthClient.
		const del = `mutation($id: ID!) { deleteOauthClient(id: $id) { success error } }`
		wantCode(t, gqlCode(t, e, "", del, map[string]any{"id": pubID}), "UNAUTHENTICATED")
		wantPayloadFailure(t, gqlData(t, e, reader.Token, del, map[string]any{"id": pubID})["deleteOauthClient"])
		wantPayloadFailure(t, gqlData(t, e, admin.Token, del, map[string]any{"id": firstID})["deleteOauthClient"])
		if r := gqlData(t, e, other.Token, del, map[string]any{"id": pubID})["deleteOauthClient"].(map[string]any); r["success"] != false || r["error"] != "OAuth client not found" {
			t.Fatalf("delete by other %v", r)
		}
		if r := gqlData(t, e, owner.Token, del, map[string]any{"id": pubID})["deleteOauthClient"].(map[string]any); r["success"] != true || r["error"] != nil {
			t.Fatalf("delete %v", r)
		}
		e.Call(t, "GET", "/v1/oauth/clients/"+pubID, owner.Token, nil, http.StatusNotFound)
		if r := gqlData(t, e, owner.Token, del, map[string]any{"id": pubID})["deleteOauthClient"].(map[string]any); r["success"] != false {
			t.Fatalf("second delete %v", r)
		}
	})
}

// wantPayloadFailure checks a {success, error} payload that reports a failure.
func wantPayloadFailure(t *testing.T, v any) {
	t.Helper()
	r, ok := v.(map[string]any)
	if !ok || r["success"] != false || r["error"] == nil || r["error"] == "" || r["clientSecret"] != nil {
		t.Fatalf("want {success: false, error}, got %v", v)
	}
}

func TestGraphQLConsentsAndTokens(t *testing.T) {
	t.Parallel()
	apptest.Shared(t, func(t *testing.T, e *apptest.Env) {
		user := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		c := mkClient(t, e, user.Token, map[string]any{"name": "Alpha"})
		first := tokens(t, e, user.Token, c, authzParams(c.ID))
		tokens(t, e, other.Token, c, authzParams(c.ID))

		consents := gqlData(t, e, user.Token, `{ myOauthConsents { clientId clientName scopes isFirstParty grantedAt } }`, nil)["myOauthConsents"].([]any)
		if len(consents) != 1 {
			t.Fatalf("consents %v", consents)
		}
		k := consents[0].(map[string]any)
		if k["clientId"] != c.ID || k["clientName"] != "Alpha" || len(k["scopes"].([]any)) != 3 || k["isFirstParty"] != false {
			t.Fatalf("consent %v", k)
		}
		wantRFC3339(t, k["grantedAt"])

		toks := gqlData(t, e, user.Token, `{ myOauthTokens { id clientName scopes expiresAt } }`, nil)["myOauthTokens"].([]any)
		if len(toks) != 2 {
			t.Fatalf("tokens %v", toks)
		}
		var accessID string
		for _, x := range toks {
			m := x.(map[string]any)
			if m["clientName"] != "Alpha" || len(m["scopes"].([]any)) != 3 {
				t.Fatalf("token %v", m)
			}
			// The access token lives an hour, the refresh token 30 days.
			if at := wantRFC3339(t, m["expiresAt"]); at.Sub(e.Clock.Now()) == time.Hour {
				accessID = m["id"].(string)
			}
		}
		if accessID == "" {
			t.Fatalf("no access token among %v", toks)
		}

		// Anonymous callers and system keys (no user) are refused.
		wantCode(t, gqlCode(t, e, "", `{ myOauthConsents { clientName } }`, nil), "UNAUTHENTICATED")
		wantCode(t, gqlCode(t, e, "", `{ myOauthTokens { clientName } }`, nil), "UNAUTHENTICATED")
		wantCode(t, gqlCode(t, e, e.SystemKey, `{ myOauthTokens { clientName } }`, nil), "FORBIDDEN")

		// revokeOauthToken: another user's token is not found; the owner's goes with its pair.
		const revokeTok = `mutation($id: ID!) { revokeOauthToken(tokenId: $id) { success error } }`
		wantCode(t, gqlCode(t, e, "", revokeTok, map[string]any{"id": accessID}), "UNAUTHENTICATED")
		if r := gqlData(t, e, other.Token, revokeTok, map[string]any{"id": accessID})["revokeOauthToken"].(map[string]any); r["success"] != false || r["error"] != "token not found" {
			t.Fatalf("revoke by other %v", r)
		}
		if r := gqlData(t, e, user.Token, revokeTok, map[string]any{"id": accessID})["revokeOauthToken"].(map[string]any); r["success"] != true || r["error"] != nil {
			t.Fatalf("revoke %v", r)
		}
		e.Call(t, "GET", "/v1/oauth/userinfo", first["access_token"].(string), nil, http.StatusUnauthorized)

		// revokeOauthConsent: deletes the consent and revokes the client's tokens for the user only.
		second := tokens(t, e, user.Token, c, authzParams(c.ID))
		const revokeConsent = `mutation($id: ID!) { revokeOauthConsent(clientId: $id) { success error } }`
		wantCode(t, gqlCode(t, e, "", revokeConsent, map[string]any{"id": c.ID}), "UNAUTHENTICATED")
		if r := gqlData(t, e, user.Token, revokeConsent, map[string]any{"id": c.ID})["revokeOauthConsent"].(map[string]any); r["success"] != true {
			t.Fatalf("revoke consent %v", r)
		}
		e.Call(t, "GET", "/v1/oauth/userinfo", second["access_token"].(string), nil, http.StatusUnauthorized)
		if l := gqlData(t, e, user.Token, `{ myOauthConsents { clientName } myOauthTokens { id } }`, nil); len(l["myOauthConsents"].([]any)) != 0 || len(l["myOauthTokens"].([]any)) != 0 {
			t.Fatalf("left %v", l)
		}
		if l := gqlData(t, e, other.Token, `{ myOauthTokens { id } }`, nil)["myOauthTokens"].([]any); len(l) != 2 {
			t.Fatalf("other user's tokens %v", l)
		}
		if r := gqlData(t, e, user.Token, revokeConsent, map[string]any{"id": c.ID})["revokeOauthConsent"].(map[string]any); r["success"] != false || r["error"] != "no consent for that client" {
			t.Fatalf("second revoke %v", r)
		}
		if n := auditCount(t, e, "consent_revoked", c.ID); n != 1 {
			t.Fatalf("consent_revoked = %d", n)
		}
	})
}

func TestGraphQLTwoFactor(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		other := e.NewUser(t, apptest.UserSpec{})
		admin := e.Admin(t)
		noScope, _ := e.NewAPIKey(t, u.ID)
		readKey, _ := e.NewAPIKey(t, u.ID, "two_factor:read")
		const status = `query($u: String) { twoFactorStatus(userId: $u) { enabled enabledAt setupPlatform backupCodesRemaining } }`
		const requirement = `query($u: String) { userRequiresTwoFactor(userId: $u) { required requiredByRoles enabled canEnable } }`
		const setup = `mutation($in: SetupTwoFactorInput) { setupTwoFactor(input: $in) { secret qrCodeUrl qrCodeImage expiresAt platformSlug } }`
		const verify = `mutation($in: TwoFactorCodeInput!) { verifyTwoFactor(input: $in) { backupCodes message platformSlug } }`
		const regen = `mutation($in: TwoFactorCodeInput!) { regenerateBackupCodes(input: $in) { backupCodes message platformSlug } }`
		const disable = `mutation($in: TwoFactorCodeInput!) { disableTwoFactor(input: $in) }`

		// Access rules of the REST endpoints.
		wantCode(t, gqlCode(t, e, "", status, nil), "UNAUTHENTICATED")
		wantCode(t, gqlCode(t, e, "", setup, nil), "UNAUTHENTICATED")
		wantCode(t, gqlCode(t, e, noScope, status, nil), "FORBIDDEN")
		wantCode(t, gqlCode(t, e, noScope, requirement, nil), "FORBIDDEN")
		wantCode(t, gqlCode(t, e, readKey, setup, nil), "FORBIDDEN")
		wantCode(t, gqlCode(t, e, u.Token, status, map[string]any{"u": other.ID}), "FORBIDDEN")
		wantCode(t, gqlCode(t, e, e.SystemKey, status, nil), "BAD_USER_INPUT")
		wantCode(t, gqlCode(t, e, admin.Token, status, map[string]any{"u": "00000000-0000-0000-0000-000000000000"}), "NOT_FOUND")
		if s := gqlData(t, e, readKey, status, nil)["twoFactorStatus"].(map[string]any); s["enabled"] != false || s["enabledAt"] != nil || s["backupCodesRemaining"] != 0.0 {
			t.Fatalf("status %v", s)
		}
		req := gqlData(t, e, u.Token, requirement, nil)["userRequiresTwoFactor"].(map[string]any)
		if req["required"] != false || req["enabled"] != false || req["canEnable"] != true || len(req["requiredByRoles"].([]any)) != 0 {
			t.Fatalf("requirement %v", req)
		}
		wantCode(t, gqlCode(t, e, u.Token, setup, map[string]any{"in": map[string]any{"platformId": "no-such-platform"}}), "NOT_FOUND")

		// Setup and verify.
		s := gqlData(t, e, u.Token, setup, map[string]any{"in": map[string]any{}})["setupTwoFactor"].(map[string]any)
		secret := s["secret"].(string)
		if !strings.HasPrefix(s["qrCodeUrl"].(string), "otpauth://totp/") || !strings.HasPrefix(s["qrCodeImage"].(string), "data:image/png;base64,") || s["platformSlug"] != "email" {
			t.Fatalf("setup %v", s)
		}
		if exp := wantRFC3339(t, s["expiresAt"]); !exp.Equal(e.Clock.Now().Add(10 * time.Minute)) {
			t.Fatalf("expiresAt %v", exp)
		}
		wantCode(t, gqlCode(t, e, u.Token, verify, map[string]any{"in": map[string]any{"code": tfWrongCode(t, secret, e.Clock.Now())}}), "BAD_USER_INPUT")
		wantCode(t, gqlCode(t, e, u.Token, verify, map[string]any{"in": map[string]any{}}), graphql.CodeValidationFailed)
		v := gqlData(t, e, u.Token, verify, map[string]any{"in": map[string]any{"code": tfCode(t, secret, e.Clock.Now())}})["verifyTwoFactor"].(map[string]any)
		backup := v["backupCodes"].([]any)
		if len(backup) != 10 || v["message"] == "" || v["platformSlug"] != "email" {
			t.Fatalf("verify %v", v)
		}
		st := gqlData(t, e, u.Token, status, nil)["twoFactorStatus"].(map[string]any)
		if st["enabled"] != true || st["setupPlatform"] != "email" || st["backupCodesRemaining"] != 10.0 {
			t.Fatalf("status %v", st)
		}
		wantRFC3339(t, st["enabledAt"])
		// An admin reads another user's status (two_factor:manage through super admin).
		if st := gqlData(t, e, admin.Token, status, map[string]any{"u": u.ID})["twoFactorStatus"].(map[string]any); st["enabled"] != true {
			t.Fatalf("admin view %v", st)
		}
		if req := gqlData(t, e, u.Token, requirement, nil)["userRequiresTwoFactor"].(map[string]any); req["enabled"] != true {
			t.Fatalf("requirement %v", req)
		}

		// Regenerate with a fresh TOTP code (a backup code is refused).
		e.Clock.Advance(30 * time.Second)
		wantCode(t, gqlCode(t, e, u.Token, regen, map[string]any{"in": map[string]any{"code": backup[0]}}), "BAD_USER_INPUT")
		e.Clock.Advance(30 * time.Second)
		g := gqlData(t, e, u.Token, regen, map[string]any{"in": map[string]any{"code": tfCode(t, secret, e.Clock.Now())}})["regenerateBackupCodes"].(map[string]any)
		fresh := g["backupCodes"].([]any)
		if len(fresh) != 10 || fresh[0] == backup[0] || g["platformSlug"] != "email" {
			t.Fatalf("regenerate %v", g)
		}

		// Disable with a backup code: the JSON scalar carries {success, message}.
		wantCode(t, gqlCode(t, e, u.Token, disable, map[string]any{"in": map[string]any{"code": backup[1]}}), "BAD_USER_INPUT")
		wantCode(t, gqlCode(t, e, "", disable, map[string]any{"in": map[string]any{"code": fresh[0]}}), "UNAUTHENTICATED")
		d := gqlData(t, e, u.Token, disable, map[string]any{"in": map[string]any{"code": fresh[0]}})["disableTwoFactor"].(map[string]any)
		if d["success"] != true || d["message"] == "" {
			t.Fatalf("disable %v", d)
		}
		if st := gqlData(t, e, u.Token, status, nil)["twoFactorStatus"].(map[string]any); st["enabled"] != false {
			t.Fatalf("after disable %v", st)
		}
		wantCode(t, gqlCode(t, e, u.Token, disable, map[string]any{"in": map[string]any{"code": "123456"}}), "BAD_USER_INPUT")

		// Wrong codes are throttled as on REST.
		s = gqlData(t, e, u.Token, setup, nil)["setupTwoFactor"].(map[string]any)
		codes := []string{}
		for range 7 {
			codes = append(codes, gqlCode(t, e, u.Token, verify, map[string]any{"in": map[string]any{"code": tfWrongCode(t, s["secret"].(string), e.Clock.Now())}}))
		}
		if codes[0] != "BAD_USER_INPUT" || codes[6] != "TOO_MANY_REQUESTS" {
			t.Fatalf("throttle codes %v", codes)
		}
		throttled := gqlPost(t, e, u.Token, verify, map[string]any{"in": map[string]any{"code": "000000"}}, http.StatusOK)
		if ra, _ := throttled.Errors[0].Extensions["retryAfter"].(float64); throttled.code() != "TOO_MANY_REQUESTS" || ra < 1 {
			t.Fatalf("throttled %+v", throttled.Errors)
		}

		// An admin sets up two-factor authentication for another user.
		s = gqlData(t, e, admin.Token, setup, map[string]any{"in": map[string]any{"userId": other.ID}})["setupTwoFactor"].(map[string]any)
		v = gqlData(t, e, admin.Token, verify, map[string]any{"in": map[string]any{"userId": other.ID, "code": tfCode(t, s["secret"].(string), e.Clock.Now())}})["verifyTwoFactor"].(map[string]any)
		if len(v["backupCodes"].([]any)) != 10 {
			t.Fatalf("verify for other %v", v)
		}
		if st := gqlData(t, e, other.Token, status, nil)["twoFactorStatus"].(map[string]any); st["enabled"] != true {
			t.Fatalf("other status %v", st)
		}
	})
}

func TestGraphQLPublicAndRoles(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		admin := e.Admin(t)

		d := gqlData(t, e, "", `{ oauthScopes { name description } platforms { id name slug twoFactorSupported twoFactorRequired } }`, nil)
		scopes := d["oauthScopes"].([]any)
		if len(scopes) < 5 || scopes[0].(map[string]any)["name"] != "openid" || scopes[0].(map[string]any)["description"] == "" {
			t.Fatalf("scopes %v", scopes)
		}
		var email map[string]any
		for _, p := range d["platforms"].([]any) {
			if m := p.(map[string]any); m["slug"] == "email" {
				email = m
			}
		}
		if email == nil || email["twoFactorSupported"] != true || email["id"] == "" {
			t.Fatalf("platforms %v", d["platforms"])
		}

		// Root fields are nullable: a refused field does not take the others with it.
		g := gqlPost(t, e, "", `{ platforms { slug } myOauthClients { id } }`, nil, http.StatusOK)
		if g.code() != "UNAUTHENTICATED" || len(g.Errors[0].Path) != 1 || g.Errors[0].Path[0] != "myOauthClients" ||
			g.Data["myOauthClients"] != nil || len(g.Data["platforms"].([]any)) == 0 {
			t.Fatalf("partial result %+v", g)
		}

		const roles = `{ roles { id name requiresTwoFactor } }`
		wantCode(t, gqlCode(t, e, "", roles, nil), "UNAUTHENTICATED")
		wantCode(t, gqlCode(t, e, u.Token, roles, nil), "FORBIDDEN")
		list := gqlData(t, e, admin.Token, roles, nil)["roles"].([]any)
		rest := e.Call(t, "GET", "/v1/roles", admin.Token, nil, http.StatusOK).JSON()["data"].([]any)
		if len(list) != len(rest) || len(list) < 5 {
			t.Fatalf("roles %v, REST %d", list, len(rest))
		}
		for i, r := range list {
			m, want := r.(map[string]any), rest[i].(map[string]any)
			if m["id"] != want["id"] || m["name"] != want["name"] || m["requiresTwoFactor"] != want["requires_two_factor"] {
				t.Fatalf("role %d: %v, REST %v", i, m, want)
			}
		}
		reader := roleUser(t, e, "roles:read")
		if l := gqlData(t, e, reader.Token, `{ roles(limit: 2) { name } }`, nil)["roles"].([]any); len(l) != 2 {
			t.Fatalf("limited roles %v", l)
		}
	})
}

// introspectionQuery is the standard introspection query of GraphQL tools.
const introspectionQuery = `query IntrospectionQuery {
  __schema {
    queryType { name } mutationType { name } subscriptionType { name }
    types { ...FullType }
    directives { name description locations args { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description
  fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type {
  kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } }
}`

func TestGraphQLTransportAndLimits(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})

		// Introspection works, with mutations visible on POST.
		d := gqlData(t, e, "", introspectionQuery, nil)["__schema"].(map[string]any)
		if d["mutationType"].(map[string]any)["name"] != "Mutation" {
			t.Fatalf("mutationType %v", d["mutationType"])
		}
		names := map[string]bool{}
		for _, ty := range d["types"].([]any) {
			names[ty.(map[string]any)["name"].(string)] = true
		}
		for _, n := range []string{"OAuthClient", "CreateOAuthClientInput", "TwoFactorStatus", "JSON", "Platform", "Role"} {
			if !names[n] {
				t.Fatalf("introspection lacks %s", n)
			}
		}

		// GET runs queries, with variables and operationName.
		q := url.Values{"query": {`query Scopes { oauthScopes { name } } query Me($u: String) { twoFactorStatus(userId: $u) { enabled } }`},
			"operationName": {"Me"}, "variables": {`{"u": "` + u.ID + `"}`}}
		r := e.Do(t, apptest.Req{Method: "GET", Path: gqlPath + "?" + q.Encode(), Token: u.Token})
		var g gqlResult
		r.Decode(t, &g)
		if r.Status != http.StatusOK || len(g.Errors) != 0 || g.Data["twoFactorStatus"].(map[string]any)["enabled"] != false {
			t.Fatalf("GET query: %d %s", r.Status, r.Body)
		}
		// GET never runs a mutation.
		q = url.Values{"query": {`mutation { deleteOauthClient(id: "x") { success } }`}}
		r = e.Do(t, apptest.Req{Method: "GET", Path: gqlPath + "?" + q.Encode(), Token: u.Token})
		r.Decode(t, &g)
		if r.Status != http.StatusMethodNotAllowed || g.code() != graphql.CodeMethodNotAllowed || r.Header.Get("Allow") != "POST" {
			t.Fatalf("GET mutation: %d %s", r.Status, r.Body)
		}
		// In a document with both, operationName decides.
		both := `query Q { platforms { slug } } mutation M { deleteOauthClient(id: "x") { success } }`
		for op, want := range map[string]int{"Q": http.StatusOK, "M": http.StatusMethodNotAllowed} {
			q = url.Values{"query": {both}, "operationName": {op}}
			if r = e.Do(t, apptest.Req{Method: "GET", Path: gqlPath + "?" + q.Encode(), Token: u.Token}); r.Status != want {
				t.Fatalf("GET operation %s: %d %s", op, r.Status, r.Body)
			}
		}
		// A GET query whose resolver fails is not mistaken for a mutation.
		q = url.Values{"query": {`{ myOauthClients { id } }`}}
		r = e.Do(t, apptest.Req{Method: "GET", Path: gqlPath + "?" + q.Encode()})
		r.Decode(t, &g)
		if r.Status != http.StatusOK || g.code() != "UNAUTHENTICATED" {
			t.Fatalf("GET anonymous: %d %s", r.Status, r.Body)
		}
		// An invalid GET query is a validation error, not a mutation.
		q = url.Values{"query": {`{ noSuchField }`}}
		r = e.Do(t, apptest.Req{Method: "GET", Path: gqlPath + "?" + q.Encode()})
		r.Decode(t, &g)
		if r.Status != http.StatusOK || g.code() != graphql.CodeValidationFailed {
			t.Fatalf("GET invalid: %d %s", r.Status, r.Body)
		}
		for _, bad := range []string{"", "?query=", "?query=%7B+platforms+%7B+id+%7D+%7D&variables=%5B1"} {
			r = e.Do(t, apptest.Req{Method: "GET", Path: gqlPath + bad})
			r.Decode(t, &g)
			if r.Status != http.StatusBadRequest || g.code() != graphql.CodeBadRequest {
				t.Fatalf("GET %q: %d %s", bad, r.Status, r.Body)
			}
		}

		// Unreadable POST bodies answer 400.
		for _, body := range []string{`{`, `[]`, `{"query": 5}`, `{"query": ""}`, `{"query": "{ platforms { id } }", "variables": "x"}`} {
			r = e.Do(t, apptest.Req{Method: "POST", Path: gqlPath, Body: body})
			r.Decode(t, &g)
			if r.Status != http.StatusBadRequest || g.code() != graphql.CodeBadRequest {
				t.Fatalf("POST %s: %d %s", body, r.Status, r.Body)
			}
		}
		big := `{"query": "{ platforms { id } }", "variables": {"pad": "` + strings.Repeat("x", 1<<20) + `"}}`
		if r = e.Do(t, apptest.Req{Method: "POST", Path: gqlPath, Body: big}); r.Status != http.StatusBadRequest {
			t.Fatalf("oversized body: %d", r.Status)
		}

		// Document errors.
		wantCode(t, gqlCode(t, e, "", `{ platforms { id `, nil), graphql.CodeParseFailed)
		wantCode(t, gqlCode(t, e, "", `{ platforms { nope } }`, nil), graphql.CodeValidationFailed)
		wantCode(t, gqlCode(t, e, "", `query($n: Int) { roles(limit: $n) { id } }`, map[string]any{"n": "ten"}), graphql.CodeValidationFailed)
		wantCode(t, gqlCode(t, e, "", strings.Repeat(" ", graphql.MaxQueryBytes)+`{ platforms { id } }`, nil), graphql.CodeValidationFailed)

		// Depth limit: an ofType chain one level deeper than MaxDepth.
		deep := "kind"
		for range graphql.MaxDepth - 2 {
			deep = "ofType { " + deep + " }"
		}
		if d := gqlData(t, e, "", `{ __type(name: "OAuthClient") { `+deep+` } }`, nil); d["__type"] == nil {
			t.Fatal("query at the depth limit refused")
		}
		g = gqlPost(t, e, "", `{ __type(name: "OAuthClient") { ofType { `+deep+` } } }`, nil, http.StatusOK)
		if g.code() != graphql.CodeValidationFailed || !strings.Contains(g.Errors[0].Message, "exceeds max depth") || g.Data != nil {
			t.Fatalf("too deep: %+v", g)
		}

		// Complexity limit: more selections than MaxSelections, here by aliases
		// and by a fragment spread many times.
		var sb strings.Builder
		sb.WriteString("{")
		for i := range graphql.MaxSelections {
			sb.WriteString(" a")
			sb.WriteString(strings.Repeat("x", i%7))
			sb.WriteString(string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + ": __typename")
		}
		sb.WriteString(" platforms { id } }")
		g = gqlPost(t, e, "", sb.String(), nil, http.StatusOK)
		if g.code() != graphql.CodeTooComplex || g.Data != nil {
			t.Fatalf("too many selections: %+v", g.Errors)
		}
		frag := `fragment P on Platform { id name slug twoFactorSupported twoFactorRequired }
		         fragment Q on Query { platforms { ...P ...P ...P ...P ...P ...P ...P ...P ...P ...P } }
		         fragment R on Query { ...Q ...Q ...Q ...Q ...Q ...Q ...Q ...Q ...Q ...Q }
		         { ...R }`
		wantCode(t, gqlCode(t, e, "", frag, nil), graphql.CodeTooComplex)

		// Bearer authentication is the REST one: a bad token is a 401, an
		// OAuth access token is not accepted (403), before any execution.
		e.Call(t, "POST", gqlPath, "hm_st_bogus", map[string]any{"query": "{ platforms { id } }"}, http.StatusUnauthorized)
		c := mkClient(t, e, u.Token, nil)
		at := tokens(t, e, u.Token, c, authzParams(c.ID))["access_token"].(string)
		e.Call(t, "POST", gqlPath, at, map[string]any{"query": "{ myOauthClients { id } }"}, http.StatusForbidden)
	})
}

// BenchmarkGraphQLMyOauthClients measures query myOauthClients through the
// whole app (router, authentication, GraphQL, SQLite) for a user with ten clients.
func BenchmarkGraphQLMyOauthClients(b *testing.B) {
	fake := clocktest.NewFake(apptest.Start)
	srv, err := app.New(context.Background(), config.Config{
		Addr: ":0", PublicURL: "http://hmid.test", DatabaseURL: dbtest.SQLite(b),
		SecretKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", MailFrom: "hmid@localhost", LogLevel: "error",
	}, app.Options{Clock: fake, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), CachePrefix: dbtest.Key()})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	e := &apptest.Env{Server: srv, Clock: fake}
	u := e.NewUser(b, apptest.UserSpec{})
	post := func(query string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		req := httptest.NewRequest("POST", gqlPath, strings.NewReader(query))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+u.Token)
		srv.ServeHTTP(w, req)
		if w.Code != http.StatusOK || strings.Contains(w.Body.String(), `"errors"`) {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
		return w
	}
	for range 10 {
		post(`{"query": "mutation { createOauthClient(input: {name: \"Bench\", redirectUris: [\"https://app.example/cb\"], allowedScopes: [\"openid\"]}) { clientSecret } }"}`)
	}
	const q = `{"query": "{ myOauthClients { id name clientType allowedScopes redirectUris createdAt } }"}`
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		post(q)
	}
}
