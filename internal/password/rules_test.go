package password

import (
	"strings"
	"testing"

	"hmid/internal/apperr"
)

func TestCommonList(t *testing.T) {
	if n := CommonCount(); n < 95_000 || n > 100_000 {
		t.Fatalf("the common-password list has %d entries, want about 100,000", n)
	}
	for _, p := range []string{"123456", "password", "12345678", "iloveyou", "Password1", "QWERTYUIOP", "trustno1", "letmein1"} {
		if !IsCommon(p) {
			t.Errorf("IsCommon(%q) = false, want true", p)
		}
	}
	for _, p := range []string{"correct horse battery staple", "Zq8#vT2!mLw9", "hmid-policy-test-31"} {
		if IsCommon(p) {
			t.Errorf("IsCommon(%q) = true, want false", p)
		}
	}
}

func TestRulesCheck(t *testing.T) {
	cases := []struct {
		name  string
		rules Rules
		pw    string
		want  string // "" for accepted, else a part of the message
	}{
		{"accepted", DefaultRules, "correct horse battery", ""},
		{"too short", DefaultRules, "abc1234", "at least 8 characters"},
		{"characters, not bytes", DefaultRules, "ääääääää", ""},
		{"common", DefaultRules, "12345678", "most common passwords"},
		{"common, any case", DefaultRules, "PassWord123", "most common passwords"},
		{"common allowed when off", Rules{MinLength: 8}, "12345678", ""},
		{"raised minimum", Rules{MinLength: 12, RefuseCommon: true}, "abcdefgh1234x", ""},
		{"raised minimum refuses", Rules{MinLength: 12, RefuseCommon: true}, "abcdefgh12x", "at least 12 characters"},
		{"too long", DefaultRules, strings.Repeat("x", MaxBytes+1), "at most 1024 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.rules.Check(c.pw)
			if c.want == "" {
				if err != nil {
					t.Fatalf("Check(%q) = %v, want nil", c.pw, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check(%q) = %v, want an error with %q", c.pw, err, c.want)
			}
			if apperr.KindOf(err) != apperr.Validation {
				t.Fatalf("Check(%q) kind = %s, want ValidationError", c.pw, apperr.KindOf(err))
			}
		})
	}
}

func BenchmarkIsCommon(b *testing.B) {
	IsCommon("warm")
	for i := 0; i < b.N; i++ {
		IsCommon("correct horse battery")
	}
}
