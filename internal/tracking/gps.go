package tracking

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"hash/fnv"
	"math"
	"net/http"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/cache"
	"hmid/internal/db"
	"hmid/internal/events"
	"hmid/internal/httpx"
)

// Limits of POST /v1/gps (spec 3, Limits).
const (
	GPSRateLimit  = 30
	GPSRateWindow = time.Minute
	// CurrentTTL bounds how old a served latest point may be (spec 3, Limits).
	CurrentTTL = 5 * time.Minute
	// countSlots is the number of rows of gps_point_count (see the migration).
	countSlots = 16
)

// Point is a GPS point.
type Point struct {
	ID         string    `json:"id"`
	DeviceID   *string   `json:"device_id"`
	TripID     *string   `json:"trip_id"`
	Latitude   float64   `json:"latitude"`
	Longitude  float64   `json:"longitude"`
	Altitude   float64   `json:"altitude"`
	Heading    float64   `json:"heading"`
	Timestamp  time.Time `json:"timestamp"`
	SpeedKmh   float64   `json:"speed_kmh"`
	SpeedMps   float64   `json:"speed_mps"`
	SpeedMph   float64   `json:"speed_mph"`
	SpeedKnots float64   `json:"speed_knots"`
	PDOP       *float64  `json:"pdop"`
	HDOP       *float64  `json:"hdop"`
	VDOP       *float64  `json:"vdop"`
	CreatedAt  time.Time `json:"created_at"`
}

const pointCols = `id, device_id, trip_id, latitude, longitude, altitude, heading, ts, speed_kmh, speed_mps, speed_mph, speed_knots, pdop, hdop, vdop, created_at`

func scanPoint(row db.Scanner) (Point, error) {
	var p Point
	var dev, trip sql.NullString
	var pd, hd, vd sql.NullFloat64
	var ts, c int64
	err := row.Scan(&p.ID, &dev, &trip, &p.Latitude, &p.Longitude, &p.Altitude, &p.Heading, &ts,
		&p.SpeedKmh, &p.SpeedMps, &p.SpeedMph, &p.SpeedKnots, &pd, &hd, &vd, &c)
	p.DeviceID, p.TripID = db.StringPtr(dev), db.StringPtr(trip)
	p.PDOP, p.HDOP, p.VDOP = fptr(pd), fptr(hd), fptr(vd)
	p.Timestamp, p.CreatedAt = db.FromTS(ts), db.FromTS(c)
	return p, err
}

// PointInput is the body of POST /v1/gps.
type PointInput struct {
	Latitude   *float64 `json:"latitude"`
	Longitude  *float64 `json:"longitude"`
	Altitude   *float64 `json:"altitude"`
	Heading    *float64 `json:"heading"`
	Timestamp  *int64   `json:"timestamp"` // Unix seconds
	SpeedKmh   *float64 `json:"speed_kmh"`
	SpeedMps   *float64 `json:"speed_mps"`
	SpeedMph   *float64 `json:"speed_mph"`
	SpeedKnots *float64 `json:"speed_knots"`
	PDOP       *float64 `json:"pdop"`
	HDOP       *float64 `json:"hdop"`
	VDOP       *float64 `json:"vdop"`
	DeviceID   *string  `json:"device_id"`
}

// minPointTime is the earliest GPS timestamp accepted, and maxPointAhead how
// far past the server's clock one may be. A point's timestamp orders
// /v1/gps/current for everyone, so one from the far future would stay "the
// latest" for years; a day of slack covers device clocks set wrong by a
// time zone (docs/decisions.md, "Input bounds").
var minPointTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

const maxPointAhead = 24 * time.Hour

