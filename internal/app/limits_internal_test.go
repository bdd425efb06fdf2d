package app

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestBodiesInMemoryAreBounded: the bodies held at once, received or being
// received, stay within the budget (a MiB per in-flight slot); a body past
// it is answered 503 with Retry-After, and what a request held is given
// back when it ends.
func TestBodiesInMemoryAreBounded(t *testing.T) {
	t.Parallel()
	l := newRequestLimits(1, time.Second, time.Second) // a 1 MiB budget
	inside, release := make(chan struct{}), make(chan struct{})
	h := l.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read the received body: %v", err)
		}
		if len(b) == 600<<10 {
			close(inside)
			<-release
		}
		_, _ = w.Write([]byte("ok"))
	}))
	first := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(first, httptest.NewRequest("POST", "/", bytes.NewReader(make([]byte, 600<<10))))
	}()
	<-inside
	second := httptest.NewRecorder()
	h.ServeHTTP(second, httptest.NewRequest("POST", "/", strings.NewReader(`{"a":1}`)))
	if second.Code != http.StatusServiceUnavailable || second.Header().Get("Retry-After") != "1" {
		t.Fatalf("a body past the budget: %d %q (Retry-After %q)", second.Code, second.Body, second.Header().Get("Retry-After"))
	}
	close(release)
	<-done
	if first.Code != http.StatusOK {
		t.Fatalf("the body within the budget: %d %q", first.Code, first.Body)
	}
	if held := l.bodyHeld.Load(); held != 0 {
		t.Fatalf("%d bytes still counted after both requests ended", held)
	}
	// The budget is free again.
	third := httptest.NewRecorder()
	h.ServeHTTP(third, httptest.NewRequest("POST", "/", strings.NewReader(`{"a":1}`)))
	if third.Code != http.StatusOK || third.Body.String() != "ok" {
		t.Fatalf("after the budget came back: %d %q", third.Code, third.Body)
	}
}

// TestReceivedBodyKeepsItsError: a body over the 1 MiB limit reaches the
// handler as it did when the handler read the connection: the bytes that
// came, then *http.MaxBytesError.
func TestReceivedBodyKeepsItsError(t *testing.T) {
	t.Parallel()
	l := newRequestLimits(4, time.Second, time.Second)
	var got error
	var n int
	h := l.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b []byte
		b, got = io.ReadAll(r.Body)
		n = len(b)
	}))
	req := httptest.NewRequest("POST", "/", bytes.NewReader(make([]byte, 2<<20)))
	rec := httptest.NewRecorder()
	req.Body = http.MaxBytesReader(rec, req.Body, 1<<20) // as httpx.Base does
	h.ServeHTTP(rec, req)
	if _, ok := got.(*http.MaxBytesError); !ok || n != 1<<20 {
		t.Fatalf("handler read %d bytes and %v, want 1 MiB and *http.MaxBytesError", n, got)
	}
	if held := l.bodyHeld.Load(); held != 0 {
		t.Fatalf("%d bytes still counted", held)
	}
}
