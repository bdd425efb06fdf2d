package signin_test

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
)

// spaPage is a single-page app of another origin than hmid, as a browser
// app built against hmid would be: it reads discovery, starts the
// authorization code flow with PKCE, and on its redirect URI redeems the
// code at the token endpoint and calls UserInfo, all with fetch() across
// origins. It then tries a route hmid does not open to other origins, which
// the browser must block, and shows everything in #result.
var spaPage = template.Must(template.New("spa").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>SPA</title></head>
<body><h1>SPA</h1><pre id="status">starting</pre>
<script type="module">
const issuer = {{.Issuer}}, clientID = {{.ClientID}}, redirectURI = location.origin + "/cb";
const status = document.getElementById("status");
const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
function show(id, value) {
  const pre = document.createElement("pre");
  pre.id = id;
  pre.textContent = JSON.stringify(value);
  document.body.append(pre);
}
async function start() {
  const disco = await (await fetch(issuer + "/.well-known/openid-configuration")).json();
  sessionStorage.setItem("disco", JSON.stringify(disco));
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
  const state = b64url(crypto.getRandomValues(new Uint8Array(16)));
  sessionStorage.setItem("verifier", verifier);
  sessionStorage.setItem("state", state);
  const challenge = b64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  const q = new URLSearchParams({response_type: "code", client_id: clientID, redirect_uri: redirectURI,
    scope: "openid profile email", state, code_challenge: challenge, code_challenge_method: "S256"});
  location.assign(disco.authorization_endpoint + "?" + q);
}
async function finish(params) {
  const disco = JSON.parse(sessionStorage.getItem("disco"));
  if (params.get("state") !== sessionStorage.getItem("state")) throw new Error("state mismatch");
  const tokenRes = await fetch(disco.token_endpoint, {method: "POST",
    headers: {"Content-Type": "application/x-www-form-urlencoded"},
    body: new URLSearchParams({grant_type: "authorization_code", code: params.get("code"), redirect_uri: redirectURI,
      client_id: clientID, code_verifier: sessionStorage.getItem("verifier")})});
  const tokens = await tokenRes.json();
  if (!tokenRes.ok) throw new Error("token endpoint: " + JSON.stringify(tokens));
  // The Authorization header makes this a preflighted request.
  const infoRes = await fetch(disco.userinfo_endpoint, {headers: {Authorization: "Bearer " + tokens.access_token}});
  const info = await infoRes.json();
  let blocked = false;
  try {
    await fetch(issuer + "/v1/users/me", {headers: {Authorization: "Bearer " + tokens.access_token}});
  } catch (e) {
    blocked = true;
  }
  show("result", {issuer: disco.issuer, token_type: tokens.token_type, scope: tokens.scope, has_refresh_token: !!tokens.refresh_token,
    userinfo_status: infoRes.status, sub: info.sub, email: info.email, other_route_blocked: blocked});
}
const params = new URLSearchParams(location.search);
(params.has("code") ? finish(params) : start()).catch((e) => show("error", String(e)));
</script></body></html>`))

// TestBrowserSPAAcrossOrigins runs a public single-page app served from
// another origin than hmid in Chromium: it fetches discovery, signs the
// user in with the code flow and PKCE through hmid's login and consent
// pages, redeems the code at the token endpoint with fetch() and calls
// UserInfo (preflighted), all allowed by CORS because its origin is that
// of its registered redirect URI; a route hmid does not open stays blocked.
func TestBrowserSPAAcrossOrigins(t *testing.T) {
	t.Parallel()
	needChromium(t)
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		owner := e.NewUser(t, apptest.UserSpec{})
		u := e.NewUser(t, apptest.UserSpec{Password: pw})

		var clientID string
		spa := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			if err := spaPage.Execute(w, map[string]string{"Issuer": e.URL, "ClientID": clientID}); err != nil {
				t.Error(err)
			}
		}))
		t.Cleanup(spa.Close)
		if spa.URL == e.URL || !strings.HasPrefix(spa.URL, "http://127.0.0.1:") {
			t.Fatalf("the app must have an origin of its own: %s, hmid %s", spa.URL, e.URL)
		}
		data := e.Call(t, "POST", "/v1/oauth/clients", owner.Token, map[string]any{
			"name": "Cross-Origin SPA", "client_type": "public", "redirect_uris": []string{spa.URL + "/cb"},
		}, http.StatusCreated).JSON()["data"].(map[string]any)
		clientID = data["id"].(string)

		b := newChromium(t)
		b.do("open the app, which sends the browser to hmid", chromedp.Navigate(spa.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#email`)))
		if at := b.location(); !strings.HasPrefix(at, e.URL+"/login?return_to=") {
			t.Fatalf("the app did not start the flow at hmid: %s", at)
		}
		b.do("log in",
			chromedp.SendKeys(chromedp.CSS(`#email`), u.Email),
			chromedp.SendKeys(chromedp.CSS(`#password`), pw),
			chromedp.Click(chromedp.CSS(`form button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS(`button[value=approve]`)))
		if text := b.text(`main`); !strings.Contains(text, "Cross-Origin SPA") {
			t.Fatalf("consent page: %q", text)
		}
		b.do("approve", chromedp.Click(chromedp.CSS(`button[value=approve]`)), chromedp.WaitReady(chromedp.CSS(`#result, #error`)))
		if at := b.location(); !strings.HasPrefix(at, spa.URL+"/cb?") {
			t.Fatalf("not back at the app: %s", at)
		}
		el := `(document.getElementById("result") || document.getElementById("error"))`
		shown, err := run(b, chromedp.Evaluate[string](el+`.id + " " + `+el+`.textContent`))
		if err != nil {
			b.fail("read the app's result", err)
		}
		id, body, _ := strings.Cut(shown, " ")
		if id != "result" {
			t.Fatalf("the app failed: %s", body)
		}
		var got map[string]any
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("result %q: %v", body, err)
		}
		want := map[string]any{"issuer": e.URL, "token_type": "Bearer", "scope": "email openid profile", "has_refresh_token": true,
			"userinfo_status": float64(200), "sub": u.ID, "email": u.Email, "other_route_blocked": true}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %v, want %v (result %s)", k, got[k], v, fmt.Sprint(got))
			}
		}
	})
}
