package store

import (
	"context"
	"database/sql"
	"time"

	"hmid/internal/db"
)

// DeviceAuthorization is a new device authorization (RFC 8628 §3.2) as
// StartDevice stores it: its two codes hashed.
type DeviceAuthorization struct {
	ID             string
	DeviceCodeHash string
	UserCodeHash   string
	ClientID       string
	Scopes         []string
	// Resources are the resource indicators the request named (RFC 8707
	// §2): the most the tokens issued for it may be for. nil: none.
	Resources []string
	Interval  time.Duration // the polling interval it starts with
	Created   time.Time
	Expires   time.Time
}

// StartDevice stores d. A user code hash that is taken already is a unique
// violation (db.IsUniqueViolation): the caller draws another code.
func (s *Store) StartDevice(ctx context.Context, d DeviceAuthorization) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO oauth_device_authorizations (id, device_code_hash, user_code_hash, client_id, scopes,
			resources, interval_seconds, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
		d.ID, d.DeviceCodeHash, d.UserCodeHash, d.ClientID, db.JSON(d.Scopes), resourcesColumn(d.Resources), int(d.Interval/time.Second),
		db.TS(d.Created), db.TS(d.Expires))
	return err
}

// devicePollSQL records a poll and returns the authorization's state, in
// one statement. A poll of a pending authorization that comes before the
// interval has passed since the previous poll is slowed (RFC 8628 §3.5),
// and the interval grows by the step; SET reads the values before the
// update, RETURNING those after. $1 is the device code hash, $2 now, $3
// the grace in microseconds, $4 the step in seconds, $5 the longest
// interval in seconds.
const devicePollSQL = `UPDATE oauth_device_authorizations SET
	slowed = (status = 'pending' AND last_polled_at IS NOT NULL AND $2 < last_polled_at + CAST(interval_seconds AS BIGINT) * 1000000 - $3),
	interval_seconds = interval_seconds + CASE WHEN status = 'pending' AND last_polled_at IS NOT NULL AND interval_seconds < $5
		AND $2 < last_polled_at + CAST(interval_seconds AS BIGINT) * 1000000 - $3 THEN $4 ELSE 0 END,
	last_polled_at = $2
	WHERE device_code_hash = $1
	RETURNING id, client_id, status, expires_at, slowed, user_id, scopes, auth_time, auth_context`

// DevicePoll is one poll of a device authorization: its rules of pace
// (RFC 8628 §3.5).
type DevicePoll struct {
	DeviceCodeHash string
	Now            time.Time
	// Grace is how much earlier than the interval a poll may come without
	// counting as too fast; each slowed poll adds Step to the interval, up
	// to MaxInterval.
	Grace, Step, MaxInterval time.Duration
}

// DeviceState is a device authorization as one poll found it.
type DeviceState struct {
	ID, ClientID string
	Status       string // pending, approved, denied or redeemed
	Expires      time.Time
	Slowed       bool // this poll came too fast
	// UserID, AuthTime and Context are the approver's, once decided.
	UserID   string
	Scopes   []string
	AuthTime time.Time
	Context  string
}

// PollDevice records the poll p and returns the authorization's state
// after it; an unknown device code is ErrNotFound.
func (s *Store) PollDevice(ctx context.Context, p DevicePoll) (DeviceState, error) {
	var (
		d        DeviceState
		expires  int64
		user     sql.NullString
		scopes   db.Strings
		authTime sql.NullInt64
	)
	err := s.db.QueryRowContext(ctx, devicePollSQL, p.DeviceCodeHash, db.TS(p.Now), p.Grace.Microseconds(), int(p.Step/time.Second),
		int(p.MaxInterval/time.Second)).
		Scan(&d.ID, &d.ClientID, &d.Status, &expires, &d.Slowed, &user, &scopes, &authTime, &d.Context)
	d.Expires, d.UserID, d.Scopes, d.AuthTime = db.FromTS(expires), user.String, scopes, db.FromTS(authTime.Int64)
	return d, err
}

// RedeemDevice marks the approved device authorization id redeemed, in tx,
// once: of racing polls exactly one gets true.
func (s *Store) RedeemDevice(ctx context.Context, tx db.Querier, id string) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE oauth_device_authorizations SET status = 'redeemed' WHERE id = $1 AND status = 'approved'`, id)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// PendingDevice is a device authorization waiting for a person's decision.
type PendingDevice struct {
	ID, ClientID string
	Scopes       []string
	Resources    []string // the request's resource indicators; nil: none
	Expires      time.Time
}

// PendingDevice finds the pending device authorization of a user code by
// its hash, unexpired at now; ErrNotFound otherwise.
func (s *Store) PendingDevice(ctx context.Context, userCodeHash string, now time.Time) (PendingDevice, error) {
	var d PendingDevice
	var scopes db.Strings
	var expires int64
	var resources *string
	err := s.db.QueryRowContext(ctx, `SELECT id, client_id, scopes, resources, expires_at FROM oauth_device_authorizations
		WHERE user_code_hash = $1 AND status = 'pending' AND expires_at > $2`, userCodeHash, db.TS(now)).
		Scan(&d.ID, &d.ClientID, &scopes, &resources, &expires)
	if err != nil {
		return d, err
	}
	d.Scopes, d.Expires, d.Resources = scopes, db.FromTS(expires), DecodeResources(resources)
	return d, nil
}

// DeviceDecision is a person's approval or denial of a device authorization.
type DeviceDecision struct {
	ID       string
	Approved bool
	UserID   string
	AuthTime time.Time
	Context  string // the approver's authentication context, as JSON
	Now      time.Time
}

// DecideDevice records d, in tx, once: it reports false when the
// authorization was decided meanwhile or has expired.
func (s *Store) DecideDevice(ctx context.Context, tx db.Querier, d DeviceDecision) (bool, error) {
	status := "denied"
	if d.Approved {
		status = "approved"
	}
	res, err := tx.ExecContext(ctx, `UPDATE oauth_device_authorizations SET status = $1, user_id = $2, auth_time = $3, auth_context = $4, decided_at = $5
			WHERE id = $6 AND status = 'pending' AND expires_at > $5`,
		status, d.UserID, db.TS(d.AuthTime), d.Context, db.TS(d.Now), d.ID)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}
