package tracking

import (
	"context"
	"database/sql"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/events"
	"hmid/internal/httpx"
)

// Trip statuses (spec 3, States and transitions).
const (
	StatusDraft     = "draft"
	StatusActive    = "active"
	StatusPaused    = "paused"
	StatusCompleted = "completed"
)

// Transitions is the trip status table: every move not listed, including
// staying in the same status, is a 400.
var Transitions = map[string][]string{
	StatusDraft:  {StatusActive},
	StatusActive: {StatusPaused, StatusCompleted},
	StatusPaused: {StatusActive, StatusCompleted},
}

// CanMove reports whether a trip may move from one status to another.
func CanMove(from, to string) bool { return slices.Contains(Transitions[from], to) }

func validStatus(s string) bool {
	return s == StatusDraft || s == StatusActive || s == StatusPaused || s == StatusCompleted
}

// Trip is a trip.
type Trip struct {
	ID                string     `json:"id"`
	Name              string     `json:"name"`
	Description       string     `json:"description"`
	Status            string     `json:"status"`
	GPSLoggingEnabled bool       `json:"gps_logging_enabled"`
	DeviceID          *string    `json:"device_id"`
	CategoryID        *string    `json:"category_id"`
	OriginID          *string    `json:"origin_id"`
	DestinationID     *string    `json:"destination_id"`
	WeightKg          *float64   `json:"weight_kg"`
	Notes             string     `json:"notes"`
	Tags              []string   `json:"tags"`
	StartLatitude     *float64   `json:"start_latitude"`
	StartLongitude    *float64   `json:"start_longitude"`
	EndLatitude       *float64   `json:"end_latitude"`
	EndLongitude      *float64   `json:"end_longitude"`
	StartedAt         *time.Time `json:"started_at"`
	EndedAt           *time.Time `json:"ended_at"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"`
}

const tripCols = `id, name, description, status, gps_logging_enabled, device_id, category_id, origin_id, destination_id, weight_kg, notes, tags,
	start_latitude, start_longitude, end_latitude, end_longitude, started_at, ended_at, created_at, updated_at`

func scanTrip(row db.Scanner) (Trip, error) {
	var t Trip
	var dev, cat, orig, dest sql.NullString
	var w, sla, slo, ela, elo sql.NullFloat64
	var tg db.Strings
	var st, en db.NullTime
	var c, u int64
	err := row.Scan(&t.ID, &t.Name, &t.Description, &t.Status, &t.GPSLoggingEnabled, &dev, &cat, &orig, &dest, &w, &t.Notes, &tg,
		&sla, &slo, &ela, &elo, &st, &en, &c, &u)
	t.DeviceID, t.CategoryID, t.OriginID, t.DestinationID = db.StringPtr(dev), db.StringPtr(cat), db.StringPtr(orig), db.StringPtr(dest)
	t.WeightKg = fptr(w)
	t.Tags = tags(tg)
	t.StartLatitude, t.StartLongitude, t.EndLatitude, t.EndLongitude = fptr(sla), fptr(slo), fptr(ela), fptr(elo)
	t.StartedAt, t.EndedAt = st.Ptr(), en.Ptr()
	t.CreatedAt, t.UpdatedAt = db.FromTS(c), db.FromTS(u)
	return t, err
}

func getTrip(ctx context.Context, q db.Querier, id string) (Trip, error) {
	t, err := scanTrip(q.QueryRowContext(ctx, `SELECT `+tripCols+` FROM trips WHERE id = $1`, id))
	return t, db.NotFoundOr(err, "trip")
}

// HistoryEntry is one trip status change.
type HistoryEntry struct {
	ID        string    `json:"id"`
	TripID    string    `json:"trip_id"`
	OldStatus string    `json:"old_status"`
	NewStatus string    `json:"new_status"`
	ChangedBy *string   `json:"changed_by"`
	Latitude  *float64  `json:"latitude"`
	Longitude *float64  `json:"longitude"`
	ChangedAt time.Time `json:"changed_at"`
}

