package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hmid/internal/apptest"
)

// testEnv is a fresh SQLite configuration in a temporary directory.
type testEnv struct {
	dir string
	env map[string]string
}

func newTestEnv(t *testing.T) *testEnv {
	dir := t.TempDir()
	return &testEnv{dir: dir, env: map[string]string{
		"HMID_DATABASE_URL": "sqlite:" + filepath.Join(dir, "hmid.db"),
		"HMID_LOG_LEVEL":    "error",
		"HMID_ADDR":         "127.0.0.1:0",
	}}
}

func (te *testEnv) getenv(k string) string { return te.env[k] }

// migrated reports whether anything created the database file.
func (te *testEnv) migrated() bool {
	_, err := os.Stat(filepath.Join(te.dir, "hmid.db"))
	return err == nil
}

// syncBuffer collects output written by a command running in another goroutine.
type syncBuffer = apptest.SyncBuffer

func TestVersionAndUsage(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, func(string) string { return "" }, &out, &out); err != nil || !strings.HasPrefix(out.String(), "hmid ") {
		t.Fatalf("version: %q %v", out.String(), err)
	}
	var ue usageError
	if err := run(context.Background(), []string{"frobnicate"}, func(string) string { return "" }, &out, &out); !errors.As(err, &ue) {
		t.Fatalf("unknown command: %v, want a usage error", err)
	}
}

// TestHelpAndIncompleteCommandsDoNothing checks that --help prints help and
// exits 0, and that "keys" alone or without --system prints its usage and
// fails, all without touching the database or printing a key.
func TestHelpAndIncompleteCommandsDoNothing(t *testing.T) {
	cases := []struct {
		args      []string
		wantUsage bool   // a usage error (exit status 2) rather than success
		want      string // in stdout for help, in stderr for usage errors
	}{
		{[]string{"--help"}, false, "healthcheck"},
		{[]string{"help"}, false, "keys"},
		{[]string{"serve", "--help"}, false, "usage: hmid serve"},
		{[]string{"serve", "-h"}, false, "usage: hmid serve"},
		{[]string{"help", "serve"}, false, "usage: hmid serve"},
		{[]string{"migrate", "--help"}, false, "usage: hmid migrate"},
		{[]string{"keys", "--help"}, false, "usage: hmid keys create --system"},
		{[]string{"keys", "create", "--help"}, false, "--name"},
		{[]string{"keys", "rotate", "--help"}, false, "--alg"},
		{[]string{"keys", "rotate", "--alg", "PS256"}, true, ""},
		{[]string{"keys", "rotate", "now"}, true, ""},
		{[]string{"healthcheck", "--help"}, false, "/readyz"},
		{[]string{"keys"}, true, "usage: hmid keys create --system"},
		{[]string{"keys", "list"}, true, "usage: hmid keys create --system"},
		{[]string{"keys", "create"}, true, ""},
		{[]string{"keys", "create", "--system", "extra"}, true, ""},
		{[]string{"serve", "--port", "1"}, true, "usage: hmid serve"},
		{[]string{"migrate", "now"}, true, ""},
		{[]string{"admin"}, true, "usage: hmid admin create"},
		{[]string{"admin", "create", "--help"}, false, "--password-stdin"},
		{[]string{"admin", "create"}, true, ""},
		{[]string{"admin", "make"}, true, "usage: hmid admin create"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			te := newTestEnv(t)
			// Today's serve --help would start serving; the deadline makes
			// that a failure instead of a hang.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var out, errOut syncBuffer
			err := run(ctx, c.args, te.getenv, &out, &errOut)
			var ue usageError
			switch {
			case c.wantUsage && !errors.As(err, &ue):
				t.Fatalf("err = %v, want a usage error", err)
			case !c.wantUsage && err != nil:
				t.Fatalf("err = %v", err)
			}
			got := out.String()
			if c.wantUsage {
				got = errOut.String()
			}
			if !strings.Contains(got, c.want) {
				t.Fatalf("output lacks %q:\nstdout: %s\nstderr: %s", c.want, out.String(), errOut.String())
			}
			if te.migrated() {
				t.Fatal("the database was created")
			}
			if strings.Contains(out.String()+errOut.String(), "hm_") {
				t.Fatalf("a key was printed: %s %s", out.String(), errOut.String())
			}
		})
	}
}

func TestMigrateSeedsAndPrintsTheSystemKeyOnce(t *testing.T) {
	te := newTestEnv(t)
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"migrate"}, te.getenv, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	if !strings.Contains(out.String(), "system API key") || !strings.Contains(out.String(), "Authorization: Bearer hm_") {
		t.Fatalf("first start output: %s", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"migrate"}, te.getenv, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "system API key") {
		t.Fatal("system key printed again on the second start")
	}
	te.env["HMID_DATABASE_URL"] = "postgres://x"
	if err := run(context.Background(), []string{"migrate"}, te.getenv, &out, &errOut); err == nil || !strings.Contains(err.Error(), "HMID_SECRET_KEY") {
		t.Fatalf("postgres without secret key: %v", err)
	}
}

