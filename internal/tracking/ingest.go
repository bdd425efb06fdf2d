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
			for _, r := range batch {
				r.done <- nil
			}
			return
		}
	}
	for _, r := range batch {
		r.pt.TripID = nil
		if s.DB.Flavor == db.Postgres {
			r.done <- s.insertPointPG(ctx, r.pt)
		} else {
			r.done <- s.insertPoint(ctx, r.pt)
		}
	}
}

func (s *Service) insertBatch(ctx context.Context, batch []ingestReq) error {
	if s.DB.Flavor == db.Postgres {
		return s.DB.Tx(ctx, func(tx *sql.Tx) error {
			for _, r := range batch {
				var trip sql.NullString
				if err := tx.QueryRowContext(ctx, insertPointPGSQL, pgArgs(r.pt)...).Scan(&trip); err != nil {
					return err
				}
				r.pt.TripID = sptr(trip)
			}
			return nil
		})
	}
	ins, count, bucket, err := s.ingestStmts(ctx)
	if err != nil {
		return err
	}
	return s.DB.Tx(ctx, func(tx *sql.Tx) error {
		insert := tx.StmtContext(ctx, ins)
		for _, r := range batch {
			var trip sql.NullString
			if err := insert.QueryRowContext(ctx, pointArgs(r.pt)...).Scan(&trip); err != nil {
				return err
			}
			r.pt.TripID = sptr(trip)
			if err := countPoint(ctx, tx, count, bucket, r.pt.ID, db.TS(r.pt.Timestamp), 1); err != nil {
				return err
			}
		}
		return nil
	})
}
