package admin_test

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hmid/internal/web/webtest"
)

// TestBrowserFirstRun is a newcomer's first minute (issue 22), end to end:
// the hmid binary starts on an empty directory and prints a setup link; in
// Chromium the link's page creates the first administrator, who signs in,
// creates a user with an invitation in the admin console and reads the
// invitation in the mail outbox (no SMTP is set up); the new user follows
// its link, chooses a password and signs in. The setup page and the outbox
// pass axe-core, light and dark; with HMID_SCREENSHOTS set they are saved
// at desktop and phone width.
func TestBrowserFirstRun(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and starts the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "hmid")
	build := exec.Command("go", "build", "-o", bin, "hmid/cmd/hmid")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "HMID_ADDR=127.0.0.1:"+strconv.Itoa(port), "HMID_PUBLIC_URL="+base, "HMID_DATABASE_URL=", "HMID_SMTP_URL=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	link := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`https?://\S+/setup\?token=\S+`)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := re.FindString(sc.Text()); m != "" {
				link <- m
			}
		}
	}()
	var setup string
	select {
	case setup = <-link:
	case <-time.After(60 * time.Second):
		t.Fatal("the start printed no setup link")
	}
	if !strings.HasPrefix(setup, base+"/setup?token=hm_su_") {
		t.Fatalf("setup link %q", setup)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server does not listen")
		}
	}

	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	ctx := webtest.Chromium(t)
	// The setup page creates the first administrator.
	webtest.Do(t, ctx, "open the setup link", chromedp.Navigate(setup), chromedp.WaitVisible(css(`#email`)))
	webtest.Axe(t, ctx, "")
	webtest.Screenshots(t, ctx, "setup")
	webtest.ScreenshotTheme(t, ctx, "setup-dark-phone", webtest.PhoneWidth, webtest.PhoneHeight, "dark")
	webtest.Do(t, ctx, "create the administrator",
		chromedp.SendKeys(css(`#email`), "root@example.test"),
		chromedp.SendKeys(css(`#password`), pw),
		chromedp.SendKeys(css(`#password2`), pw),
		chromedp.Click(css(`form[action="/setup"] button[type=submit]`)))
	untilText(t, ctx, "setup done", `main`, "The administrator was created")
	webtest.Do(t, ctx, "the link is spent", chromedp.Navigate(setup), chromedp.WaitVisible(css(`main`)))
	untilText(t, ctx, "spent link", `main`, "does not work any more")

	// The administrator creates a user with an invitation.
	webtest.Login(t, ctx, base, "root@example.test", pw)
	webtest.Do(t, ctx, "open the overview", chromedp.Navigate(base+"/admin"), chromedp.WaitVisible(css(`#outbox-note`)))
	webtest.Do(t, ctx, "create a user", chromedp.Navigate(base+"/admin/users/new"), chromedp.WaitVisible(css(`#n-email`)),
		chromedp.SendKeys(css(`#n-email`), "newcomer@example.test"),
		chromedp.Click(css(`form[action="/admin/users"] button[type=submit]`)))
	untilText(t, ctx, "flash after creating", `main`, "invitation was mailed")

	// The invitation in the outbox, and its link.
	webtest.Do(t, ctx, "open the outbox", chromedp.Navigate(base+"/admin/mail?to=newcomer@example.test"), chromedp.WaitVisible(css(`table.mails`)),
		chromedp.Click(css(`table.mails tbody tr:first-child summary`)))
	body := webtest.Read(t, ctx, "the invitation", chromedp.Text(css(`table.mails tbody tr:first-child pre`)))
	invite := regexp.MustCompile(`https?://\S+/reset-password\?token=\S+`).FindString(body)
	if invite == "" {
		t.Fatalf("no link in the invitation: %q", body)
	}
	webtest.Axe(t, ctx, "")
	webtest.Screenshots(t, ctx, "admin-mail")

	// The new user chooses a password and signs in.
	user := webtest.Chromium(t)
	webtest.Do(t, user, "open the invitation", chromedp.Navigate(invite), chromedp.WaitVisible(css(`#password`)),
		chromedp.SendKeys(css(`#password`), "newcomer-password-1"),
		chromedp.Click(css(`form[action="/reset-password"] button[type=submit]`)))
	untilText(t, user, "password chosen", `main`, "password has been changed")
	webtest.Login(t, user, base, "newcomer@example.test", "newcomer-password-1")
	webtest.Do(t, user, "open the account", chromedp.Navigate(base+"/account"), chromedp.WaitVisible(css(`#profile-email`)))
	if loc := webtest.Read(t, user, "location", chromedp.Location()); loc != base+"/account" {
		t.Fatalf("the new user's browser is at %s", loc)
	}
	if txt := webtest.Read(t, user, "address state", chromedp.Text(css(`section[aria-labelledby="profile-email"]`))); !strings.Contains(txt, "Verified") {
		t.Errorf("the invitation did not verify the address: %q", txt)
	}
}