// tripBody is the body of POST and PATCH /v1/trips. Its first fields are
// those of templateBody; they stay spelled out because an embedded struct
// would change the field paths in JSON decoding errors.
type tripBody struct {
	Name              httpx.Opt[string]   `json:"name"`
	Description       httpx.Opt[string]   `json:"description"`
	GPSLoggingEnabled httpx.Opt[bool]     `json:"gps_logging_enabled"`
	DeviceID          httpx.Opt[string]   `json:"device_id"`
	CategoryID        httpx.Opt[string]   `json:"category_id"`
	OriginID          httpx.Opt[string]   `json:"origin_id"`
	DestinationID     httpx.Opt[string]   `json:"destination_id"`
	WeightKg          httpx.Opt[float64]  `json:"weight_kg"`
	Notes             httpx.Opt[string]   `json:"notes"`
	Tags              httpx.Opt[[]string] `json:"tags"`

	// PATCH only.
	Status         httpx.Opt[string]  `json:"status"`
	StartLatitude  httpx.Opt[float64] `json:"start_latitude"`
	StartLongitude httpx.Opt[float64] `json:"start_longitude"`
	EndLatitude    httpx.Opt[float64] `json:"end_latitude"`
	EndLongitude   httpx.Opt[float64] `json:"end_longitude"`
	// Where the status change happened, recorded in the history only.
	Latitude  httpx.Opt[float64] `json:"latitude"`
	Longitude httpx.Opt[float64] `json:"longitude"`
}

// refs validates the reference fields present in the body and applies them to t.
func (b *tripBody) refs(ctx context.Context, q db.Querier, t *Trip) error {
	return setRefs(ctx, q, ref{"device_id", b.DeviceID, &t.DeviceID}, ref{"category_id", b.CategoryID, &t.CategoryID},
		ref{"origin_id", b.OriginID, &t.OriginID}, ref{"destination_id", b.DestinationID, &t.DestinationID})
}

// apply validates and applies the plain fields present in the body to t.
func (b *tripBody) apply(t *Trip) error {
	return applyPlan(
		planFields{name: b.Name, description: b.Description, gpsLogging: b.GPSLoggingEnabled, weightName: "weight_kg", weight: b.WeightKg, notes: b.Notes, tags: b.Tags},
		planTarget{name: &t.Name, description: &t.Description, gpsLogging: &t.GPSLoggingEnabled, weight: &t.WeightKg, notes: &t.Notes, tags: &t.Tags})
}

