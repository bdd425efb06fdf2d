// Package webtest drives hmid's pages in a real headless Chromium for
// tests: it starts the browser (the test is skipped where none is
// installed), checks a page with axe-core in the light and the dark theme,
// signs in through the login page, and saves screenshots for the README when
// HMID_SCREENSHOTS names a directory.
//
// axe-core is vendored (testdata/axe-core) so that `go test` needs only Go;
// it is injected through the DevTools protocol (Runtime.evaluate), which the
// pages' Content-Security-Policy does not govern, so the pages are checked
// with the same CSP they are served with. Only tests import this package.
package webtest

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"hmid/internal/apptest"
	"hmid/internal/audit"
	"hmid/internal/dbtest"
)

// AxeVersion is the version of the vendored axe-core.
const AxeVersion = "4.14.1"

//go:embed testdata/axe-core/axe.min.js
var axeSource string

// Viewports of the screenshots: a desktop window and a phone held upright.
const (
	DesktopWidth, DesktopHeight = 1280, 800
	PhoneWidth, PhoneHeight     = 390, 844
)

// userAgent is the browser's User-Agent header.
const userAgent = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36"

// timeout bounds one test's use of the browser.
const timeout = 3 * time.Minute

// ChromiumPath is the Chromium or Chrome binary on PATH, "" when there is none.
func ChromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Chromium starts a headless Chromium for t and returns the context to run
// chromedp actions in (one tab). The browser stops when t ends; without a
// Chromium on PATH the test is skipped.
func Chromium(t testing.TB) context.Context {
	t.Helper()
	chrome := ChromiumPath()
	if chrome == "" {
		t.Skip("no Chromium found (install the chromium package to run the browser tests)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chrome),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// Screenshots look the same on every machine.
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-color-profile", "srgb"),
		// A desktop Chrome's user agent rather than HeadlessChrome's, so the
		// sessions hmid records read as a person's browser would.
		chromedp.UserAgent(userAgent),
		chromedp.UserDataDir(t.TempDir()),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	// The first action starts the browser; it must not run under a deadline
	// (the deadline would stop the browser), later ones may (chromedp.Run).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancel)
	return tctx
}

// Each runs f on each database engine (apptest.Each) with a headless
// Chromium of its own (Chromium): the start of every browser test that
// drives one server. opts configure the server as apptest.Each's do.
func Each(t *testing.T, f func(t *testing.T, e *apptest.Env, ctx context.Context), opts ...apptest.Option) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) { f(t, e, Chromium(t)) }, opts...)
}

// OnSQLite starts a headless Chromium and hmid on SQLite alone, for a
// browser test whose pages do not depend on the engine (a page drawn from
// data the API put there).
func OnSQLite(t *testing.T) (context.Context, *apptest.Env) {
	ctx := Chromium(t)
	return ctx, apptest.New(t, dbtest.Engine{Name: "sqlite", URL: dbtest.SQLite(t)})
}

// Recorder returns a function that records an audit event on e's server
// and returns its id, the test clock advanced by step before each: the
// events an activity or audit page then lists, a step apart.
func Recorder(t testing.TB, e *apptest.Env, step time.Duration) func(audit.Event) string {
	return func(ev audit.Event) string {
		t.Helper()
		e.Clock.Advance(step)
		id, err := e.Server.Audit.Record(context.Background(), e.Server.DB, ev)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
}

// Do runs actions in the browser, failing the test with what when one fails.
func Do(t testing.TB, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("browser, %s: %v", what, err)
	}
}

