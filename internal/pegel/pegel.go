// Package pegel is the water-level lookup of spec 3: a read-through, cached
// client of a PEGELONLINE REST API v2 compatible service (HMID_PEGEL_URL),
// listing stations with their current water level and finding the station
// nearest to the current position.
package pegel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"hmid/internal/apperr"
	"hmid/internal/clock"
	"hmid/internal/httpx"
)

// Station is a water-level station as hmid returns it.
type Station struct {
	StationID      string   `json:"station_id"`
	Shortname      string   `json:"shortname"`
	Longname       string   `json:"longname"`
	WaterShortname string   `json:"water_shortname"`
	WaterLongname  string   `json:"water_longname"`
	Latitude       float64  `json:"latitude"`
	Longitude      float64  `json:"longitude"`
	Km             *float64 `json:"km"`
	Agency         string   `json:"agency"`
	LevelCM        *float64 `json:"level_cm"`
	Trend          *int     `json:"trend"`
	DistanceKM     *float64 `json:"distance_km,omitempty"`
}

// upstream station, PEGELONLINE REST API v2 format.
type upstreamStation struct {
	UUID      string   `json:"uuid"`
	Shortname string   `json:"shortname"`
	Longname  string   `json:"longname"`
	Km        *float64 `json:"km"`
	Agency    string   `json:"agency"`
	Longitude *float64 `json:"longitude"`
	Latitude  *float64 `json:"latitude"`
	Water     struct {
		Shortname string `json:"shortname"`
		Longname  string `json:"longname"`
	} `json:"water"`
	Timeseries []struct {
		Shortname          string `json:"shortname"`
		CurrentMeasurement *struct {
			Value *float64 `json:"value"`
			Trend *int     `json:"trend"`
		} `json:"currentMeasurement"`
	} `json:"timeseries"`
}

// Position tells the current position: the latest GPS point.
type Position interface {
	CurrentPosition(ctx context.Context) (lat, lon float64, ok bool, err error)
}

// Service fetches and caches stations.
type Service struct {
	BaseURL  string // HMID_PEGEL_URL; empty means unconfigured
	HTTP     *http.Client
	Clock    clock.Clock
	TTL      func(ctx context.Context) time.Duration // cache lifetime (system config pegel.cache_ttl_seconds)
	Position Position

	group     singleflight.Group
	mu        sync.Mutex
	stations  []Station
	fetchedAt time.Time
}

// ErrUnconfigured is returned when HMID_PEGEL_URL is not set.
var ErrUnconfigured = apperr.Unavailablef("water levels are not configured on this server (HMID_PEGEL_URL is empty)")

// Stations returns every station, from the cache while it is fresh. Concurrent
// misses share one upstream call. When the upstream fails, a stale cache is
// served; with nothing cached the answer is 503.
func (s *Service) Stations(ctx context.Context) ([]Station, error) {
	if s.BaseURL == "" {
		return nil, ErrUnconfigured
	}
	now := s.Clock.Now()
	s.mu.Lock()
	cached, at := s.stations, s.fetchedAt
	s.mu.Unlock()
	if cached != nil && now.Sub(at) < s.TTL(ctx) {
		return cached, nil
	}
	v, err, _ := s.group.Do("stations", func() (any, error) {
		// A fresh context: one caller giving up must not fail the others.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		st, err := s.fetch(fctx)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.stations, s.fetchedAt = st, s.Clock.Now()
		s.mu.Unlock()
		return st, nil
	})
	if err != nil {
		if cached != nil {
			return cached, nil
		}
		return nil, apperr.Unavailablef("the water-level service is unavailable and nothing is cached")
	}
	return v.([]Station), nil
}

