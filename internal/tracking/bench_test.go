package tracking_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"hmid/internal/app"
	"hmid/internal/apptest"
	"hmid/internal/clock/clocktest"
	"hmid/internal/config"
	"hmid/internal/db"
	"hmid/internal/dbtest"
	"hmid/internal/token"
)

// benchEnv is a running server driven in process (no sockets), so the
// figures are the server's own cost.
type benchEnv struct {
	srv   *app.Server
	clock *clocktest.Fake
	sys   string
}

// benchEngines runs fn once per engine; fn must only call b.Run for leaves,
// so its expensive setup runs once.
func benchEngines(b *testing.B, fn func(b *testing.B, env *benchEnv)) {
	engines := []dbtest.Engine{{Name: "sqlite", URL: dbtest.SQLite(b)}}
	if dbtest.PostgresURL() != "" {
		engines = append(engines, dbtest.Engine{Name: "postgres", URL: dbtest.Postgres(b), RedisURL: dbtest.RedisURL()})
	}
	for _, eng := range engines {
		b.Run(eng.Name, func(b *testing.B) {
			fc := clocktest.NewFake(apptest.Start)
			srv, err := app.New(context.Background(), config.Config{
				Addr: ":0", PublicURL: "http://bench.test", DatabaseURL: eng.URL, RedisURL: eng.RedisURL,
				SecretKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", MailFrom: "hmid@localhost", LogLevel: "error", DisableAccessLog: true,
			}, app.Options{Clock: fc, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), CachePrefix: dbtest.Key()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { srv.Close() })
			fn(b, &benchEnv{srv: srv, clock: fc, sys: srv.SystemKey})
		})
	}
}

func (e *benchEnv) do(b *testing.B, method, path, tok string, body []byte, want int) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	e.srv.ServeHTTP(w, req)
	if w.Code != want {
		// Errorf, not Fatalf: this runs on RunParallel's goroutines.
		b.Errorf("%s %s: %d %s", method, path, w.Code, w.Body.String())
	}
}

// latencies collects request durations from parallel workers.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d []time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d...)
	l.mu.Unlock()
}

