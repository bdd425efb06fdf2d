package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"hmid/internal/db"
)

func init() {
	register(
		Scenario{Name: "gps-ingest", About: "POST /v1/gps from 10,000 devices, each with its own API key", Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			devices, err := e.trackers(ctx, 10_000)
			if err != nil {
				return nil, err
			}
			var n atomic.Int64
			return func(ctx context.Context, _ int) error {
				i := n.Add(1)
				d := devices[i%int64(len(devices))]
				return e.call(ctx, http.MethodPost, "/v1/gps", d.key, map[string]any{
					"device_id": d.id, "latitude": 52.5 + float64(i%1000)/10000, "longitude": 13.4, "altitude": 34, "heading": 90,
					"timestamp": time.Now().Unix(), "speed_kmh": 36, "speed_mps": 10, "speed_mph": 22.37, "speed_knots": 19.44,
				}, http.StatusCreated, nil)
			}, nil
		}},
		Scenario{Name: "gps-list-page1", About: "GET /v1/gps page 1 (limit 100) of 1,000,000 points", Setup: gpsList(1)},
		Scenario{Name: "gps-list-page10000", About: "GET /v1/gps page 10,000 (limit 100) of 1,000,000 points", Setup: gpsList(10_000)},
		Scenario{Name: "gps-current", About: "GET /v1/gps/current (cached latest point)", Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			key, err := e.apiKey(ctx, "gps:read", "gps:write")
			if err != nil {
				return nil, err
			}
			if err := e.call(ctx, http.MethodPost, "/v1/gps", key, map[string]any{"latitude": 52.5, "longitude": 13.4, "altitude": 34, "heading": 90,
				"timestamp": time.Now().Unix(), "speed_kmh": 0, "speed_mps": 0, "speed_mph": 0, "speed_knots": 0}, http.StatusCreated, nil); err != nil {
				return nil, err
			}
			return e.get("/v1/gps/current", key), nil
		}},
		Scenario{Name: "trip-gps", About: "GET /v1/trips/{id}/gps page 50 of a trip with 10,000 points", Setup: func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
			if e.Server == nil {
				return nil, errors.New("trip-gps seeds the database directly: run it in process")
			}
			key, err := e.apiKey(ctx, "trips:read", "trips:write")
			if err != nil {
				return nil, err
			}
			var trip struct {
				Data struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			if err := e.call(ctx, http.MethodPost, "/v1/trips", key, map[string]any{"name": "bench trip"}, http.StatusCreated, &trip); err != nil {
				return nil, err
			}
			if err := seedPoints(ctx, e.Server.DB, 10_000, trip.Data.ID, "t"); err != nil {
				return nil, err
			}
			return e.get("/v1/trips/"+trip.Data.ID+"/gps?page=50&limit=100", key), nil
		}},
	)
}

var seeded sync.Once

// gpsList benchmarks one page of the GPS listing over a million seeded points.
func gpsList(page int) func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
	return func(ctx context.Context, e *Env) (func(context.Context, int) error, error) {
		if e.Server == nil {
			return nil, errors.New("the GPS listing seeds 1,000,000 points directly: run it in process")
		}
		var err error
		seeded.Do(func() { err = seedPoints(ctx, e.Server.DB, 1_000_000, "", "m") })
		if err != nil {
			return nil, err
		}
		key, err := e.apiKey(ctx, "gps:read")
		if err != nil {
			return nil, err
		}
		return e.get(fmt.Sprintf("/v1/gps?page=%d&limit=100", page), key), nil
	}
}

// seedPoints writes n points (one second apart, ending now) straight into
// the database in one statement, and adds them to the point counter.
// tripID links them to a trip when set; tag keeps the ids of separate seeds apart.
func seedPoints(ctx context.Context, d *db.DB, n int, tripID, tag string) error {
	start := db.TS(time.Now().Add(-time.Duration(n) * time.Second))
	var trip any
	if tripID != "" {
		trip = tripID
	}
	var q string
	if d.Flavor == db.Postgres {
		q = `INSERT INTO gps_points (id, trip_id, latitude, longitude, altitude, heading, ts, speed_kmh, speed_mps, speed_mph, speed_knots, pdop, hdop, vdop, created_at)
			SELECT $4 || lpad(g::text, 12, '0'), $3, 52.5, 13.4, 30, 90, $1::bigint + g::bigint * 1000000, 36, 10, 22.4, 19.4, 1.2, 0.8, 1.0, $1::bigint + g::bigint * 1000000
			FROM generate_series(1, $2::integer) AS g`
	} else {
		q = `WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < $2)
			INSERT INTO gps_points (id, trip_id, latitude, longitude, altitude, heading, ts, speed_kmh, speed_mps, speed_mph, speed_knots, pdop, hdop, vdop, created_at)
			SELECT $4 || printf('%012d', g), $3, 52.5, 13.4, 30, 90, $1 + g * 1000000, 36, 10, 22.4, 19.4, 1.2, 0.8, 1.0, $1 + g * 1000000 FROM s`
	}
	prefix := "00000000-0000-7000-80" + fmt.Sprintf("%02x", tag[0]) + "-"
	if _, err := d.ExecContext(ctx, q, start, n, trip, prefix); err != nil {
		return err
	}
	if _, err := d.ExecContext(ctx, `UPDATE gps_point_count SET n = n + $1 WHERE slot = 0`, n); err != nil {
		return err
	}
	// The per-hour counts the listing walks for deep pages; each seed uses its
	// own counter slot so seeds add up without colliding.
	if _, err := d.ExecContext(ctx, `INSERT INTO gps_point_buckets (bucket, slot, n)
		SELECT ts / 3600000000, $2, COUNT(*) FROM gps_points WHERE id LIKE $1 GROUP BY ts / 3600000000
		ON CONFLICT (bucket, slot) DO UPDATE SET n = gps_point_buckets.n + excluded.n`, prefix+"%", int(tag[0])%16); err != nil {
		return err
	}
	stmt := "ANALYZE"
	if d.Flavor == db.Postgres {
		stmt = "ANALYZE gps_points"
	}
	_, err := d.ExecContext(ctx, stmt)
	return err
}

// tracker is a device with an API key of its own (GPS writes are rate
// limited per key).
type tracker struct{ id, key string }

// trackers creates n devices, each linked to an API key with gps:write.
func (e *Env) trackers(ctx context.Context, n int) ([]tracker, error) {
	devices := make([]tracker, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var setupErr error
	var once sync.Once
	for range min(16, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(devices) {
					return
				}
				var k struct {
					ID  string `json:"id"`
					Key string `json:"key"`
				}
				err := e.call(ctx, http.MethodPost, "/v1/api-keys", e.SystemKey, map[string]any{"name": fmt.Sprintf("device %d", i), "scopes": []string{"gps:write"}}, http.StatusCreated, &k)
				var d struct {
					Data struct {
						ID string `json:"id"`
					} `json:"data"`
				}
				if err == nil {
					err = e.call(ctx, http.MethodPost, "/v1/devices", e.SystemKey, map[string]any{"name": fmt.Sprintf("tracker %d", i), "api_key_id": k.ID}, http.StatusCreated, &d)
				}
				if err != nil {
					once.Do(func() { setupErr = err })
					return
				}
				devices[i] = tracker{id: d.Data.ID, key: k.Key}
			}
		}()
	}
	wg.Wait()
	return devices, setupErr
}