func (s *Service) fetch(ctx context.Context) ([]Station, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.BaseURL+"/stations.json?includeTimeseries=true&includeCurrentMeasurement=true", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	res, err := s.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("pegel: upstream answered %d", res.StatusCode)
	}
	var raw []upstreamStation
	if err := json.NewDecoder(io.LimitReader(res.Body, 64<<20)).Decode(&raw); err != nil {
		return nil, fmt.Errorf("pegel: decode: %w", err)
	}
	out := make([]Station, 0, len(raw))
	for _, u := range raw {
		if u.Latitude == nil || u.Longitude == nil || u.UUID == "" {
			continue
		}
		st := Station{
			StationID: u.UUID, Shortname: u.Shortname, Longname: u.Longname,
			WaterShortname: u.Water.Shortname, WaterLongname: u.Water.Longname,
			Latitude: *u.Latitude, Longitude: *u.Longitude, Km: u.Km, Agency: u.Agency,
		}
		// level_cm is the current measurement of the W (Wasserstand) time series.
		for _, ts := range u.Timeseries {
			if ts.Shortname == "W" && ts.CurrentMeasurement != nil {
				st.LevelCM, st.Trend = ts.CurrentMeasurement.Value, ts.CurrentMeasurement.Trend
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// ByWater filters stations by water-body shortname (case-insensitive); empty keeps all.
func ByWater(st []Station, water string) []Station {
	if water == "" {
		return st
	}
	out := []Station{}
	for _, s := range st {
		if strings.EqualFold(s.WaterShortname, water) {
			out = append(out, s)
		}
	}
	return out
}

// DistanceKM is the great-circle (haversine) distance between two points on
// a sphere of the Earth's mean radius.
func DistanceKM(lat1, lon1, lat2, lon2 float64) float64 {
	const r = 6371.0088
	rad := math.Pi / 180
	dLat, dLon := (lat2-lat1)*rad, (lon2-lon1)*rad
	a := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * r * math.Asin(math.Min(1, math.Sqrt(a)))
}

// Nearest returns the station closest to (lat, lon) within radius km.
func Nearest(st []Station, lat, lon, radius float64) (Station, bool) {
	best, found := Station{}, false
	bestD := math.Inf(1)
	for _, s := range st {
		d := DistanceKM(lat, lon, s.Latitude, s.Longitude)
		if d <= radius && d < bestD {
			best, bestD, found = s, d, true
		}
	}
	if found {
		d := math.Round(bestD*1000) / 1000
		best.DistanceKM = &d
	}
	return best, found
}

// DefaultRadiusKM is the search radius of nearest when none is given.
const DefaultRadiusKM = 50

// Handler serves the water-level endpoints.
type Handler struct {
	S *Service
}

// Stations serves GET /v1/pegel/stations?water=…: a bare array.
func (h *Handler) Stations(w http.ResponseWriter, r *http.Request) {
	st, err := h.S.Stations(r.Context())
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	out := ByWater(st, r.URL.Query().Get("water"))
	// A copy, so sorting leaves the shared cache alone; never nil, so no
	// match is [] and not null.
	sorted := append(make([]Station, 0, len(out)), out...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Longname < sorted[j].Longname })
	httpx.JSON(w, http.StatusOK, sorted)
}

// Nearest serves GET /v1/pegel/nearest?water=&radius=&latitude=&longitude=.
// The position is the latest GPS point; explicit latitude and longitude
// override it (an extension).
func (h *Handler) Nearest(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	radius := float64(DefaultRadiusKM)
	if v := q.Get("radius"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 20000 || math.IsNaN(f) {
			httpx.Error(w, r, apperr.Invalid("radius must be a number of kilometres between 0 and 20000"))
			return
		}
		radius = f
	}
	lat, lon, err := h.position(r)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	st, err := h.S.Stations(r.Context())
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	best, ok := Nearest(ByWater(st, q.Get("water")), lat, lon, radius)
	if !ok {
		httpx.Error(w, r, apperr.NotFoundf("no station within %g km", radius))
		return
	}
	httpx.JSON(w, http.StatusOK, best)
}

func (h *Handler) position(r *http.Request) (float64, float64, error) {
	q := r.URL.Query()
	la, lo := q.Get("latitude"), q.Get("longitude")
	if la != "" || lo != "" {
		lat, err1 := strconv.ParseFloat(la, 64)
		lon, err2 := strconv.ParseFloat(lo, 64)
		if err1 != nil || err2 != nil || lat < -90 || lat > 90 || lon < -180 || lon > 180 {
			return 0, 0, apperr.Invalid("latitude must be within ±90 and longitude within ±180, both together")
		}
		return lat, lon, nil
	}
	if h.S.BaseURL == "" {
		return 0, 0, ErrUnconfigured
	}
	if h.S.Position == nil {
		return 0, 0, apperr.NotFoundf("no current position: no GPS point recorded yet")
	}
	lat, lon, ok, err := h.S.Position.CurrentPosition(r.Context())
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return 0, 0, apperr.NotFoundf("no current position: no GPS point recorded yet")
	}
	return lat, lon, nil
}