func (l *latencies) report(b *testing.B) {
	if len(l.d) == 0 {
		return
	}
	slices.Sort(l.d)
	q := func(p float64) float64 { return float64(l.d[int(float64(len(l.d)-1)*p)].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

// timed runs op in parallel b.N times, reporting p50 and p99 latency.
func timed(b *testing.B, op func(i int64)) {
	var lat latencies
	var n atomic.Int64
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			i := n.Add(1)
			t0 := time.Now()
			op(i)
			mine = append(mine, time.Since(t0))
		}
		lat.add(mine)
	})
	b.StopTimer()
	lat.report(b)
	// Process CPU per operation: with a loaded machine the latencies measure
	// the queue for a core, this measures the work (the database server's own
	// CPU is not in it when it is PostgreSQL).
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// cpuTime returns the user and system CPU time of this process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// seedPoints writes n points with one second between timestamps, straight
// into the database (ingestion has its own benchmark), and sets the counter.
func seedPoints(b *testing.B, d *db.DB, n int) {
	ctx := context.Background()
	start := db.TS(apptest.Start.Add(-time.Duration(n) * time.Second))
	var q string
	if d.Flavor == db.Postgres {
		q = `INSERT INTO gps_points (id, latitude, longitude, altitude, heading, ts, speed_kmh, speed_mps, speed_mph, speed_knots, created_at)
			SELECT '00000000-0000-7000-8000-' || lpad(g::text, 12, '0'), 52.5, 13.4, 30, 90, $1::bigint + g::bigint * 1000000, 36, 10, 22.4, 19.4, $1::bigint + g::bigint * 1000000
			FROM generate_series(1, $2::integer) AS g`
	} else {
		q = `WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < $2)
			INSERT INTO gps_points (id, latitude, longitude, altitude, heading, ts, speed_kmh, speed_mps, speed_mph, speed_knots, created_at)
			SELECT printf('00000000-0000-7000-8000-%012d', g), 52.5, 13.4, 30, 90, $1 + g * 1000000, 36, 10, 22.4, 19.4, $1 + g * 1000000 FROM s`
	}
	if _, err := d.ExecContext(ctx, q, start, n); err != nil {
		b.Fatal(err)
	}
	if _, err := d.ExecContext(ctx, `UPDATE gps_point_count SET n = n + $1 WHERE slot = 0`, n); err != nil {
		b.Fatal(err)
	}
	if _, err := d.ExecContext(ctx, `INSERT INTO gps_point_buckets (bucket, slot, n) SELECT ts / 3600000000, 0, COUNT(*) FROM gps_points GROUP BY ts / 3600000000`); err != nil {
		b.Fatal(err)
	}
	stmt := "ANALYZE"
	if d.Flavor == db.Postgres {
		stmt = "VACUUM ANALYZE gps_points"
	}
	if _, err := d.ExecContext(ctx, stmt); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkGPSListDeepPage lists page 1 and page 10,000 of 1,000,000 points.
func BenchmarkGPSListDeepPage(b *testing.B) {
	benchEngines(b, func(b *testing.B, e *benchEnv) {
		seedPoints(b, e.srv.DB, 1_000_000)
		for _, page := range []int{1, 10_000, 100_000} {
			b.Run(fmt.Sprintf("page=%d", page), func(b *testing.B) {
				path := fmt.Sprintf("/v1/gps?page=%d&limit=10", page)
				e.do(b, "GET", path, e.sys, nil, http.StatusOK)
				timed(b, func(int64) { e.do(b, "GET", path, e.sys, nil, http.StatusOK) })
			})
		}
	})
}

// BenchmarkGPSCurrent reads the latest point, globally and of one device.
func BenchmarkGPSCurrent(b *testing.B) {
	benchEngines(b, func(b *testing.B, e *benchEnv) {
		seedPoints(b, e.srv.DB, 100_000)
		dev := uuid.NewString()
		now := db.TS(e.clock.Now())
		if _, err := e.srv.DB.ExecContext(context.Background(), `INSERT INTO devices (id, name, created_at, updated_at) VALUES ($1, 'bench', $2, $2)`, dev, now); err != nil {
			b.Fatal(err)
		}
		body := fmt.Appendf(nil, `{"latitude":1,"longitude":2,"altitude":3,"heading":4,"timestamp":%d,"speed_kmh":1,"speed_mps":1,"speed_mph":1,"speed_knots":1,"device_id":%q}`,
			apptest.Start.Unix(), dev)
		e.do(b, "POST", "/v1/gps", e.sys, body, http.StatusCreated)
		for _, path := range []string{"/v1/gps/current", "/v1/gps/current?device_id=" + dev} {
			b.Run(map[bool]string{true: "global", false: "device"}[path == "/v1/gps/current"], func(b *testing.B) {
				timed(b, func(int64) { e.do(b, "GET", path, e.sys, nil, http.StatusOK) })
			})
		}
	})
}

// BenchmarkGPSIngest posts points from 10,000 devices, each with its own API
// key, in parallel; points/s is the ingestion rate.
func BenchmarkGPSIngest(b *testing.B) {
	const devices = 10_000
	benchEngines(b, func(b *testing.B, e *benchEnv) {
		ctx := context.Background()
		keys := make([]string, devices)
		devs := make([]string, devices)
		now := db.TS(e.clock.Now())
		err := e.srv.DB.Tx(ctx, func(tx *db.Tx) error {
			for i := range devices {
				keys[i] = token.New(token.PrefixAPIKey)
				kid, did := uuid.NewString(), uuid.NewString()
				devs[i] = did
				if _, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, name, description, key_hash, key_prefix, scopes, is_active, is_system, created_at, updated_at)
					VALUES ($1, 'device', '', $2, $3, '["gps:write"]', TRUE, FALSE, $4, $4)`, kid, token.Hash(keys[i]), token.KeyPrefix(keys[i]), now); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO devices (id, name, api_key_id, created_at, updated_at) VALUES ($1, 'device', $2, $3, $3)`, did, kid, now); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		post := func(b *testing.B, k int, ts int64) {
			body := fmt.Appendf(nil, `{"latitude":52.5,"longitude":13.4,"altitude":30,"heading":90,"timestamp":%d,"speed_kmh":36,"speed_mps":10,"speed_mph":22.4,"speed_knots":19.4,"device_id":%q}`,
				ts, devs[k])
			e.do(b, "POST", "/v1/gps", keys[k], body, http.StatusCreated)
		}
		// Every device reports once before timing: the steady state of a
		// fleet whose keys were seen in the last half minute.
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for k := w; k < devices; k += 8 {
					post(b, k, apptest.Start.Unix()-int64(devices-k))
				}
			})
		}
		wg.Wait()
		b.Run("devices=10000", func(b *testing.B) {
			var window atomic.Int64
			b.SetParallelism(32)
			timed(b, func(i int64) {
				k := i % devices
				// Each key may post 30 points a minute: open a new window
				// before any key runs out.
				if w := i / (devices * 24); w > window.Load() && window.CompareAndSwap(w-1, w) {
					e.clock.Advance(time.Minute)
				}
				post(b, int(k), apptest.Start.Unix()+i)
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "points/s")
		})
	})
}
