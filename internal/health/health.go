// Package health serves the health and API info endpoints (spec 3, Health and
// info): real database and cache pings with their response times, the
// real-time channel's counts, uptime and version.
package health

import (
	"context"
	"net/http"
	"time"

	"hmid/internal/cache"
	"hmid/internal/clientinfo"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// Counter reports the real-time channel's open connections and subscriptions.
type Counter interface {
	Counts() (connections, subscriptions int)
}

// Handler serves /health, /v1/health and /v1.
type Handler struct {
	DB       *db.DB
	Cache    cache.Cache
	Redis    bool // a Redis server is configured (otherwise the cache entry reports the in-process cache)
	Realtime Counter
	Version  string
	Started  time.Time
	Clock    clock.Clock
}

// Service is the status of one dependency.
type Service struct {
	Status       string  `json:"status"`
	ResponseTime float64 `json:"responseTime"` // milliseconds
	Type         string  `json:"type,omitempty"`
	Error        string  `json:"error,omitempty"`
}

// Websocket is the real-time channel's block.
type Websocket struct {
	Status        string `json:"status"`
	Connections   int    `json:"connections"`
	Subscriptions int    `json:"subscriptions"`
}

// Uptime is the process uptime split into units.
type Uptime struct {
	Days    int     `json:"days"`
	Hours   int     `json:"hours"`
	Minutes int     `json:"minutes"`
	Seconds int     `json:"seconds"`
	Total   float64 `json:"total"` // seconds
}

// Report is the health body.
type Report struct {
	Status    string      `json:"status"`
	Version   string      `json:"version"`
	Timestamp time.Time   `json:"timestamp"`
	Uptime    Uptime      `json:"uptime"`
	Services  Services    `json:"services"`
	Links     httpx.Links `json:"_links"`
}

// Services holds each dependency's status.
type Services struct {
	Database  Service   `json:"database"`
	Redis     Service   `json:"redis"`
	Websocket Websocket `json:"websocket"`
}

func uptime(d time.Duration) Uptime {
	s := int(d.Seconds())
	return Uptime{Days: s / 86400, Hours: s % 86400 / 3600, Minutes: s % 3600 / 60, Seconds: s % 60, Total: d.Seconds()}
}

func ping(ctx context.Context, f func(context.Context) error) Service {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	err := f(ctx)
	ms := float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		return Service{Status: "down", ResponseTime: ms, Error: "unreachable"}
	}
	return Service{Status: "up", ResponseTime: ms}
}

// Health serves GET /health and /v1/health: 200 when every dependency is up,
// 503 with status naming the failed service otherwise.
func (h *Handler) Health(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	rep := Report{
		Status:    "ok",
		Version:   h.Version,
		Timestamp: h.Clock.Now(),
		Uptime:    uptime(time.Since(h.Started)),
		Links:     httpx.Links{Self: httpx.SelfURL(r)},
	}
	rep.Services.Database = ping(ctx, h.DB.Ping)
	rep.Services.Database.Type = string(h.DB.Flavor)
	rep.Services.Redis = ping(ctx, h.Cache.Ping)
	rep.Services.Redis.Type = h.Cache.Name()
	rep.Services.Websocket = Websocket{Status: "up"}
	if h.Realtime != nil {
		rep.Services.Websocket.Connections, rep.Services.Websocket.Subscriptions = h.Realtime.Counts()
	}
	status := http.StatusOK
	switch {
	case rep.Services.Database.Status != "up" && rep.Services.Redis.Status != "up":
		rep.Status = "database and redis unavailable"
		status = http.StatusServiceUnavailable
	case rep.Services.Database.Status != "up":
		rep.Status = "database unavailable"
		status = http.StatusServiceUnavailable
	case rep.Services.Redis.Status != "up":
		rep.Status = "redis unavailable"
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.JSON(w, status, rep)
}

// Info is the body of GET /v1.
type Info struct {
	Version   string      `json:"version"`
	Server    InfoServer  `json:"server"`
	Client    InfoClient  `json:"client"`
	Timestamp time.Time   `json:"timestamp"`
	Links     httpx.Links `json:"_links"`
}

// InfoServer is the server block of Info.
type InfoServer struct {
	Uptime Uptime `json:"uptime"`
}

// InfoClient is what the server sees of the caller.
type InfoClient struct {
	IP         string `json:"ip"`
	UserAgent  string `json:"userAgent"`
	Browser    string `json:"browser"`
	OS         string `json:"os"`
	DeviceType string `json:"deviceType"`
}

// Info serves GET /v1.
func (h *Handler) Info(w http.ResponseWriter, r *http.Request) {
	ci := clientinfo.Parse(r.UserAgent())
	httpx.JSON(w, http.StatusOK, Info{
		Version:   h.Version,
		Server:    InfoServer{Uptime: uptime(time.Since(h.Started))},
		Client:    InfoClient{IP: httpx.ClientIP(r.Context()), UserAgent: r.UserAgent(), Browser: ci.Browser, OS: ci.OS, DeviceType: ci.DeviceType},
		Timestamp: h.Clock.Now(),
		Links:     httpx.Links{Self: httpx.SelfURL(r)},
	})
}
