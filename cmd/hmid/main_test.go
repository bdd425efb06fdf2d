package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestVersionAndUsage(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, func(string) string { return "" }, &out, &out); err != nil || !strings.HasPrefix(out.String(), "hmid ") {
		t.Fatalf("version: %q %v", out.String(), err)
	}
	if err := run(context.Background(), []string{"frobnicate"}, func(string) string { return "" }, &out, &out); err == nil {
		t.Fatal("unknown command accepted")
	}
}

func TestMigrateSeedsAndPrintsTheSystemKeyOnce(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"HMID_DATABASE_URL": "sqlite:" + filepath.Join(dir, "hmid.db"), "HMID_LOG_LEVEL": "error"}
	getenv := func(k string) string { return env[k] }
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"migrate"}, getenv, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	if !strings.Contains(out.String(), "system API key") || !strings.Contains(out.String(), "Authorization: Bearer hm_") {
		t.Fatalf("first start output: %s", out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"migrate"}, getenv, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "system API key") {
		t.Fatal("system key printed again on the second start")
	}
	out.Reset()
	if err := run(context.Background(), []string{"keys", "create", "--system"}, getenv, &out, &errOut); err != nil || !strings.HasPrefix(out.String(), "hm_") {
		t.Fatalf("keys create: %q %v", out.String(), err)
	}
	env["HMID_DATABASE_URL"] = "postgres://x"
	if err := run(context.Background(), []string{"migrate"}, getenv, &out, &errOut); err == nil || !strings.Contains(err.Error(), "HMID_SECRET_KEY") {
		t.Fatalf("postgres without secret key: %v", err)
	}
}
