package audit

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"hmid/internal/clock/clocktest"
	"hmid/internal/dbtest"
)

func TestCSVCell(t *testing.T) {
	str := func(s string) *string { return &s }
	for in, want := range map[string]string{
		"": "", "Chrome": "Chrome", "=1+1": "'=1+1", "+49 30": "'+49 30", "-2": "'-2", "@SUM(A1)": "'@SUM(A1)",
		"\tx": "'\tx", "\rx": "'\rx", "a=b": "a=b",
	} {
		if got := cell(str(in)); got != want {
			t.Errorf("cell(%q) = %q, want %q", in, got, want)
		}
	}
	if cell(nil) != "" {
		t.Error("a null field is not an empty cell")
	}
}

// failingWriter is a client that went away after the first bytes.
type failingWriter struct {
	*httptest.ResponseRecorder
	writes int
}

func (f *failingWriter) Write(b []byte) (int, error) {
	f.writes++
	if f.writes > 1 {
		return 0, errors.New("connection reset by peer")
	}
	return f.ResponseRecorder.Write(b)
}

// TestWriteCSVRefusesBeforeTheFirstByte checks that a refused filter is
// returned with nothing sent, and that a failure while streaming aborts
// the response rather than ending a file that looks complete.
func TestWriteCSVRefusesBeforeTheFirstByte(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		ctx := context.Background()
		d := eng.Open(t)
		clk := clocktest.NewFake(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
		w := &Writer{DB: d, Clock: clk}
		for range 200 {
			clk.Advance(time.Second)
			if _, err := w.Record(ctx, d, Event{UserID: "u1", EventType: Login, UserAgent: strings.Repeat("agent ", 20)}); err != nil {
				t.Fatal(err)
			}
		}
		s := &Service{DB: d, Clock: clk, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}

		rec := httptest.NewRecorder()
		var fe *FieldError
		if err := s.WriteCSV(rec, httptest.NewRequest("GET", "/?status=maybe", nil)); !errors.As(err, &fe) || fe.Field != "status" {
			t.Fatalf("refused filter: %v", err)
		}
		if rec.Body.Len() != 0 || rec.Header().Get("Content-Disposition") != "" {
			t.Fatalf("a refused download sent %q %v", rec.Body, rec.Header())
		}

		rec = httptest.NewRecorder()
		if err := s.WriteCSV(rec, httptest.NewRequest("GET", "/?user_id=u1", nil)); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(rec.Body.String(), "\r\n"); n != 201 {
			t.Fatalf("%d lines, want a header and 200 events", n)
		}

		fw := &failingWriter{ResponseRecorder: httptest.NewRecorder()}
		defer func() {
			if p := recover(); p != http.ErrAbortHandler {
				t.Fatalf("a cut download ended with %v, want http.ErrAbortHandler", p)
			}
		}()
		_ = s.WriteCSV(fw, httptest.NewRequest("GET", "/", nil))
		t.Fatal("a cut download returned normally")
	})
}