// validate checks a point against the rules of spec 3; now is the server's clock.
func (in *PointInput) validate(now time.Time) error {
	required := []struct {
		name string
		v    *float64
	}{{"latitude", in.Latitude}, {"longitude", in.Longitude}, {"altitude", in.Altitude}, {"heading", in.Heading},
		{"speed_kmh", in.SpeedKmh}, {"speed_mps", in.SpeedMps}, {"speed_mph", in.SpeedMph}, {"speed_knots", in.SpeedKnots}}
	for _, f := range required {
		if f.v == nil {
			return apperr.Invalid("%s is required", f.name)
		}
	}
	if in.Timestamp == nil {
		return apperr.Invalid("timestamp is required (integer Unix seconds)")
	}
	if lo, hi := minPointTime.Unix(), now.Add(maxPointAhead).Unix(); *in.Timestamp < lo || *in.Timestamp > hi {
		return apperr.Invalid("timestamp must be Unix seconds from %d (2000-01-01) to %d (24 hours from now)", lo, hi)
	}
	if err := checkLat("latitude", in.Latitude); err != nil {
		return err
	}
	if err := checkLon("longitude", in.Longitude); err != nil {
		return err
	}
	if !finite(*in.Altitude) {
		return apperr.Invalid("altitude must be a number")
	}
	if h := *in.Heading; !finite(h) || h < 0 || h > 360 {
		return apperr.Invalid("heading must be between 0 and 360 degrees")
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"speed_kmh", in.SpeedKmh}, {"speed_mps", in.SpeedMps}, {"speed_mph", in.SpeedMph}, {"speed_knots", in.SpeedKnots},
		{"pdop", in.PDOP}, {"hdop", in.HDOP}, {"vdop", in.VDOP}} {
		if err := checkNonNegative(f.name, f.v); err != nil {
			return err
		}
	}
	var err error
	in.DeviceID, err = optUUID("device_id", in.DeviceID)
	return err
}

// Cache keys of the latest point, globally and per device.
const currentKey = "gps:current"

func currentDeviceKey(deviceID string) string { return currentKey + ":device:" + deviceID }

// rateKey names the principal a POST /v1/gps counts against: the API key
// when one is used, else the user (DECISIONS.md, REST conventions).
func rateKey(p *authn.Principal) string {
	if p.APIKeyID != "" {
		return "gps:key:" + p.APIKeyID
	}
	if p.UserID == "" && p.OAuthClientID != "" { // a client credentials token
		return "gps:client:" + p.OAuthClientID
	}
	return "gps:user:" + p.UserID
}

// CreatePoint records a GPS point. A point of a device that has an active
// trip with GPS logging is linked to that trip in the same statement, so a
// status change racing the insert sees either the linked point or none.
func (s *Service) CreatePoint(ctx context.Context, p *authn.Principal, in PointInput) (Point, error) {
	if err := in.validate(s.Clock.Now()); err != nil {
		return Point{}, err
	}
	device := in.DeviceID
	if device == nil && p != nil && p.APIKeyID != "" {
		// A key linked to a device records for that device when the body names none.
		var id string
		err := s.DB.QueryRowContext(ctx, `SELECT id FROM devices WHERE api_key_id = $1`, p.APIKeyID).Scan(&id)
		if err == nil {
			device = &id
		} else if !errors.Is(err, sql.ErrNoRows) {
			return Point{}, err
		}
	}
	now := db.FromTS(db.TS(s.Clock.Now()))
	pt := Point{
		ID: db.NewID(), DeviceID: device, Latitude: *in.Latitude, Longitude: *in.Longitude, Altitude: *in.Altitude,
		Heading: *in.Heading, Timestamp: time.Unix(*in.Timestamp, 0).UTC(), SpeedKmh: *in.SpeedKmh, SpeedMps: *in.SpeedMps,
		SpeedMph: *in.SpeedMph, SpeedKnots: *in.SpeedKnots, PDOP: in.PDOP, HDOP: in.HDOP, VDOP: in.VDOP,
		CreatedAt: now,
	}
	err := s.ingest(ctx, &pt)
	if err != nil && db.IsForeignKeyViolation(err) {
		return Point{}, apperr.Invalid("device_id %s does not exist", *device)
	}
	if err != nil {
		return Point{}, err
	}
	if device != nil {
		events.Publish(ctx, s.Events, events.GPSDevice(*device), pt)
	}
	return pt, nil
}

// The ingestion statements, prepared once on the writer: parsing the SQL
// costs more than running it on SQLite, and GPS ingestion is the hot write path.
const (
	insertPointSQL = `INSERT INTO gps_points (` + pointCols + `) VALUES ($1, $2,
		(SELECT t.id FROM trips t WHERE t.device_id = $2 AND t.status = 'active' AND t.gps_logging_enabled = TRUE LIMIT 1),
		$3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING trip_id`
	countPointSQL  = `UPDATE gps_point_count SET n = n + $1 WHERE slot = $2`
	bucketPointSQL = `INSERT INTO gps_point_buckets (bucket, slot, n) VALUES ($1, $2, $3)
		ON CONFLICT (bucket, slot) DO UPDATE SET n = gps_point_buckets.n + excluded.n`
	// bucketMicros is the width of a bucket: one hour of timestamps.
	bucketMicros = int64(time.Hour / time.Microsecond)
)