// TestKeysCreatePrintsTheKeyAlone checks that stdout holds the new key and
// nothing else, and that the key works.
func TestKeysCreatePrintsTheKeyAlone(t *testing.T) {
	te := newTestEnv(t)
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"migrate"}, te.getenv, io.Discard, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	if err := run(context.Background(), []string{"keys", "create", "--system", "--name", "ci"}, te.getenv, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	key := strings.TrimSuffix(out.String(), "\n")
	if !strings.HasPrefix(key, "hm_") || strings.ContainsAny(key, " \n") {
		t.Fatalf("stdout = %q, want the key alone", out.String())
	}

	// The key authenticates, as a system key named "ci".
	addr, stop := startServe(t, te)
	defer stop()
	req, _ := http.NewRequest("GET", "http://"+addr+"/v1/api-keys?limit=100", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"name":"ci"`) {
		t.Fatalf("GET /v1/api-keys with the new key: %d %s", resp.StatusCode, body)
	}
}

// TestKeysRotate checks "hmid keys rotate": the first run makes generation 1
// of each algorithm, the next retires it for generation 2 (still published),
// --alg rotates one algorithm only, and each run prints every key on stdout.
func TestKeysRotate(t *testing.T) {
	te := newTestEnv(t)
	if err := run(context.Background(), []string{"migrate"}, te.getenv, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	rotate := func(args ...string) []string {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := run(context.Background(), append([]string{"keys", "rotate"}, args...), te.getenv, &out, &errOut); err != nil {
			t.Fatal(err, errOut.String())
		}
		if strings.Contains(out.String(), "hm_") {
			t.Fatalf("stdout holds more than the keys: %s", out.String())
		}
		return strings.Split(strings.TrimSpace(out.String()), "\n")
	}
	lines := rotate()
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "ES256\t") || !strings.HasPrefix(lines[1], "RS256\t") ||
		!strings.Contains(lines[0], "generation 1\tsigning since") {
		t.Fatalf("first rotation: %q", lines)
	}
	lines = rotate()
	if len(lines) != 4 || !strings.Contains(lines[0], "generation 2\tsigning") || !strings.Contains(lines[1], "generation 1\tretired") ||
		!strings.Contains(lines[1], "in the JWKS until") || !strings.Contains(lines[3], "generation 1\tretired") {
		t.Fatalf("second rotation: %q", lines)
	}
	lines = rotate("--alg", "es256")
	if len(lines) != 5 || !strings.Contains(lines[0], "ES256\t") || !strings.Contains(lines[0], "generation 3\tsigning") ||
		!strings.Contains(lines[3], "RS256\t") || !strings.Contains(lines[3], "generation 2\tsigning") {
		t.Fatalf("ES256 rotation: %q", lines)
	}
	// A running server publishes the signing keys and the retired ones.
	addr, stop := startServe(t, te)
	defer stop()
	resp, err := http.Get("http://" + addr + "/v1/oauth/jwks")
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []struct{ Kid, Alg string } `json:"keys"`
	}
	err = json.NewDecoder(resp.Body).Decode(&set)
	resp.Body.Close()
	if err != nil || len(set.Keys) != 5 || !strings.Contains(lines[0], set.Keys[2].Kid) || set.Keys[2].Alg != "ES256" {
		t.Fatalf("JWKS %+v, %v; keys %q", set.Keys, err, lines)
	}
}

// TestInvalidLogLevelFailsAtStart checks a misspelt HMID_LOG_LEVEL stops the
// start before anything is opened.
func TestInvalidLogLevelFailsAtStart(t *testing.T) {
	te := newTestEnv(t)
	te.env["HMID_LOG_LEVEL"] = "verbose"
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"serve"}, te.getenv, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "HMID_LOG_LEVEL") {
		t.Fatalf("err = %v", err)
	}
	if te.migrated() {
		t.Fatal("the database was opened")
	}
}

// TestInvalidSigningSettingsFailAtStart checks that an unknown
// HMID_ID_TOKEN_ALG or a too short HMID_SIGNING_KEY_ROTATION stops the start
// with a message naming the variable, before anything is opened.
func TestInvalidSigningSettingsFailAtStart(t *testing.T) {
	for name, val := range map[string]string{"HMID_ID_TOKEN_ALG": "RS512", "HMID_SIGNING_KEY_ROTATION": "5m"} {
		te := newTestEnv(t)
		te.env[name] = val
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"serve"}, te.getenv, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("%s=%s: err = %v", name, val, err)
		}
		if te.migrated() {
			t.Fatal("the database was opened")
		}
	}
}

// TestPortInUseIsAClearError checks that a taken port fails the start with a
// message naming the variable, and that nothing claimed to be listening.
func TestPortInUseIsAClearError(t *testing.T) {
	for _, variable := range []string{"HMID_ADDR", "HMID_METRICS_ADDR"} {
		t.Run(variable, func(t *testing.T) {
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer taken.Close()
			te := newTestEnv(t)
			te.env["HMID_LOG_LEVEL"] = "info"
			te.env[variable] = taken.Addr().String()
			var out, errOut syncBuffer
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = run(ctx, []string{"serve"}, te.getenv, &out, &errOut)
			if err == nil || !strings.Contains(err.Error(), "already in use") || !strings.Contains(err.Error(), variable) {
				t.Fatalf("err = %v", err)
			}
			if strings.Contains(errOut.String(), "listening") {
				t.Fatalf("logged listening: %s", errOut.String())
			}
		})
	}
}

// TestMetricsListener checks that with HMID_METRICS_ADDR the metrics are
// served there, unauthenticated and labelled by route, and not on the main
// listener.
func TestMetricsListener(t *testing.T) {
	te := newTestEnv(t)
	te.env["HMID_METRICS_ADDR"] = "127.0.0.1:0"
	addr, metricsAddr, stop := startServeWithMetrics(t, te)
	defer stop()
	if code, _ := get(t, "http://"+addr+"/health"); code != http.StatusOK {
		t.Fatalf("/health: %d", code)
	}
	if code, _ := get(t, "http://"+addr+"/metrics"); code != http.StatusNotFound {
		t.Fatalf("/metrics on the main listener: %d, want 404", code)
	}
	code, body := get(t, "http://"+metricsAddr+"/metrics")
	if want := `hmid_http_requests_total{method="GET",route="/health",status="200"} 1`; code != http.StatusOK || !strings.Contains(body, want) {
		t.Fatalf("metrics listener: %d, lacks %s:\n%s", code, want, body)
	}
	if code, _ := get(t, "http://"+metricsAddr+"/health"); code != http.StatusNotFound {
		t.Fatalf("the metrics listener serves /health: %d", code)
	}
}

// TestHealthcheck checks the exit status follows /readyz, reached through
// 127.0.0.1 on the port of HMID_ADDR.
func TestHealthcheck(t *testing.T) {
	status := http.StatusOK
	var mu sync.Mutex
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	defer ts.Close()
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	check := func(addr string) error {
		var out, errOut bytes.Buffer
		return run(context.Background(), []string{"healthcheck", "--timeout", "3s"},
			func(k string) string { return map[string]string{"HMID_ADDR": addr}[k] }, &out, &errOut)
	}
	for _, addr := range []string{":" + port, "0.0.0.0:" + port, "[::]:" + port, "127.0.0.1:" + port} {
		if err := check(addr); err != nil {
			t.Fatalf("%s ready: %v", addr, err)
		}
	}
	mu.Lock()
	status = http.StatusServiceUnavailable
	mu.Unlock()
	if err := check(":" + port); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("not ready: %v", err)
	}
	ts.Close()
	if err := check(":" + port); err == nil {
		t.Fatal("nothing listening, yet healthy")
	}
}

// startServe runs "hmid serve" on te and returns its address once it logged
// that it listens.
func startServe(t *testing.T, te *testEnv) (addr string, stop func()) {
	addr, _, stop = startServeWithMetrics(t, te)
	return addr, stop
}

func startServeWithMetrics(t *testing.T, te *testEnv) (addr, metricsAddr string, stop func()) {
	t.Helper()
	te.env["HMID_LOG_LEVEL"] = "info"
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve"}, te.getenv, io.Discard, pw)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	for lines.Scan() {
		var rec struct{ Msg, Addr, Metrics_addr string }
		if json.Unmarshal(lines.Bytes(), &rec) == nil && rec.Msg == "hmid listening" {
			addr, metricsAddr = rec.Addr, rec.Metrics_addr
			break
		}
	}
	if addr == "" {
		cancel()
		t.Fatalf("serve ended without listening: %v", <-done)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return addr, metricsAddr, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestLogFormat checks that HMID_LOG_FORMAT=text gives key=value lines and
// that JSON stays the default.
func TestLogFormat(t *testing.T) {
	for format, want := range map[string]string{"": `"msg":"hello"`, "json": `"msg":"hello"`, "text": "level=INFO msg=hello"} {
		var out bytes.Buffer
		_, logger, err := configure(env{getenv: func(k string) string {
			if k == "HMID_LOG_FORMAT" {
				return format
			}
			return ""
		}, stderr: &out})
		if err != nil {
			t.Fatal(err)
		}
		logger.Info("hello")
		if !strings.Contains(out.String(), want) {
			t.Errorf("HMID_LOG_FORMAT=%q: %q, want %q", format, out.String(), want)
		}
	}
}
