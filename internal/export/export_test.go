package export_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"hmid/internal/apptest"
	"hmid/internal/authn"
	"hmid/internal/export"
	"hmid/internal/export/archive"
)

type apps struct{ err error }

func (a apps) ConnectedApps(context.Context, string) ([]archive.ConnectedApp, error) {
	return []archive.ConnectedApp{{Name: "Pegel-Monitor", Scopes: []string{"openid"}, ConsentedAt: apptest.Start}}, a.err
}

func (a apps) OwnedApps(context.Context, string) ([]archive.OwnedApp, error) {
	return []archive.OwnedApp{{ID: "c1", Name: "Mein Tracker", ClientType: "public", IsActive: true, CreatedAt: apptest.Start}}, nil
}

type twoFactor struct{}

func (twoFactor) TwoFactorState(context.Context, string) (archive.TwoFactorAuth, error) {
	at := apptest.Start.Add(-time.Hour)
	return archive.TwoFactorAuth{Enabled: true, EnabledAt: &at, BackupCodesRemaining: 7}, nil
}

func handler(e *apptest.Env) *export.Handler {
	return &export.Handler{DB: e.Server.DB, Clock: e.Clock, Audit: e.Server.Audit, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func serve(h *export.Handler, userID string, w http.ResponseWriter) {
	r := httptest.NewRequest("GET", "/v1/user/export", nil)
	r = r.WithContext(authn.WithPrincipal(r.Context(), authn.NewPrincipal(authn.Principal{Kind: authn.KindSession, UserID: userID}, nil)))
	h.Export(w, r)
}

func countLogs(t *testing.T, e *apptest.Env, userID string) int {
	t.Helper()
	var n int
	if err := e.Server.DB.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM export_logs WHERE user_id = $1`, userID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSourcesFillAppsAndTwoFactor(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		h := handler(e)
		h.Apps, h.TwoFactor = apps{}, twoFactor{}
		rec := httptest.NewRecorder()
		serve(h, u.ID, rec)
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		zr, err := zip.NewReader(bytes.NewReader(rec.Body.Bytes()), int64(rec.Body.Len()))
		if err != nil {
			t.Fatal(err)
		}
		f, err := zr.Open("data.json")
		if err != nil {
			t.Fatal(err)
		}
		var d archive.Data
		if err := json.NewDecoder(f).Decode(&d); err != nil {
			t.Fatal(err)
		}
		if len(d.ConnectedApps) != 1 || d.ConnectedApps[0].Name != "Pegel-Monitor" || len(d.OwnedApps) != 1 || d.OwnedApps[0].ID != "c1" {
			t.Fatalf("apps = %+v %+v", d.ConnectedApps, d.OwnedApps)
		}
		if !d.TwoFactorAuth.Enabled || d.TwoFactorAuth.BackupCodesRemaining != 7 {
			t.Fatalf("2fa = %+v", d.TwoFactorAuth)
		}
	})
}

func TestFailureBeforeStreamingIs500(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		h := handler(e)
		h.Apps = apps{err: errors.New("oauth store down")}
		rec := httptest.NewRecorder()
		serve(h, u.ID, rec)
		if rec.Code != http.StatusInternalServerError || rec.Header().Get("Content-Disposition") != "" ||
			!strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			t.Fatalf("status %d, headers %v", rec.Code, rec.Header())
		}
		var body map[string]string
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["error"] != "InternalError" {
			t.Fatalf("body = %s", rec.Body)
		}
		if n := countLogs(t, e, u.ID); n != 0 {
			t.Fatalf("failed export logged %d times", n)
		}
	})
}

// brokenConn accepts the headers and then fails every write, like a client
// that hung up mid-download.
type brokenConn struct{ *httptest.ResponseRecorder }

func (b brokenConn) Write([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestWriteErrorWhileStreamingAborts(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		u := e.NewUser(t, apptest.UserSpec{})
		rec := brokenConn{httptest.NewRecorder()}
		serve(handler(e), u.ID, rec)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/zip" {
			t.Fatalf("status %d, headers %v", rec.Code, rec.Header())
		}
		if n := countLogs(t, e, u.ID); n != 0 {
			t.Fatalf("undelivered export logged %d times", n)
		}
	})
}

func TestDeletedUserIs401(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		rec := httptest.NewRecorder()
		serve(handler(e), "gone", rec)
		if rec.Code != http.StatusUnauthorized {
			t.Fatalf("status %d", rec.Code)
		}
	})
}