// bucketOf returns the hour bucket of a timestamp column value.
func bucketOf(tsMicros int64) int64 { return tsMicros / bucketMicros }

// countPoint adds delta to the total and to the point's hour bucket.
func countPoint(ctx context.Context, tx *db.Tx, count, bucket *db.WriteStmt, id string, tsMicros, delta int64) error {
	slot := countSlot(id)
	if _, err := tx.Stmt(ctx, count).ExecContext(ctx, delta, slot); err != nil {
		return err
	}
	_, err := tx.Stmt(ctx, bucket).ExecContext(ctx, bucketOf(tsMicros), slot, delta)
	return err
}

func (s *Service) ingestStmts(ctx context.Context) (ins, count, bucket *db.WriteStmt, err error) {
	s.prep.Lock()
	defer s.prep.Unlock()
	for _, p := range []struct {
		dst **db.WriteStmt
		sql string
	}{{&s.prep.insert, insertPointSQL}, {&s.prep.count, countPointSQL}, {&s.prep.bucket, bucketPointSQL}} {
		if *p.dst == nil {
			if *p.dst, err = s.DB.PrepareWrite(ctx, p.sql); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	return s.prep.insert, s.prep.count, s.prep.bucket, nil
}

// insertPoint writes a point and its counts in one transaction.
func (s *Service) insertPoint(ctx context.Context, pt *Point) error {
	ins, count, bucket, err := s.ingestStmts(ctx)
	if err != nil {
		return err
	}
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		var trip sql.NullString
		if err := tx.Stmt(ctx, ins).QueryRowContext(ctx, pointArgs(pt)...).Scan(&trip); err != nil {
			return err
		}
		pt.TripID = db.StringPtr(trip)
		return countPoint(ctx, tx, count, bucket, pt.ID, db.TS(pt.Timestamp), 1)
	})
}

func pointArgs(pt *Point) []any {
	return []any{pt.ID, nullS(pt.DeviceID), pt.Latitude, pt.Longitude, pt.Altitude, pt.Heading, db.TS(pt.Timestamp),
		pt.SpeedKmh, pt.SpeedMps, pt.SpeedMph, pt.SpeedKnots, nullF(pt.PDOP), nullF(pt.HDOP), nullF(pt.VDOP), db.TS(pt.CreatedAt)}
}

// countSlot spreads counter updates over the slots by point id.
func countSlot(id string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % countSlots)
}

// newer reports whether a is later than b in the newest-first order (timestamp, then id).
func newer(a, b Point) bool {
	if !a.Timestamp.Equal(b.Timestamp) {
		return a.Timestamp.After(b.Timestamp)
	}
	return a.ID > b.ID
}

// refreshCurrent replaces the cached latest points (globally and per device)
// with the newest of pts where that is newer. It runs once per written batch,
// so a batch costs one read and one write of the cache however many points it
// holds. An absent entry is left absent: the next read loads the true latest
// point from the database, which a late point with an old timestamp could not
// be. Cache failures only make the next read go to the database.
func (s *Service) refreshCurrent(ctx context.Context, pts []*Point) {
	newest := map[string]*Point{}
	consider := func(k string, p *Point) {
		if cur, ok := newest[k]; !ok || newer(*p, *cur) {
			newest[k] = p
		}
	}
	for _, p := range pts {
		consider(currentKey, p)
		if p.DeviceID != nil {
			consider(currentDeviceKey(*p.DeviceID), p)
		}
	}
	keys := make([]string, 0, len(newest))
	for k := range newest {
		keys = append(keys, k)
	}
	cached, err := s.Cache.GetMany(ctx, keys)
	if err != nil {
		return
	}
	set := map[string][]byte{}
	for i, k := range keys {
		if cached[i] == nil {
			continue
		}
		var cur Point
		if json.Unmarshal(cached[i], &cur) == nil && !newer(*newest[k], cur) {
			continue
		}
		if raw, err := json.Marshal(newest[k]); err == nil {
			set[k] = raw
		}
	}
	_ = s.Cache.SetMany(ctx, set, CurrentTTL)
}