// cleanTags trims tags and drops empty ones and repeats, keeping their order.
// More than maxTags tags (repeats counted) or a tag over maxTagLen
// characters is a 400.
func cleanTags(in []string) ([]string, error) {
	if err := httpx.CheckItems("tags", len(in), maxTags); err != nil {
		return nil, err
	}
	out := []string{}
	for _, t := range in {
		t = strings.TrimSpace(t)
		if err := httpx.CheckLen("tags[]", t, maxTagLen); err != nil {
			return nil, err
		}
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

func insertTrip(ctx context.Context, tx *db.Tx, t Trip) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO trips (`+tripCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $19)`,
		t.ID, t.Name, t.Description, t.Status, t.GPSLoggingEnabled, nullS(t.DeviceID), nullS(t.CategoryID), nullS(t.OriginID), nullS(t.DestinationID),
		nullF(t.WeightKg), t.Notes, db.JSON(tags(t.Tags)), nullF(t.StartLatitude), nullF(t.StartLongitude), nullF(t.EndLatitude), nullF(t.EndLongitude),
		db.NullTS(t.StartedAt), db.NullTS(t.EndedAt), db.TS(t.CreatedAt))
	return err
}

// Trips lists one page of the trips, newest first, only those in status
// unless it is "", and the number of all of them (GET /v1/trips).
func (s *Service) Trips(ctx context.Context, status string, pg httpx.Page) ([]Trip, int, error) {
	where, args := "", []any{}
	if status != "" {
		if !validStatus(status) {
			return nil, 0, apperr.OnField("status", apperr.Invalid("status must be one of draft, active, paused, completed"))
		}
		where, args = " WHERE status = $1", []any{status}
	}
	var total int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM trips`+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	n := len(args)
	out, err := db.All(ctx, s.DB, scanTrip, `SELECT `+tripCols+` FROM trips`+where+` ORDER BY created_at DESC, id DESC LIMIT `+ph(n+1)+` OFFSET `+ph(n+2),
		append(args, pg.Limit, pg.Offset())...)
	return out, total, err
}

// ListTrips serves GET /v1/trips, newest first, optionally by status.
func (h *Handler) ListTrips(w http.ResponseWriter, r *http.Request) {
	pg := httpx.ParsePage(r, 20)
	out, total, err := h.S.Trips(r.Context(), r.URL.Query().Get("status"), pg)
	httpx.RespondList(w, r, out, pg, total, err)
}

// Trip returns the trip with id, which must be a UUID (GET /v1/trips/{id}).
func (s *Service) Trip(ctx context.Context, id string) (Trip, error) {
	id, err := parseUUID("id", id)
	if err != nil {
		return Trip{}, err
	}
	return getTrip(ctx, s.DB, id)
}

// GetTrip serves GET /v1/trips/{id}.
func (h *Handler) GetTrip(w http.ResponseWriter, r *http.Request) {
	t, err := h.S.Trip(r.Context(), chi.URLParam(r, "id"))
	httpx.Respond(w, r, http.StatusOK, t, err)
}

// CreateTrip serves POST /v1/trips: a new trip is a draft.
func (h *Handler) CreateTrip(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var b tripBody
	if !httpx.Bind(w, r, &b) {
		return
	}
	if b.Status.Set || b.StartLatitude.Set || b.StartLongitude.Set || b.EndLatitude.Set || b.EndLongitude.Set {
		httpx.Error(w, r, apperr.Invalid("status and start/end coordinates are set by PATCH; a new trip is a draft"))
		return
	}
	now := db.FromTS(db.TS(h.S.Clock.Now()))
	t := Trip{ID: db.NewID(), Status: StatusDraft, Tags: []string{}, CreatedAt: now, UpdatedAt: now}
	b.Name.Set = true
	if err := b.apply(&t); err != nil {
		httpx.Error(w, r, err)
		return
	}
	err := h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := b.refs(ctx, tx, &t); err != nil {
			return err
		}
		return insertTrip(ctx, tx, t)
	})
	httpx.RespondAt(w, r, http.StatusCreated, t, "/v1/trips/"+t.ID, err)
}

// UpdateTrip serves PATCH /v1/trips/{id}. A status change follows the
// transition table, sets started_at on the first activation and ended_at on
// completion, writes a history entry and is announced on the trip's topic.
// The change is a conditional UPDATE on the status read, inside the
// transaction; the partial unique index on active GPS-logging trips per device
// makes two racing activations on one device end with one 409.
func (h *Handler) UpdateTrip(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, b, err := decodeTripPatch(r)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	p := authn.From(ctx)
	now := db.FromTS(db.TS(h.S.Clock.Now()))
	var t Trip
	var change *HistoryEntry
	err = h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		var err error
		t, change, err = patchTrip(ctx, tx, id, &b, p, now)
		return err
	})
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if change != nil {
		events.Publish(ctx, h.S.Events, events.Trip(t.ID), TripEvent{Trip: t, Change: *change})
	}
	httpx.WriteResource(w, r, http.StatusOK, t)
}

// decodeTripPatch reads the trip id and the PATCH body and checks what needs
// no stored state: at least one field, coordinates in range, a known status.
func decodeTripPatch(r *http.Request) (string, tripBody, error) {
	var b tripBody
	id, err := pathID(r, "id")
	if err != nil {
		return "", b, err
	}
	if err := httpx.Decode(r, &b); err != nil {
		return "", b, err
	}
	if b.empty() {
		return "", b, apperr.Invalid("give at least one trip field to change")
	}
	if err := b.checkCoords(); err != nil {
		return "", b, err
	}
	if b.Status.Set && !validStatus(b.Status.Value) {
		return "", b, apperr.Invalid("status must be one of draft, active, paused, completed")
	}
	return id, b, nil
}

// empty reports whether a PATCH body changes nothing. The history-only
// latitude and longitude do not count.
func (b *tripBody) empty() bool {
	return !b.Name.Set && !b.Description.Set && !b.GPSLoggingEnabled.Set && !b.DeviceID.Set && !b.CategoryID.Set && !b.OriginID.Set &&
		!b.DestinationID.Set && !b.WeightKg.Set && !b.Notes.Set && !b.Tags.Set && !b.Status.Set && !b.StartLatitude.Set &&
		!b.StartLongitude.Set && !b.EndLatitude.Set && !b.EndLongitude.Set
}

// checkCoords checks the range of every coordinate present in the body.
func (b *tripBody) checkCoords() error {
	for _, c := range []struct {
		name string
		v    *float64
		lat  bool
	}{{"start_latitude", b.StartLatitude.Ptr(), true}, {"start_longitude", b.StartLongitude.Ptr(), false},
		{"end_latitude", b.EndLatitude.Ptr(), true}, {"end_longitude", b.EndLongitude.Ptr(), false},
		{"latitude", b.Latitude.Ptr(), true}, {"longitude", b.Longitude.Ptr(), false}} {
		check := checkLon
		if c.lat {
			check = checkLat
		}
		if err := check(c.name, c.v); err != nil {
			return err
		}
	}
	return nil
}

// patchTrip applies b to the stored trip id inside tx and stores it, with a
// history entry when the status changed; it returns the trip and that entry
// (nil when the status stayed). p is who acted, now the time of the change.
func patchTrip(ctx context.Context, tx *db.Tx, id string, b *tripBody, p *authn.Principal, now time.Time) (Trip, *HistoryEntry, error) {
	t, err := getTrip(ctx, tx, id)
	if err != nil {
		return t, nil, err
	}
	old := t.Status
	if err := b.patch(ctx, tx, &t, now); err != nil {
		return t, nil, err
	}
	if err := checkDeviceFree(ctx, tx, t); err != nil {
		return t, nil, err
	}
	t.UpdatedAt = now
	if err := updateTrip(ctx, tx, t, old); err != nil {
		return t, nil, err
	}
	if t.Status == old {
		return t, nil, nil
	}
	change := &HistoryEntry{ID: db.NewID(), TripID: t.ID, OldStatus: old, NewStatus: t.Status, Latitude: b.Latitude.Ptr(), Longitude: b.Longitude.Ptr(), ChangedAt: now}
	if p != nil && p.UserID != "" {
		change.ChangedBy = &p.UserID
	}
	return t, change, insertHistory(ctx, tx, change)
}

// patch applies the fields of a PATCH body to t: the plain fields, the
// references (which must exist), the start and end coordinates and a status
// move, which must follow the transition table.
func (b *tripBody) patch(ctx context.Context, q db.Querier, t *Trip, now time.Time) error {
	if err := b.apply(t); err != nil {
		return err
	}
	if err := b.refs(ctx, q, t); err != nil {
		return err
	}
	for _, c := range []struct {
		opt httpx.Opt[float64]
		dst **float64
	}{{b.StartLatitude, &t.StartLatitude}, {b.StartLongitude, &t.StartLongitude}, {b.EndLatitude, &t.EndLatitude}, {b.EndLongitude, &t.EndLongitude}} {
		if c.opt.Set {
			*c.dst = c.opt.Ptr()
		}
	}
	if b.Status.Set {
		return move(t, b.Status.Value, now)
	}
	return nil
}

// move changes the status of t to status at now: started_at is set on the
// first activation, ended_at on completion.
func move(t *Trip, status string, now time.Time) error {
	if !CanMove(t.Status, status) {
		return apperr.Invalid("a trip cannot move from %s to %s", t.Status, status)
	}
	t.Status = status
	switch t.Status {
	case StatusActive:
		if t.StartedAt == nil {
			t.StartedAt = &now
		}
	case StatusCompleted:
		t.EndedAt = &now
	}
	return nil
}

// checkDeviceFree refuses an active GPS-logging trip on a device that
// already has another one (409); the unique index catches a racing one.
func checkDeviceFree(ctx context.Context, q db.Querier, t Trip) error {
	if t.Status != StatusActive || !t.GPSLoggingEnabled || t.DeviceID == nil {
		return nil
	}
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM trips WHERE device_id = $1 AND status = 'active' AND gps_logging_enabled = TRUE AND id <> $2`,
		*t.DeviceID, t.ID).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return apperr.Conflictf("another trip with GPS logging is active on device %s", *t.DeviceID)
	}
	return nil
}

