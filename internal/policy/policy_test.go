package policy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"hmid/internal/apperr"
)

func TestCheckBounds(t *testing.T) {
	cases := []struct {
		key, value string
		ok         bool
	}{
		{KeySessionAbsolute, "2592000", true},
		{KeySessionAbsolute, "299", false},
		{KeySessionAbsolute, "0", false},
		{KeySessionAbsolute, "31536001", false},
		{KeySessionAbsolute, "3600.5", false},
		{KeySessionIdle, "0", true},
		{KeySessionIdle, "1800", true},
		{KeySessionIdle, "60", false},
		{KeySessionIdle, "-1", false},
		{KeyAccessToken, "60", true},
		{KeyAccessToken, "86401", false},
		{KeyRefreshToken, "3599", false},
		{KeyPasswordMinLength, "7", false},
		{KeyPasswordMinLength, "12", true},
		{KeyPasswordMinLength, "65", false},
		{KeyRefuseCommon, "false", true},
		{KeyRefuseCommon, "1", false},
		{KeyLoginPerAccount, "0", false},
		{KeyLoginPerAcctDay, "1", false},
		{KeyLoginWindow, "600", true},
	}
	for _, c := range cases {
		isPolicy, err := Check(c.key, json.RawMessage(c.value))
		if !isPolicy {
			t.Fatalf("%s is no policy", c.key)
		}
		if (err == nil) != c.ok {
			t.Errorf("Check(%s, %s) = %v, want ok=%v", c.key, c.value, err, c.ok)
		}
		if err != nil && (apperr.KindOf(err) != apperr.Validation || !strings.Contains(err.Error(), c.key)) {
			t.Errorf("Check(%s, %s) = %v, want a ValidationError naming the key", c.key, c.value, err)
		}
	}
	if isPolicy, _ := Check("stats.cache_ttl_seconds", json.RawMessage("1")); isPolicy {
		t.Fatal("stats.cache_ttl_seconds taken for a policy")
	}
}

func TestDefaultsAreValid(t *testing.T) {
	for _, e := range Entries {
		raw, _ := json.Marshal(e.Default)
		if _, err := Check(e.Key, raw); err != nil {
			t.Errorf("default of %s: %v", e.Key, err)
		}
	}
	rows := map[string]Row{}
	for _, e := range Entries {
		raw, _ := json.Marshal(e.Default)
		rows[e.Key] = Row{Value: raw}
	}
	if got := *Build(rows); got != Default {
		t.Fatalf("Build(defaults) = %+v, want %+v", got, Default)
	}
}

func TestBuild(t *testing.T) {
	changed := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	p := Build(map[string]Row{
		KeySessionAbsolute:   {Value: json.RawMessage("3600")},
		KeySessionIdle:       {Value: json.RawMessage("900"), UpdatedAt: changed},
		KeyAccessToken:       {Value: json.RawMessage("600")},
		KeyPasswordMinLength: {Value: json.RawMessage(`"twelve"`)}, // unreadable: the default stays
		KeyRefuseCommon:      {Value: json.RawMessage("false")},
		KeyLoginPerIP:        {Value: json.RawMessage("50")},
	})
	if p.SessionAbsolute != time.Hour || p.SessionIdle != 15*time.Minute || !p.IdleSince.Equal(changed) {
		t.Fatalf("sessions: %+v", p)
	}
	if p.AccessTokenTTL != 10*time.Minute || p.RefreshTokenTTL != Default.RefreshTokenTTL {
		t.Fatalf("tokens: %v %v", p.AccessTokenTTL, p.RefreshTokenTTL)
	}
	if p.Password.MinLength != 8 || p.Password.RefuseCommon {
		t.Fatalf("password: %+v", p.Password)
	}
	if p.Login.FailPerIP != 50 || p.Login.FailPerAccount != 5 {
		t.Fatalf("login: %+v", p.Login)
	}
	own := int64(120)
	if p.AccessTTL(own) != 2*time.Minute || p.AccessTTL(0) != 10*time.Minute || p.RefreshTTL(0) != Default.RefreshTokenTTL {
		t.Fatal("client lifetimes")
	}
}

func TestIdle(t *testing.T) {
	since := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	p := Default
	if p.IdleExpired(since.Add(-365*24*time.Hour), since) || !p.IdleCutoff(since).IsZero() {
		t.Fatal("the idle timeout is off by default")
	}
	p.SessionIdle, p.IdleSince = time.Hour, since
	old := since.Add(-48 * time.Hour) // idle long before the timeout was set
	if p.IdleExpired(old, since.Add(59*time.Minute)) {
		t.Fatal("a session idle before the timeout was set ended before a timeout had passed since")
	}
	if !p.IdleExpired(old, since.Add(time.Hour)) {
		t.Fatal("a session idle a timeout since the change did not end")
	}
	recent := since.Add(2 * time.Hour)
	if p.IdleExpired(recent, recent.Add(59*time.Minute)) || !p.IdleExpired(recent, recent.Add(61*time.Minute)) {
		t.Fatal("idle counted from the last activity")
	}
	if !p.IdleCutoff(since.Add(30 * time.Minute)).IsZero() {
		t.Fatal("no session is idle past the timeout before a timeout has passed since it was set")
	}
	if got := p.IdleCutoff(since.Add(3 * time.Hour)); !got.Equal(since.Add(2 * time.Hour)) {
		t.Fatalf("IdleCutoff = %v", got)
	}
}