// Submit runs actions that leave the page, such as a click on a form's
// button, and returns once the browser shows the next page fully loaded.
// Waiting for an element alone is not enough when the next page has one
// like it (a flash notice): the wait could match the old page's copy, whose
// node is gone by the time it is read.
func Submit(t testing.TB, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	Do(t, ctx, what+" (mark the page)", chromedp.Evaluate[chromedp.Void](`void (window.hmidLeaving = true)`))
	Do(t, ctx, what, actions...)
	deadline := time.Now().Add(15 * time.Second)
	for {
		// While the page changes, evaluating fails or still sees the mark;
		// both mean "not yet".
		arrived, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!window.hmidLeaving && document.readyState === "complete"`))
		if err == nil && arrived {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("browser, %s: no new page after 15 s (last error: %v)", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Read runs one action that returns a value (chromedp.Text, chromedp.Location,
// chromedp.Evaluate, …), failing the test with what when it fails.
func Read[T any](t testing.TB, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browser, %s: %v", what, err)
	}
	return v
}

// AcceptDialogs answers OK to every JavaScript dialog the tab of ctx opens
// from now on (the confirmations of forms with data-confirm) and returns
// their count.
func AcceptDialogs(ctx context.Context) *atomic.Int32 {
	var n atomic.Int32
	opened := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range opened {
			if err != nil {
				return
			}
			n.Add(1)
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	return &n
}

// AskedDialogs answers OK to every JavaScript dialog the tab of ctx opens
// from now on and sends its message to the channel it returns, so a test
// can check what a data-confirm form asked.
func AskedDialogs(ctx context.Context) <-chan string {
	asked := make(chan string, 16)
	go func() {
		for ev, err := range chromedp.Events(ctx, page.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			asked <- ev.Message
			go func() {
				_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
			}()
		}
	}()
	return asked
}

// WaitText waits until the text of the element sel contains want (a
// form's answer replaces the page, whose old notice may still show
// meanwhile), failing the test with what after 15 s.
func WaitText(t testing.TB, ctx context.Context, what, sel, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel), chromedp.AtLeast(0)))
		if err == nil && strings.Contains(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s shows %q, want %q", what, sel, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Login signs the browser in through hmid's login page at base (the
// server's URL) with email and password, and waits until the browser has
// left the login page. Accounts with two-factor authentication need the
// code step after it, which the caller does.
func Login(t testing.TB, ctx context.Context, base, email, password string) {
	t.Helper()
	Do(t, ctx, "log in",
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.CSS(`#email`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), email),
		chromedp.SendKeys(chromedp.CSS(`#password`), password),
		chromedp.Click(chromedp.CSS(`form[action="/login"] button[type=submit]`)))
	deadline := time.Now().Add(15 * time.Second)
	for {
		loc := Read(t, ctx, "location after login", chromedp.Location())
		if !strings.HasPrefix(loc, base+"/login") {
			return
		}
		if time.Now().After(deadline) {
			body := Read(t, ctx, "login page", chromedp.Text(chromedp.CSS(`main`)))
			t.Fatalf("still on the login page after logging in as %s: %s", email, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// axeRun runs axe-core with the WCAG 2.x A and AA rules and its best
// practices, and returns the violations.
const axeRun = `axe.run(document, {
  runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]},
  resultTypes: ["violations"]
}).then(r => r.violations.map(v => ({
  id: v.id, impact: v.impact || "", help: v.help,
  nodes: v.nodes.map(n => ({target: n.target.join(" "), html: n.html, summary: n.failureSummary || ""}))
})))`

// Violation is one axe-core rule a page breaks.
type Violation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"` // minor, moderate, serious or critical
	Help   string `json:"help"`
	Nodes  []struct {
		Target  string `json:"target"`
		HTML    string `json:"html"`
		Summary string `json:"summary"`
	} `json:"nodes"`
}

// Themes are the colour schemes Axe checks a page in.
var Themes = []string{"light", "dark"}

// Axe opens url (with url "", it checks the page the browser shows now, such
// as the answer to a form just sent) and runs axe-core on it once in the
// light and once in the dark theme. Serious and critical violations fail
// the test; lesser ones are logged.
func Axe(t testing.TB, ctx context.Context, url string) {
	t.Helper()
	if url != "" {
		Do(t, ctx, "open "+url, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS(`body`)))
	}
	where := url
	if where == "" {
		where = Read(t, ctx, "location", chromedp.Location())
	}
	defer setTheme(ctx, "")
	for _, theme := range Themes {
		for _, v := range AxeViolations(t, ctx, theme) {
			var b strings.Builder
			fmt.Fprintf(&b, "%s (%s theme): %s [%s] %s", where, theme, v.ID, v.Impact, v.Help)
			for _, n := range v.Nodes {
				fmt.Fprintf(&b, "\n    %s: %s\n      %s", n.Target, n.HTML, strings.ReplaceAll(n.Summary, "\n", "\n      "))
			}
			if v.Impact == "serious" || v.Impact == "critical" {
				t.Error("accessibility: " + b.String())
			} else {
				t.Log("accessibility (minor): " + b.String())
			}
		}
	}
}

// AxeViolations runs axe-core on the page shown now in theme ("light" or
// "dark") and returns every violation, whatever its impact.
func AxeViolations(t testing.TB, ctx context.Context, theme string) []Violation {
	t.Helper()
	if err := setTheme(ctx, theme); err != nil {
		t.Fatalf("browser, emulate the %s theme: %v", theme, err)
	}
	loaded := Read(t, ctx, "look for axe-core", chromedp.Evaluate[bool](`typeof axe !== "undefined"`))
	if !loaded {
		// The trailing undefined keeps the script's own value from being
		// sent back over the protocol.
		Do(t, ctx, "inject axe-core", chromedp.Evaluate[chromedp.Void](axeSource+"\n;undefined"))
	}
	raw := Read(t, ctx, "run axe-core", chromedp.Evaluate[[]byte](axeRun, chromedp.EvalAwaitPromise))
	var out []Violation
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("axe-core result %s: %v", raw, err)
	}
	return out
}

// SetTheme makes the page see prefers-color-scheme: theme ("light" or
// "dark"; "" ends the emulation), failing the test when it cannot.
func SetTheme(t testing.TB, ctx context.Context, theme string) {
	t.Helper()
	if err := setTheme(ctx, theme); err != nil {
		t.Fatalf("browser, emulate the %q theme: %v", theme, err)
	}
}

// Viewport makes the tab's viewport width×height CSS pixels, a phone's
// (mobile, touch, portrait, so the page's meta viewport applies) below 600
// pixels wide, and returns once the page is laid out and painted at the
// new size. ResetViewport ends the emulation.
func Viewport(t testing.TB, ctx context.Context, width, height int) {
	t.Helper()
	var opts []chromedp.EmulateViewportOption
	if width < 600 {
		opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait)
	}
	// The page scale is set to 1 as well: after a desktop-sized viewport,
	// Chromium's phone emulation may keep the page zoomed in a little,
	// which cuts off the right edge of a picture.
	Do(t, ctx, fmt.Sprintf("resize to %d×%d", width, height), chromedp.EmulateViewport(int64(width), int64(height), opts...),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := cdp.Call(ctx, tg, emulation.SetPageScaleFactor, emulation.SetPageScaleFactorParams{PageScaleFactor: 1})
			return err
		}),
		Settle)
}

