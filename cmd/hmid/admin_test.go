package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestKeysAndAdminRefuseAMissingDatabase checks that hmid keys and hmid
// admin, run where no database exists, say so (naming the path and the
// working directory) and create none, while migrate creates it.
func TestKeysAndAdminRefuseAMissingDatabase(t *testing.T) {
	te := newTestEnv(t)
	wd, _ := os.Getwd()
	for _, args := range [][]string{{"keys", "create", "--system"}, {"keys", "rotate"}, {"admin", "create", "--email", "a@example.com"}} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, te.getenv, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(te.dir, "hmid.db")) || !strings.Contains(err.Error(), wd) ||
			!strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("%v: err = %v", args, err)
		}
		if te.migrated() || out.Len() > 0 {
			t.Fatalf("%v created a database or printed %q", args, out.String())
		}
	}
	if err := run(context.Background(), []string{"migrate"}, te.getenv, io.Discard, io.Discard); err != nil || !te.migrated() {
		t.Fatalf("migrate: %v", err)
	}
}

// TestAdminCreate checks hmid admin create: a new super admin needs a
// password from standard input, a second run promotes (and with a password
// sets it), and the administrator signs in with it.
func TestAdminCreate(t *testing.T) {
	te := newTestEnv(t)
	if err := run(context.Background(), []string{"migrate"}, te.getenv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	create := func(stdin string, args ...string) (string, error) {
		var out bytes.Buffer
		err := runWithInput(context.Background(), append([]string{"admin", "create"}, args...), te.getenv, strings.NewReader(stdin), &out, io.Discard)
		return out.String(), err
	}
	if _, err := create("", "--email", "root@example.com"); err == nil || !strings.Contains(err.Error(), "--password-stdin") {
		t.Fatalf("without a password: %v", err)
	}
	if _, err := create("\n", "--email", "root@example.com", "--password-stdin"); err == nil {
		t.Fatal("an empty password was taken")
	}
	if _, err := create("short\n", "--email", "root@example.com", "--password-stdin"); err == nil {
		t.Fatal("a short password was taken")
	}
	out, err := create("first-password-1\n", "--email", "Root@Example.com", "--password-stdin")
	if err != nil || !strings.Contains(out, "created the super admin") || !strings.Contains(out, "root@example.com") {
		t.Fatalf("create: %q %v", out, err)
	}
	out, err = create("second-password-2\r\n", "--email", "root@example.com", "--password-stdin")
	if err != nil || !strings.Contains(out, "is a super admin now") {
		t.Fatalf("promote: %q %v", out, err)
	}
	addr, stop := startServe(t, te)
	defer stop()
	login := func(pw string) int {
		body, _ := json.Marshal(map[string]string{"email": "root@example.com", "password": pw})
		resp, err := http.Post("http://"+addr+"/v1/auth/login", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := login("second-password-2"); got != http.StatusOK {
		t.Fatalf("login with the new password: %d", got)
	}
	if got := login("first-password-1"); got != http.StatusUnauthorized {
		t.Fatalf("login with the old password: %d", got)
	}
}

// TestServePrintsTheSetupLinkUntilAnAdminExists checks the first start's
// setup link (stdout and one log line) and that an administrator ends it.
func TestServePrintsTheSetupLinkUntilAnAdminExists(t *testing.T) {
	te := newTestEnv(t)
	te.env["HMID_PUBLIC_URL"] = "http://id.example.test"
	link := regexp.MustCompile(`http://id\.example\.test/setup\?token=hm_su_[0-9A-Za-z]{43}`)
	serveOnce := func() (string, string) {
		var out, errOut syncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- run(ctx, []string{"serve"}, te.getenv, &out, &errOut) }()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(out.String()+errOut.String(), "hmid listening") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return out.String(), errOut.String()
	}
	te.env["HMID_LOG_LEVEL"] = "info"
	out, logs := serveOnce()
	if !link.MatchString(out) || strings.Count(logs, "setup_url") != 1 || !link.MatchString(logs) {
		t.Fatalf("first start:\nstdout %s\nlogs %s", out, logs)
	}
	if _, err := runWithInputErr(te, "pw-for-admin-1\n", "admin", "create", "--email", "a@example.com", "--password-stdin"); err != nil {
		t.Fatal(err)
	}
	out, logs = serveOnce()
	if strings.Contains(out+logs, "/setup?token=") {
		t.Fatalf("setup link printed although an administrator exists:\n%s\n%s", out, logs)
	}
}

// TestStaleAdminPasswordWarns checks the warning when HMID_ADMIN_PASSWORD
// no longer is the administrator's password.
func TestStaleAdminPasswordWarns(t *testing.T) {
	te := newTestEnv(t)
	te.env["HMID_ADMIN_EMAIL"], te.env["HMID_ADMIN_PASSWORD"] = "boss@example.com", "original-pass-1"
	te.env["HMID_LOG_LEVEL"] = "warn"
	var logs bytes.Buffer
	if err := run(context.Background(), []string{"migrate"}, te.getenv, io.Discard, &logs); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "HMID_ADMIN_PASSWORD") {
		t.Fatalf("warning at creation: %s", logs.String())
	}
	te.env["HMID_ADMIN_PASSWORD"] = "changed-pass-2"
	logs.Reset()
	if err := run(context.Background(), []string{"migrate"}, te.getenv, io.Discard, &logs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "used only when that administrator is created") || !strings.Contains(logs.String(), "hmid admin create --email boss@example.com --password-stdin") {
		t.Fatalf("no warning for a stale password: %s", logs.String())
	}
}

func runWithInputErr(te *testEnv, stdin string, args ...string) (string, error) {
	var out bytes.Buffer
	err := runWithInput(context.Background(), args, te.getenv, strings.NewReader(stdin), &out, io.Discard)
	return out.String(), err
}