// updateTrip stores t if its status is still old, as read in the same
// transaction; otherwise the trip changed meanwhile (409).
func updateTrip(ctx context.Context, tx *db.Tx, t Trip, old string) error {
	res, err := tx.ExecContext(ctx, `UPDATE trips SET name = $1, description = $2, status = $3, gps_logging_enabled = $4, device_id = $5,
		category_id = $6, origin_id = $7, destination_id = $8, weight_kg = $9, notes = $10, tags = $11, start_latitude = $12, start_longitude = $13,
		end_latitude = $14, end_longitude = $15, started_at = $16, ended_at = $17, updated_at = $18 WHERE id = $19 AND status = $20`,
		t.Name, t.Description, t.Status, t.GPSLoggingEnabled, nullS(t.DeviceID), nullS(t.CategoryID), nullS(t.OriginID), nullS(t.DestinationID),
		nullF(t.WeightKg), t.Notes, db.JSON(tags(t.Tags)), nullF(t.StartLatitude), nullF(t.StartLongitude), nullF(t.EndLatitude), nullF(t.EndLongitude),
		db.NullTS(t.StartedAt), db.NullTS(t.EndedAt), db.TS(t.UpdatedAt), t.ID, old)
	if err != nil {
		if db.IsUniqueViolation(err) {
			return apperr.Conflictf("another trip with GPS logging is active on device %s", *t.DeviceID)
		}
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apperr.Conflictf("the trip changed meanwhile; read it again")
	}
	return nil
}

