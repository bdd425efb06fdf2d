package webtest

import (
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
)

// A page served under a Content-Security-Policy that allows no script at
// all, with an unlabelled input and unreadable text only in the dark theme.
const brokenPage = `<!doctype html><html lang="en"><head><title>t</title>
<style>@media (prefers-color-scheme: dark) { p { color: #222; background: #111; } }</style></head>
<body><main><h1>Broken</h1><p>Dark text on dark ground</p><input type="text"></main></body></html>`

func TestAxeFindsViolationsUnderCSP(t *testing.T) {
	ctx := Chromium(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(brokenPage))
	}))
	defer srv.Close()
	Do(t, ctx, "open", chromedp.Navigate(srv.URL))

	ids := func(vs []Violation) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.ID+":"+v.Impact)
		}
		return out
	}
	light, dark := ids(AxeViolations(t, ctx, "light")), ids(AxeViolations(t, ctx, "dark"))
	if !slices.Contains(light, "label:critical") || slices.Contains(light, "color-contrast:serious") {
		t.Errorf("light theme: %v, want the missing label and no contrast finding", light)
	}
	if !slices.Contains(dark, "label:critical") || !slices.Contains(dark, "color-contrast:serious") {
		t.Errorf("dark theme: %v, want the missing label and the contrast finding", dark)
	}
}

func TestScreenshot(t *testing.T) {
	ctx := Chromium(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`<!doctype html><html lang="en"><title>t</title><main><h1>Hello</h1></main></html>`))
	}))
	defer srv.Close()
	Do(t, ctx, "open", chromedp.Navigate(srv.URL))

	t.Setenv("HMID_SCREENSHOTS", "")
	Screenshot(t, ctx, "none", PhoneWidth, PhoneHeight) // unset: nothing to do

	dir := t.TempDir()
	t.Setenv("HMID_SCREENSHOTS", dir)
	Screenshots(t, ctx, "hello")
	for name, want := range map[string][2]int{"hello-desktop.png": {DesktopWidth, DesktopHeight}, "hello-phone.png": {PhoneWidth, PhoneHeight}} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width != want[0] || cfg.Height != want[1] {
			t.Errorf("%s: %dx%d (%v), want %dx%d", name, cfg.Width, cfg.Height, err, want[0], want[1])
		}
	}
}

func TestAcceptDialogs(t *testing.T) {
	ctx := Chromium(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`<!doctype html><html lang="en"><title>t</title><main><h1>Ask</h1>
<button id="ask" onclick="document.getElementById('answer').textContent = confirm('Sure?') ? 'yes' : 'no'">Ask</button>
<p id="answer"></p></main></html>`))
	}))
	defer srv.Close()
	asked := AcceptDialogs(ctx)
	Do(t, ctx, "open", chromedp.Navigate(srv.URL), chromedp.Click(chromedp.CSS(`#ask`)), chromedp.WaitVisible(chromedp.CSS(`#answer:not(:empty)`)))
	if got := Read(t, ctx, "answer", chromedp.Text(chromedp.CSS(`#answer`))); got != "yes" || asked.Load() != 1 {
		t.Errorf("answer %q after %d dialogs, want yes after 1", got, asked.Load())
	}
}
