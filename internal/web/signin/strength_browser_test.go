package signin_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"hmid/internal/web/webtest"
)

// TestBrowserPasswordStrength types passwords into the registration form in
// a real Chromium and reads the strength hint the page's script shows
// (too short, weak, strong), then sends a common password and reads the
// refusal: in English and in German, checked by axe in both themes, with
// HMID_SCREENSHOTS saved at desktop and phone width and in the dark theme.
func TestBrowserPasswordStrength(t *testing.T) {
	t.Parallel()
	ctx, e := webtest.OnSQLite(t)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	hint := func(what, want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, err := chromedp.Run(ctx, chromedp.Text(css(`#password-strength`), chromedp.AtLeast(0)))
			if err == nil && strings.Contains(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the strength hint reads %q, want %q", what, got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	typePassword := func(pw string) {
		t.Helper()
		webtest.Do(t, ctx, "type "+pw, chromedp.WaitVisible(css(`#password`)),
			chromedp.Evaluate[chromedp.Void](`(function () { var i = document.querySelector("#password"); i.value = ""; i.dispatchEvent(new Event("input")); })()`),
			chromedp.SendKeys(css(`#password`), pw))
		if got := webtest.Read(t, ctx, "the typed password", chromedp.Value(css(`#password`))); got != pw {
			t.Fatalf("the field holds %q, want %q", got, pw)
		}
	}
	for _, c := range []struct {
		lang, path, short, weak, strong, common, help string
	}{
		{"en", "/register", "too short", "weak", "strong", "one of the most common ones", "Common passwords such as 12345678 are refused"},
		{"de", "/register", "zu kurz", "schwach", "stark", "gehört zu den häufigsten", "Häufige Passwörter wie 12345678 werden abgelehnt"},
	} {
		// The browser asks for the page's language, as a German browser does.
		lang := c.lang
		webtest.Do(t, ctx, "ask for "+lang, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
				return err
			}
			_, err := cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": lang}})
			return err
		}))
		webtest.Axe(t, ctx, e.URL+c.path)
		if help := webtest.Read(t, ctx, "help", chromedp.Text(css(`#password-help`))); !strings.Contains(help, c.help) {
			t.Fatalf("%s: help %q", c.lang, help)
		}
		typePassword("abc")
		hint(c.lang+" short", c.short)
		typePassword("abcdefgh")
		hint(c.lang+" weak", c.weak)
		typePassword("paper lantern orbit 42")
		hint(c.lang+" strong", c.strong)
		webtest.Axe(t, ctx, "")
		webtest.Screenshots(t, ctx, "register-strength-"+c.lang)
		webtest.ScreenshotTheme(t, ctx, "register-strength-"+c.lang+"-phone-dark", webtest.PhoneWidth, webtest.PhoneHeight, "dark")

		// A common password: the server refuses it, in the page's language.
		webtest.Do(t, ctx, "send a common password", chromedp.SendKeys(css(`#email`), "strength-"+c.lang+"@example.test"),
			chromedp.SetValue(css(`#password`), "iloveyou1"), chromedp.Click(css(`form button[type=submit]`)))
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, _ := chromedp.Run(ctx, chromedp.Text(css(`.alert`), chromedp.AtLeast(0)))
			if strings.Contains(got, c.common) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the refusal reads %q, want %q", c.lang, got, c.common)
			}
			time.Sleep(50 * time.Millisecond)
		}
		webtest.Axe(t, ctx, "")
	}
}