// ResetViewport ends Viewport's emulation: the tab has its window's size again.
func ResetViewport(t testing.TB, ctx context.Context) {
	t.Helper()
	if err := clearViewport(ctx); err != nil {
		t.Fatalf("browser, reset the viewport: %v", err)
	}
}

// Settle waits two animation frames: the page is laid out and painted
// after a change of size, theme or content.
var Settle = chromedp.Evaluate[chromedp.Void](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r())))`, chromedp.EvalAwaitPromise)

func clearViewport(ctx context.Context) error {
	return chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.ClearDeviceMetricsOverride, cdp.Empty{})
		return err
	}))
}

// setTheme makes the page see prefers-color-scheme: theme; "" ends the emulation.
func setTheme(ctx context.Context, theme string) error {
	p := emulation.SetEmulatedMediaParams{}
	if theme != "" {
		p.Features = []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: theme}}
	}
	return chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, p)
		return err
	}))
}

// ScreenshotDir is the directory of HMID_SCREENSHOTS, "" when it is unset. A
// relative directory is taken from the module root, so that
// HMID_SCREENSHOTS=docs/screenshots fills the README's directory whichever
// package's test takes the pictures.
func ScreenshotDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("HMID_SCREENSHOTS")
	if dir == "" || filepath.IsAbs(dir) {
		return dir
	}
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			return filepath.Join(root, dir)
		}
		up := filepath.Dir(root)
		if up == root {
			t.Fatalf("HMID_SCREENSHOTS=%s: no go.mod above the test's directory", dir)
		}
		root = up
	}
}

// Screenshot saves the page shown now, in the light theme at width×height
// (a phone's viewport below 600 pixels wide), as name.png in
// HMID_SCREENSHOTS. It does nothing when HMID_SCREENSHOTS is unset. The
// viewport and theme are restored afterwards.
func Screenshot(t testing.TB, ctx context.Context, name string, width, height int) {
	t.Helper()
	ScreenshotTheme(t, ctx, name, width, height, "light")
}

// ScreenshotTheme is Screenshot in theme ("light" or "dark").
func ScreenshotTheme(t testing.TB, ctx context.Context, name string, width, height int, theme string) {
	t.Helper()
	dir := ScreenshotDir(t)
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	SetTheme(t, ctx, theme)
	defer func() {
		_ = setTheme(ctx, "")
		_ = clearViewport(ctx)
	}()
	Viewport(t, ctx, width, height)
	png := Read(t, ctx, "screenshot "+name, chromedp.CaptureScreenshot())
	file := filepath.Join(dir, name+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", file)
}

// Screenshots saves the page shown now as name-desktop.png (1280×800) and
// name-phone.png (390×844); see Screenshot.
func Screenshots(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	Screenshot(t, ctx, name+"-desktop", DesktopWidth, DesktopHeight)
	Screenshot(t, ctx, name+"-phone", PhoneWidth, PhoneHeight)
}
