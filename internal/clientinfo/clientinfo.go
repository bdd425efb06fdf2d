// Package clientinfo derives the device type, browser and operating system
// shown on sessions and on the API info endpoint from a User-Agent header.
package clientinfo

import (
	"strings"

	"github.com/mssola/useragent"
)

// Info is what a User-Agent tells about the client.
type Info struct {
	DeviceType string // desktop, mobile or tablet
	Browser    string
	OS         string
}

// Parse reads a User-Agent string. Unknown agents give DeviceType "desktop"
// and empty names; no input makes it fail.
func Parse(ua string) Info {
	if len(ua) > 1024 {
		ua = ua[:1024]
	}
	if strings.TrimSpace(ua) == "" {
		return Info{DeviceType: "desktop"}
	}
	p := useragent.New(ua)
	name, _ := p.Browser()
	lower := strings.ToLower(ua)
	info := Info{DeviceType: "desktop", Browser: name, OS: osName(p.OSInfo().Name, lower)}
	switch {
	case strings.Contains(lower, "ipad") || strings.Contains(lower, "tablet") ||
		(strings.Contains(lower, "android") && !strings.Contains(lower, "mobile")):
		info.DeviceType = "tablet"
	case p.Mobile() || strings.Contains(lower, "mobile") || strings.Contains(lower, "iphone"):
		info.DeviceType = "mobile"
	}
	if p.Bot() {
		info.DeviceType = "desktop"
	}
	return info
}

// appleNames maps the names the useragent library reads from Apple's tokens
// to the systems' current names: "iPhone OS" has been iOS since 2010 and
// "Mac OS X" macOS since 2016.
var appleNames = map[string]string{"iPhone OS": "iOS", "Mac OS X": "macOS"}

// osName names the operating system. An iPad says "CPU OS 17_0 like Mac OS X",
// from which the library keeps only "OS"; that system is iPadOS.
func osName(name, lowerUA string) string {
	if strings.Contains(lowerUA, "ipad") && (name == "OS" || name == "iPhone OS") {
		return "iPadOS"
	}
	if n, ok := appleNames[name]; ok {
		return n
	}
	return name
}
