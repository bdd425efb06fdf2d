package tracking

import (
	"cmp"
	"context"
	"database/sql"
	"slices"
	"sync"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/db"
)

// maxBatch bounds how many GPS points one transaction writes.
const maxBatch = 128

// ingester is a group commit for GPS points: concurrent requests hand their
// point to one writer goroutine, which writes whatever has queued up in one
// transaction and answers each request after the commit. A commit (an fsync
// on PostgreSQL, the single writer connection on SQLite) is then shared by
// many points instead of paid by each, and nothing is acknowledged before it
// is durable.
type ingester struct {
	start, closing sync.Once
	reqs           chan ingestReq
	stop           chan struct{} // closed by Close
	stopped        chan struct{} // closed when the writer has drained and exited
}

type ingestReq struct {
	pt   *Point
	done chan error
}

func (s *Service) startIngest() {
	s.ing.reqs = make(chan ingestReq, 4*maxBatch)
	s.ing.stop = make(chan struct{})
	s.ing.stopped = make(chan struct{})
	go s.ingestLoop()
}

// Close stops the GPS writer after writing the points already handed to it.
func (s *Service) Close() error {
	s.ing.start.Do(s.startIngest)
	s.ing.closing.Do(func() { close(s.ing.stop) })
	<-s.ing.stopped
	return nil
}

// ingest writes pt through the group commit, setting pt.TripID.
func (s *Service) ingest(ctx context.Context, pt *Point) error {
	s.ing.start.Do(s.startIngest)
	req := ingestReq{pt: pt, done: make(chan error, 1)}
	select {
	case s.ing.reqs <- req:
	case <-s.ing.stop:
		return apperr.Unavailablef("the server is shutting down")
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.ing.stopped:
		select {
		case err := <-req.done:
			return err
		default:
			return apperr.Unavailablef("the server is shutting down")
		}
	}
}

func (s *Service) ingestLoop() {
	defer close(s.ing.stopped)
	batch := make([]ingestReq, 0, maxBatch)
	for {
		select {
		case r := <-s.ing.reqs:
			batch = append(batch[:0], r)
		case <-s.ing.stop:
			// Write what is still queued, then exit.
			for {
				select {
				case r := <-s.ing.reqs:
					s.writeBatch([]ingestReq{r})
				default:
					return
				}
			}
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case r := <-s.ing.reqs:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		s.writeBatch(batch)
	}
}

// writeBatch writes a batch in one transaction. When that fails (one point
// names an unknown device, say), every point is written on its own so each
// request gets its own answer.
func (s *Service) writeBatch(batch []ingestReq) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if len(batch) > 1 {
		// One lock order for the counter rows in every batch, so concurrent
		// batches (several instances) cannot deadlock on them.
		slices.SortFunc(batch, func(a, b ingestReq) int {
			return cmp.Or(cmp.Compare(countSlot(a.pt.ID), countSlot(b.pt.ID)),
				cmp.Compare(bucketOf(db.TS(a.pt.Timestamp)), bucketOf(db.TS(b.pt.Timestamp))))
		})
		if err := s.insertBatch(ctx, batch); err == nil {
			pts := make([]*Point, len(batch))
			for i, r := range batch {
				pts[i] = r.pt
			}
			s.refreshCurrent(ctx, pts)
			for _, r := range batch {
				r.done <- nil
			}
			return
		}
	}
	for _, r := range batch {
		r.pt.TripID = nil
		var err error
		if s.DB.Flavor == db.Postgres {
			err = s.insertBatchPG(ctx, []ingestReq{r})
		} else {
			err = s.insertPoint(ctx, r.pt)
		}
		if err == nil {
			s.refreshCurrent(ctx, []*Point{r.pt})
		}
		r.done <- err
	}
}

func (s *Service) insertBatch(ctx context.Context, batch []ingestReq) error {
	if s.DB.Flavor == db.Postgres {
		return s.insertBatchPG(ctx, batch)
	}
	ins, count, bucket, err := s.ingestStmts(ctx)
	if err != nil {
		return err
	}
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		insert := tx.Stmt(ctx, ins)
		for _, r := range batch {
			var trip sql.NullString
			if err := insert.QueryRowContext(ctx, pointArgs(r.pt)...).Scan(&trip); err != nil {
				return err
			}
			r.pt.TripID = db.StringPtr(trip)
			if err := countPoint(ctx, tx, count, bucket, r.pt.ID, db.TS(r.pt.Timestamp), 1); err != nil {
				return err
			}
		}
		return nil
	})
}