// forgetCurrent drops cached latest points that may show a deleted or changed point.
func (s *Service) forgetCurrent(ctx context.Context, deviceID *string) {
	keys := []string{currentKey}
	if deviceID != nil {
		keys = append(keys, currentDeviceKey(*deviceID))
	}
	_ = s.Cache.Delete(ctx, keys...)
}

// Current returns the latest point, of one device when deviceID is set,
// from the cache when it holds one (at most CurrentTTL old).
func (s *Service) Current(ctx context.Context, deviceID *string) (Point, error) {
	raw, err := s.currentJSON(ctx, deviceID)
	if err != nil {
		return Point{}, err
	}
	var p Point
	err = json.Unmarshal(raw, &p)
	return p, err
}

// currentJSON is Current as the point's JSON encoding, which is what the
// cache holds: GET /v1/gps/current serves it without decoding and encoding
// the point again.
func (s *Service) currentJSON(ctx context.Context, deviceID *string) (json.RawMessage, error) {
	key := currentKey
	where, args := "", []any{}
	if deviceID != nil {
		key = currentDeviceKey(*deviceID)
		where, args = " WHERE device_id = $1", []any{*deviceID}
	}
	if b, err := s.Cache.Get(ctx, key); err == nil {
		if json.Valid(b) {
			return b, nil
		}
	} else if !errors.Is(err, cache.ErrMiss) {
		return nil, err
	}
	p, err := scanPoint(s.DB.QueryRowContext(ctx, `SELECT `+pointCols+` FROM gps_points`+where+` ORDER BY ts DESC, id DESC LIMIT 1`, args...))
	if err != nil {
		return nil, db.NotFoundOr(err, "GPS point")
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	_ = s.Cache.Set(ctx, key, raw, CurrentTTL)
	return raw, nil
}

// ListPoints returns one page of points, newest first, and the total.
//
// The total is the sum of the maintained counter, not a COUNT over every
// point. The page is found without skipping OFFSET rows from the top: the
// hour buckets are walked from the newest to find the hour in which the page
// starts, and only the points of that hour before the page are skipped, on
// the (ts, id) index alone; the rows of the page are then read by id.
func (s *Service) ListPoints(ctx context.Context, pg httpx.Page) ([]Point, int, error) {
	var total int64
	if err := s.DB.QueryRowContext(ctx, `SELECT COALESCE(SUM(n), 0) FROM gps_point_count`).Scan(&total); err != nil {
		return nil, 0, err
	}
	offset := int64(pg.Offset())
	if offset >= total {
		return []Point{}, int(total), nil
	}
	upper, skip, err := s.pageStart(ctx, offset)
	if err != nil {
		return nil, 0, err
	}
	pts, err := db.All(ctx, s.DB, scanPoint, `SELECT `+pointCols+` FROM gps_points WHERE id IN
		(SELECT id FROM gps_points WHERE ts < $1 ORDER BY ts DESC, id DESC LIMIT $2 OFFSET $3) ORDER BY ts DESC, id DESC`, upper, pg.Limit, skip)
	return pts, int(total), err
}

// pageStart finds where the point at offset (newest first) lies: the end of
// its hour bucket (an exclusive ts bound) and how many points of that hour
// come before it.
func (s *Service) pageStart(ctx context.Context, offset int64) (upper, skip int64, err error) {
	if offset == 0 {
		return math.MaxInt64, 0, nil
	}
	rows, err := s.DB.QueryContext(ctx, `SELECT bucket, n FROM gps_point_buckets ORDER BY bucket DESC`)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	var before, cur, inCur int64 // points in newer hours; the hour being summed and its points
	cur = -1
	for rows.Next() {
		var b, n int64
		if err := rows.Scan(&b, &n); err != nil {
			return 0, 0, err
		}
		if b != cur {
			if cur >= 0 && before+inCur > offset {
				break
			}
			before += inCur
			cur, inCur = b, 0
		}
		inCur += n
	}
	if err := rows.Err(); err != nil {
		return 0, 0, err
	}
	if cur < 0 || before+inCur <= offset {
		// The buckets disagree with the total (a write raced this read):
		// fall back to skipping from the top.
		return math.MaxInt64, offset, nil
	}
	return (cur + 1) * bucketMicros, offset - before, nil
}

// ListGPS serves GET /v1/gps.
func (h *Handler) ListGPS(w http.ResponseWriter, r *http.Request) {
	pg := httpx.ParsePage(r, 10)
	pts, total, err := h.S.ListPoints(r.Context(), pg)
	httpx.RespondList(w, r, pts, pg, total, err)
}

// CurrentGPS serves GET /v1/gps/current with optional device_id.
func (h *Handler) CurrentGPS(w http.ResponseWriter, r *http.Request) {
	var device *string
	if v := r.URL.Query().Get("device_id"); v != "" {
		id, err := parseUUID("device_id", v)
		if err != nil {
			httpx.Error(w, r, err)
			return
		}
		device = &id
	}
	p, err := h.S.currentJSON(r.Context(), device)
	httpx.Respond(w, r, http.StatusOK, p, err)
}

// CurrentByDevice serves GET /v1/gps/current/devices: the latest point of
// every device that has one, newest first, as a bare array.
func (h *Handler) CurrentByDevice(w http.ResponseWriter, r *http.Request) {
	pts, err := db.All(r.Context(), h.S.DB, scanPoint, `SELECT `+pointCols+` FROM gps_points g WHERE g.id IN
		(SELECT (SELECT p.id FROM gps_points p WHERE p.device_id = d.id ORDER BY p.ts DESC, p.id DESC LIMIT 1) FROM devices d)
		ORDER BY g.ts DESC, g.id DESC`)
	httpx.RespondJSON(w, r, http.StatusOK, pts, err)
}

// GetGPS serves GET /v1/gps/{id}.
func (h *Handler) GetGPS(w http.ResponseWriter, r *http.Request) {
	getByID(w, r, h.S.DB, getPoint)
}

func getPoint(ctx context.Context, q db.Querier, id string) (Point, error) {
	p, err := scanPoint(q.QueryRowContext(ctx, `SELECT `+pointCols+` FROM gps_points WHERE id = $1`, id))
	return p, db.NotFoundOr(err, "GPS point")
}

// CreateGPS serves POST /v1/gps: rate limited per principal to at most
// GPSRateLimit posts in any GPSRateWindow (spec 3, Limits, read literally: a
// sliding window, not a burst that refills), with the RateLimit-* headers on
// every answer and Retry-After on 429 (when the oldest counted post leaves
// the window).
func (h *Handler) CreateGPS(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	d, err := h.S.Limiter.AllowWindow(ctx, rateKey(p), cache.Window{Max: GPSRateLimit, Size: GPSRateWindow})
	if err != nil {
		httpx.Error(w, r, apperr.Unavailablef("the rate limiter is unavailable"))
		return
	}
	httpx.SetRateLimit(w, d.Limit, d.Remaining, d.Reset)
	if !d.Allowed {
		httpx.Error(w, r, apperr.RateLimited(d.RetryAfter, "at most %d GPS points per %s; retry later", GPSRateLimit, GPSRateWindow))
		return
	}
	var in PointInput
	if !httpx.Bind(w, r, &in) {
		return
	}
	pt, err := h.S.CreatePoint(ctx, p, in)
	httpx.RespondAt(w, r, http.StatusCreated, pt, "/v1/gps/"+pt.ID, err)
}

// DeleteGPS serves DELETE /v1/gps/{id}; a point linked to a trip answers 409.
func (h *Handler) DeleteGPS(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := pathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	_, count, bucket, err := h.S.ingestStmts(ctx)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	var device sql.NullString
	err = h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		var trip sql.NullString
		var ts int64
		if err := tx.QueryRowContext(ctx, `SELECT device_id, trip_id, ts FROM gps_points WHERE id = $1`, id).Scan(&device, &trip, &ts); err != nil {
			return db.NotFoundOr(err, "GPS point")
		}
		if trip.Valid {
			return apperr.Conflictf("the GPS point is linked to trip %s", trip.String)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM gps_points WHERE id = $1 AND trip_id IS NULL`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apperr.Conflictf("the GPS point was linked to a trip or deleted meanwhile")
		}
		return countPoint(ctx, tx, count, bucket, id, ts, -1)
	})
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	h.S.forgetCurrent(ctx, db.StringPtr(device))
	httpx.NoContent(w)
}
