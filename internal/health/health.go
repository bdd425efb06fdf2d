// Package health serves the health and API info endpoints (spec 3, Health and
// info): real database and cache pings with their response times, the
// database's disk space, the real-time channel's counts, uptime and version;
// and the container probes /livez (the process serves) and /readyz (its
// database and cache answer).
package health

import (
	"cmp"
	"context"
	"net/http"
	"strings"
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
	// Timeout bounds each dependency's ping (0: 2 s, HMID_DEPENDENCY_TIMEOUT's
	// default). The pings run at once, so a frozen database and a frozen
	// Redis together still answer within it.
	Timeout time.Duration
}

// defaultTimeout is Handler.Timeout's default.
const defaultTimeout = 2 * time.Second

// Service is the status of one dependency.
type Service struct {
	Status       string  `json:"status"`
	ResponseTime float64 `json:"responseTime"` // milliseconds
	Type         string  `json:"type,omitempty"`
	Error        string  `json:"error,omitempty"`
	Disk         *Disk   `json:"disk,omitempty"` // the database's only
}

// Disk is the space the database writes to: measured for a SQLite file,
// and for both engines "full" while writes fail for lack of space.
type Disk struct {
	Status     string  `json:"status"` // ok or full
	FreeBytes  *uint64 `json:"freeBytes,omitempty"`
	TotalBytes *uint64 `json:"totalBytes,omitempty"`
}

// Websocket is the real-time channel's block.
type Websocket struct {
	Status        string `json:"status"`
	Connections   int    `json:"connections"`
	Subscriptions int    `json:"subscriptions"`
	Error         string `json:"error,omitempty"`
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

func ping(ctx context.Context, timeout time.Duration, f func(context.Context) error) Service {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	err := f(ctx)
	ms := float64(time.Since(start).Microseconds()) / 1000
	if err != nil {
		return Service{Status: "down", ResponseTime: ms, Error: "unreachable"}
	}
	return Service{Status: "up", ResponseTime: ms}
}

// Health serves GET /health and /v1/health: 200 when every dependency is up
// and the database's disk has room, 503 with status naming what failed
// otherwise (see Check).
func (h *Handler) Health(w http.ResponseWriter, r *http.Request) {
	h.write(w, r, h.Check(r.Context()))
}

// Check reports the health of the service: the database and cache pings,
// the database's disk and the real-time channel. Status is "ok" when every
// dependency is up and the disk has room, else it names what failed
// ("database unavailable", "redis and websocket unavailable", "database
// disk full"). GET /health and the admin console's overview show it.
func (h *Handler) Check(ctx context.Context) Report {
	rep := h.report(ctx)
	rep.Services.Database.Disk = h.disk()
	var down []string
	if rep.Services.Database.Status != "up" {
		down = append(down, "database")
	}
	if rep.Services.Redis.Status != "up" {
		down = append(down, "redis")
	}
	if rep.Services.Websocket.Status != "up" {
		down = append(down, "websocket")
	}
	var problems []string
	if len(down) > 0 {
		problems = append(problems, joinNames(down)+" unavailable")
	}
	if d := rep.Services.Database.Disk; d != nil && d.Status == "full" {
		problems = append(problems, "database disk full")
	}
	if len(problems) > 0 {
		rep.Status = strings.Join(problems, "; ")
	}
	return rep
}

// Ready serves GET /readyz, the readiness probe: the health body, 200 when
// the database and the cache answer, 503 otherwise. A full disk does not
// make an instance unready: it still serves reads, and so would any other.
func (h *Handler) Ready(w http.ResponseWriter, r *http.Request) {
	rep := h.report(r.Context())
	var down []string
	if rep.Services.Database.Status != "up" {
		down = append(down, "database")
	}
	if rep.Services.Redis.Status != "up" {
		down = append(down, "redis")
	}
	if len(down) > 0 {
		rep.Status = joinNames(down) + " unavailable"
	}
	h.write(w, r, rep)
}

// Live is the body of GET /livez.
type Live struct {
	Status string `json:"status"`
}

// Live serves GET /livez, the liveness probe: 200 while the process serves
// HTTP, whatever its dependencies do (restarting hmid would not bring them back).
func (h *Handler) Live(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	httpx.JSON(w, http.StatusOK, Live{Status: "ok"})
}

// report pings the database and the cache and reads the real-time counts.
func (h *Handler) report(ctx context.Context) Report {
	rep := Report{
		Status:    "ok",
		Version:   h.Version,
		Timestamp: h.Clock.Now(),
		Uptime:    uptime(time.Since(h.Started)),
	}
	timeout := cmp.Or(h.Timeout, defaultTimeout)
	if h.Redis {
		// Two network dependencies: ping them at once, so the answer takes
		// the slower ping, not the sum.
		done := make(chan Service, 1)
		go func() { done <- ping(ctx, timeout, h.Cache.Ping) }()
		rep.Services.Database = ping(ctx, timeout, h.DB.Ping)
		rep.Services.Redis = <-done
	} else {
		rep.Services.Database = ping(ctx, timeout, h.DB.Ping)
		rep.Services.Redis = ping(ctx, timeout, h.Cache.Ping)
	}
	rep.Services.Database.Type = string(h.DB.Flavor)
	rep.Services.Redis.Type = h.Cache.Name()
	rep.Services.Websocket = Websocket{Status: "up"}
	if h.Realtime != nil {
		rep.Services.Websocket.Connections, rep.Services.Websocket.Subscriptions = h.Realtime.Counts()
	}
	if h.Redis && rep.Services.Redis.Status != "up" {
		// The channel fans events out to every instance through Redis.
		rep.Services.Websocket.Status = "down"
		rep.Services.Websocket.Error = "events cannot reach other instances while redis is unavailable"
	}
	return rep
}

// disk reports the database's disk: measured space where known, and "full"
// while writes fail for lack of it.
func (h *Handler) disk() *Disk {
	st := h.DB.Disk()
	if !st.Known && !st.Full {
		return nil
	}
	d := &Disk{Status: "ok"}
	if st.Full {
		d.Status = "full"
	}
	if st.Known {
		d.FreeBytes, d.TotalBytes = &st.FreeBytes, &st.TotalBytes
	}
	return d
}

// write answers rep: 200 while its status is "ok", 503 otherwise.
func (h *Handler) write(w http.ResponseWriter, r *http.Request, rep Report) {
	// One canonical self link, so /health and /v1/health answer the same body (spec 1, Versioning 2).
	rep.Links = httpx.Links{Self: httpx.URL(r, "/v1/health")}
	status := http.StatusOK
	if rep.Status != "ok" {
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.JSON(w, status, rep)
}

// joinNames joins names as "a", "a and b", "a, b and c".
func joinNames(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
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