// insertBatchPGSQL writes a whole batch on PostgreSQL in one statement and
// one round trip: the points come as parallel arrays, each linked to its
// device's GPS-logging trip as in insertPointSQL, and the counters get one
// update per slot and hour instead of one per point. The statement is one
// snapshot, so the trip lookup sees the same trips for every point.
const insertBatchPGSQL = `WITH v AS (
		SELECT * FROM unnest($1::text[], $2::text[], $3::float8[], $4::float8[], $5::float8[], $6::float8[], $7::bigint[],
			$8::float8[], $9::float8[], $10::float8[], $11::float8[], $12::float8[], $13::float8[], $14::float8[], $15::bigint[])
			AS v(id, device_id, latitude, longitude, altitude, heading, ts, speed_kmh, speed_mps, speed_mph, speed_knots, pdop, hdop, vdop, created_at)
	), p AS (
		INSERT INTO gps_points (` + pointCols + `)
		SELECT v.id, v.device_id,
			(SELECT t.id FROM trips t WHERE t.device_id = v.device_id AND t.status = 'active' AND t.gps_logging_enabled = TRUE LIMIT 1),
			v.latitude, v.longitude, v.altitude, v.heading, v.ts, v.speed_kmh, v.speed_mps, v.speed_mph, v.speed_knots, v.pdop, v.hdop, v.vdop, v.created_at
		FROM v
		RETURNING id, trip_id
	), c AS (
		UPDATE gps_point_count SET n = gps_point_count.n + d.n
		FROM unnest($16::int[], $17::bigint[]) AS d(slot, n) WHERE gps_point_count.slot = d.slot
	), b AS (
		INSERT INTO gps_point_buckets (bucket, slot, n)
		SELECT * FROM unnest($18::bigint[], $19::int[], $20::bigint[])
		ON CONFLICT (bucket, slot) DO UPDATE SET n = gps_point_buckets.n + excluded.n
	)
	SELECT id, trip_id FROM p`

// insertBatchPG runs insertBatchPGSQL for batch and sets each point's trip.
// Should two instances' batches deadlock on the counter rows, PostgreSQL
// aborts one and writeBatch writes its points one by one.
func (s *Service) insertBatchPG(ctx context.Context, batch []ingestReq) error {
	n := len(batch)
	var (
		ids, devices                      = make([]string, n), make([]*string, n)
		lat, lon, alt, heading            = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		kmh, mps, mph, knots              = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		pdop, hdop, vdop                  = make([]*float64, n), make([]*float64, n), make([]*float64, n)
		ts, created                       = make([]int64, n), make([]int64, n)
		slotN                             = map[int]int64{}
		bucketN                           = map[[2]int64]int64{}
		byID                              = make(map[string]*Point, n)
		cSlots, cN, bBuckets, bSlots, bNs []int64
	)
	for i, r := range batch {
		pt := r.pt
		ids[i], devices[i] = pt.ID, pt.DeviceID
		lat[i], lon[i], alt[i], heading[i] = pt.Latitude, pt.Longitude, pt.Altitude, pt.Heading
		kmh[i], mps[i], mph[i], knots[i] = pt.SpeedKmh, pt.SpeedMps, pt.SpeedMph, pt.SpeedKnots
		pdop[i], hdop[i], vdop[i] = pt.PDOP, pt.HDOP, pt.VDOP
		ts[i], created[i] = db.TS(pt.Timestamp), db.TS(pt.CreatedAt)
		slot := countSlot(pt.ID)
		slotN[slot]++
		bucketN[[2]int64{bucketOf(ts[i]), int64(slot)}]++
		byID[pt.ID] = pt
	}
	for slot, k := range slotN {
		cSlots, cN = append(cSlots, int64(slot)), append(cN, k)
	}
	for bs, k := range bucketN {
		bBuckets, bSlots, bNs = append(bBuckets, bs[0]), append(bSlots, bs[1]), append(bNs, k)
	}
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		rows, err := tx.QueryContext(ctx, insertBatchPGSQL, ids, devices, lat, lon, alt, heading, ts,
			kmh, mps, mph, knots, pdop, hdop, vdop, created, cSlots, cN, bBuckets, bSlots, bNs)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var trip sql.NullString
			if err := rows.Scan(&id, &trip); err != nil {
				return err
			}
			if pt := byID[id]; pt != nil {
				pt.TripID = db.StringPtr(trip)
			}
		}
		return rows.Err()
	})
}
