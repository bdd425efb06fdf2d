package clientinfo

import "testing"

func TestParse(t *testing.T) {
	cases := []struct{ ua, device, browser, os string }{
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36", "desktop", "Chrome", "Windows 10"},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1", "mobile", "Safari", "CPU iPhone OS 17_0 like Mac OS X"},
		{"Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1", "tablet", "Safari", ""},
		{"", "desktop", "", ""},
	}
	for _, c := range cases {
		got := Parse(c.ua)
		if got.DeviceType != c.device || got.Browser != c.browser {
			t.Errorf("Parse(%.40q) = %+v", c.ua, got)
		}
	}
}
