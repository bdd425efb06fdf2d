package settings

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"hmid/internal/cache"
	"hmid/internal/httpx"
)

// Stats are the public statistics: counts a visitor would want to see.
type Stats struct {
	Users       CountBlock   `json:"users"`
	Trips       TripCounts   `json:"trips"`
	GPSPoints   CountBlock   `json:"gps_points"`
	Devices     DeviceCounts `json:"devices"`
	Platforms   []string     `json:"platforms"`
	GeneratedAt time.Time    `json:"generated_at"`
}

// CountBlock is a total.
type CountBlock struct {
	Total int64 `json:"total"`
}

// TripCounts are trips in total and by status.
type TripCounts struct {
	Total    int64            `json:"total"`
	ByStatus map[string]int64 `json:"by_status"`
}

// DeviceCounts are devices in total and active.
type DeviceCounts struct {
	Total  int64 `json:"total"`
	Active int64 `json:"active"`
}

const statsKey = "stats:public"

// PublicStats computes the statistics, or returns them from the shared cache
// while they are younger than stats.cache_ttl_seconds.
func (s *Service) PublicStats(ctx context.Context, c cache.Cache) (Stats, error) {
	ttl := s.Seconds(ctx, KeyStatsCacheTTL, time.Minute)
	if b, err := c.Get(ctx, statsKey); err == nil {
		var st Stats
		// The age is checked on the injected clock as well as by the cache's
		// own expiry, so both cache implementations honour the same lifetime.
		if json.Unmarshal(b, &st) == nil && s.Clock.Now().Sub(st.GeneratedAt) < ttl {
			return st, nil
		}
	}
	st := Stats{Trips: TripCounts{ByStatus: map[string]int64{"draft": 0, "active": 0, "paused": 0, "completed": 0}}, Platforms: []string{}, GeneratedAt: s.Clock.Now()}
	q := s.DB
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE deleted_at IS NULL`).Scan(&st.Users.Total); err != nil {
		return st, err
	}
	rows, err := q.QueryContext(ctx, `SELECT status, COUNT(*) FROM trips GROUP BY status`)
	if err != nil {
		return st, err
	}
	for rows.Next() {
		var status string
		var n int64
		if err := rows.Scan(&status, &n); err != nil {
			rows.Close()
			return st, err
		}
		st.Trips.ByStatus[status] = n
		st.Trips.Total += n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, err
	}
	// The tracking area keeps the GPS point count in counter slots, so this
	// does not scan a table of millions of rows.
	if err := q.QueryRowContext(ctx, `SELECT COALESCE(SUM(n), 0) FROM gps_point_count`).Scan(&st.GPSPoints.Total); err != nil {
		return st, err
	}
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(CASE WHEN is_active THEN 1 END) FROM devices`).Scan(&st.Devices.Total, &st.Devices.Active); err != nil {
		return st, err
	}
	prow, err := q.QueryContext(ctx, `SELECT slug FROM platforms WHERE enabled ORDER BY slug`)
	if err != nil {
		return st, err
	}
	defer prow.Close()
	for prow.Next() {
		var slug string
		if err := prow.Scan(&slug); err != nil {
			return st, err
		}
		st.Platforms = append(st.Platforms, slug)
	}
	if err := prow.Err(); err != nil {
		return st, err
	}
	_ = c.Set(ctx, statsKey, []byte(mustJSON(st)), ttl)
	return st, nil
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Stats serves GET /v1/stats/public: {data: stats, _links}.
func (h *Handler) Stats(w http.ResponseWriter, r *http.Request) {
	st, err := h.S.PublicStats(r.Context(), h.Cache)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=30")
	httpx.WriteResource(w, r, http.StatusOK, st)
}
