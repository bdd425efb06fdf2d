package store

import (
	"context"
	"database/sql"
	"time"

	"hmid/internal/db"
)

// SigningKey is a stored asymmetric signing key: its private key sealed
// with the server key.
type SigningKey struct {
	Kid        string
	Alg        string
	Generation int64 // 1, 2, … per algorithm; the highest signs
	Sealed     string
	Created    time.Time
	Activated  time.Time
	Retired    time.Time // zero while it is the signing key of its algorithm
}

// SigningKeys returns every stored key, newest generation first per
// algorithm.
func (s *Store) SigningKeys(ctx context.Context) ([]SigningKey, error) {
	return db.All(ctx, s.db, func(row db.Scanner) (SigningKey, error) {
		var k SigningKey
		var created, activated int64
		var retired sql.NullInt64
		err := row.Scan(&k.Kid, &k.Alg, &k.Generation, &k.Sealed, &created, &activated, &retired)
		k.Created, k.Activated = db.FromTS(created), db.FromTS(activated)
		if retired.Valid {
			k.Retired = db.FromTS(retired.Int64)
		}
		return k, err
	}, `SELECT kid, alg, generation, private_key, created_at, activated_at, retired_at FROM oauth_signing_keys ORDER BY alg, generation DESC`)
}

// InsertSigningKey stores k (kid, alg, generation and sealed key), created
// and activated now. It reports false when that generation of the
// algorithm exists already: another instance stored it first, and its key
// is the one everyone uses.
func (s *Store) InsertSigningKey(ctx context.Context, k SigningKey, now time.Time) (bool, error) {
	return s.insertSigningKey(ctx, s.db, k, now)
}

func (s *Store) insertSigningKey(ctx context.Context, q db.Querier, k SigningKey, now time.Time) (bool, error) {
	res, err := q.ExecContext(ctx, `INSERT INTO oauth_signing_keys (kid, alg, generation, private_key, created_at, activated_at) VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT DO NOTHING`,
		k.Kid, k.Alg, k.Generation, k.Sealed, db.TS(now))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RotateSigningKey stores k as the signing key of its algorithm and retires
// the older generations, in one transaction. It reports false, changing
// nothing, when k's generation exists already: another rotation won.
func (s *Store) RotateSigningKey(ctx context.Context, k SigningKey, now time.Time) (bool, error) {
	won := false
	err := s.db.Tx(ctx, func(tx *db.Tx) error {
		var err error
		if won, err = s.insertSigningKey(ctx, tx, k, now); err != nil || !won {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE oauth_signing_keys SET retired_at = $1 WHERE alg = $2 AND generation < $3 AND retired_at IS NULL`,
			db.TS(now), k.Alg, k.Generation)
		return err
	})
	return won && err == nil, err
}

// DeleteRetiredSigningKeys deletes the keys retired at or before cutoff and
// reports how many.
func (s *Store) DeleteRetiredSigningKeys(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM oauth_signing_keys WHERE retired_at IS NOT NULL AND retired_at <= $1`, db.TS(cutoff))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