// insertHistory stores a status change.
func insertHistory(ctx context.Context, tx *db.Tx, e *HistoryEntry) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO trip_status_history (id, trip_id, old_status, new_status, changed_by, latitude, longitude, changed_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, e.ID, e.TripID, e.OldStatus, e.NewStatus, nullS(e.ChangedBy),
		nullF(e.Latitude), nullF(e.Longitude), db.TS(e.ChangedAt))
	return err
}

// TripEvent is the payload published on a trip's topic at each status change.
type TripEvent struct {
	Trip   Trip         `json:"trip"`
	Change HistoryEntry `json:"change"`
}

// DeleteTrip serves DELETE /v1/trips/{id}: drafts and completed trips only.
// The points of a completed trip stay, unlinked (the foreign key sets trip_id null).
func (h *Handler) DeleteTrip(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := pathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	var t Trip
	err = h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		var err error
		if t, err = getTrip(ctx, tx, id); err != nil {
			return err
		}
		if t.Status == StatusActive || t.Status == StatusPaused {
			return apperr.Conflictf("the trip is %s and cannot be deleted; complete it first", t.Status)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM trips WHERE id = $1 AND status IN ('draft', 'completed')`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return apperr.Conflictf("the trip changed meanwhile; read it again")
		}
		return nil
	})
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	// A cached latest point may still name the trip.
	h.S.forgetCurrent(ctx, t.DeviceID)
	httpx.NoContent(w)
}

// TripPoints lists one page of the points of the trip with id, oldest
// first, and the number of all of them (GET /v1/trips/{id}/gps).
func (s *Service) TripPoints(ctx context.Context, id string, pg httpx.Page) ([]Point, int, error) {
	t, err := s.Trip(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	var total int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM gps_points WHERE trip_id = $1`, t.ID).Scan(&total); err != nil {
		return nil, 0, err
	}
	pts, err := db.All(ctx, s.DB, scanPoint, `SELECT `+pointCols+` FROM gps_points WHERE id IN
		(SELECT id FROM gps_points WHERE trip_id = $1 ORDER BY ts, id LIMIT $2 OFFSET $3) ORDER BY ts, id`, t.ID, pg.Limit, pg.Offset())
	if err != nil {
		return nil, 0, err
	}
	return pts, total, nil
}

// TripGPS serves GET /v1/trips/{id}/gps: the trip's points, oldest first.
func (h *Handler) TripGPS(w http.ResponseWriter, r *http.Request) {
	pg := httpx.ParsePage(r, 10)
	pts, total, err := h.S.TripPoints(r.Context(), chi.URLParam(r, "id"), pg)
	httpx.RespondList(w, r, pts, pg, total, err)
}

// TripHistory lists the status changes of the trip with id, oldest first
// (GET /v1/trips/{id}/history).
func (s *Service) TripHistory(ctx context.Context, id string) ([]HistoryEntry, error) {
	t, err := s.Trip(ctx, id)
	if err != nil {
		return nil, err
	}
	return db.All(ctx, s.DB, scanHistory, `SELECT id, trip_id, old_status, new_status, changed_by, latitude, longitude, changed_at
		FROM trip_status_history WHERE trip_id = $1 ORDER BY changed_at, id`, t.ID)
}

// scanHistory reads one trip_status_history row.
func scanHistory(row db.Scanner) (HistoryEntry, error) {
	var e HistoryEntry
	var by sql.NullString
	var la, lo sql.NullFloat64
	var at int64
	err := row.Scan(&e.ID, &e.TripID, &e.OldStatus, &e.NewStatus, &by, &la, &lo, &at)
	e.ChangedBy, e.Latitude, e.Longitude, e.ChangedAt = db.StringPtr(by), fptr(la), fptr(lo), db.FromTS(at)
	return e, err
}

// TripHistory serves GET /v1/trips/{id}/history: a bare array, oldest first.
func (h *Handler) TripHistory(w http.ResponseWriter, r *http.Request) {
	out, err := h.S.TripHistory(r.Context(), chi.URLParam(r, "id"))
	httpx.RespondJSON(w, r, http.StatusOK, out, err)
}
