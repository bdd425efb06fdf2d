// Package tracking implements the tracking and logistics data of spec 3: GPS
// points (ingestion with a per-principal rate limit, newest-first listing that
// stays fast at any page depth, a cached latest point), devices and their API
// keys, trips with the draft/active/paused/completed lifecycle and its history,
// locations with contacts, geofences, hierarchical trip categories and trip
// templates.
//
// Path ids must be UUIDs: anything else answers 400 ValidationError before the
// database is asked, on every tracking route alike.
package tracking

import (
	"context"
	"database/sql"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/cache"
	"hmid/internal/clock"
	"hmid/internal/db"
	"hmid/internal/events"
	"hmid/internal/httpx"
)

// Service holds the dependencies of the tracking area.
type Service struct {
	DB      *db.DB
	Cache   cache.Cache   // the latest-point cache, shared across instances with Redis
	Limiter cache.Limiter // the POST /v1/gps rate limit (a sliding window)
	Clock   clock.Clock
	Events  events.Publisher // may be nil

	ing  ingester // the GPS group commit (see ingest)
	prep struct { // prepared ingestion statements (see ingestStmts)
		sync.Mutex
		insert, count, bucket *db.WriteStmt
	}
}

// Handler serves the tracking routes.
type Handler struct {
	S *Service
}

// pathID reads a UUID path parameter, answering 400 when it is not one.
func pathID(r *http.Request, name string) (string, error) {
	return parseUUID(name, chi.URLParam(r, name))
}

// parseUUID returns the canonical form of a UUID field, or a 400 naming it.
func parseUUID(field, v string) (string, error) {
	u, err := uuid.Parse(v)
	if err != nil {
		return "", apperr.Invalid("%s must be a UUID", field)
	}
	return u.String(), nil
}

// optUUID validates an optional UUID field in place (nil stays nil).
func optUUID(field string, v *string) (*string, error) {
	if v == nil {
		return nil, nil
	}
	id, err := parseUUID(field, *v)
	if err != nil {
		return nil, err
	}
	return &id, nil
}

// refTables names the table each reference field points to.
var refTables = map[string]string{
	"device_id":      "devices",
	"category_id":    "trip_categories",
	"origin_id":      "locations",
	"destination_id": "locations",
	"parent_id":      "trip_categories",
}

// checkRef answers 400 when an optional reference names no row.
func checkRef(ctx context.Context, q db.Querier, field string, id *string) error {
	if id == nil {
		return nil
	}
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+refTables[field]+` WHERE id = $1`, *id).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return apperr.Invalid("%s %s does not exist", field, *id)
	}
	return nil
}

// requiredName trims and checks a required name (1 to 255 characters).
func requiredName(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 255 {
		return "", apperr.Invalid("%s is required and at most 255 characters", field)
	}
	return v, nil
}

// setName checks a name present in the body (requiredName) and stores it
// in dst.
func setName(field string, o httpx.Opt[string], dst *string) error {
	if !o.Set {
		return nil
	}
	v, err := requiredName(field, o.Value)
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// setText checks a free-text field present in the body (checkText) and
// stores it in dst.
func setText(field string, o httpx.Opt[string], dst *string) error {
	if !o.Set {
		return nil
	}
	if err := checkText(field, o.Value); err != nil {
		return err
	}
	*dst = o.Value
	return nil
}

// Bounds of tracking fields beyond the shared ones in httpx
// (docs/decisions.md, "Input bounds").
const (
	maxNameLen = 255 // names, street, zip, city, device_type
	maxTags    = 50
	maxTagLen  = 64
	// maxRadiusKm is half the equator: a circle that large covers the Earth.
	maxRadiusKm = 20037.5
)

// checkText bounds a free-text field (description, notes).
func checkText(field, v string) error { return httpx.CheckLen(field, v, httpx.MaxText) }

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// checkLat and checkLon enforce WGS 84 ranges.
func checkLat(field string, v *float64) error {
	if v != nil && (!finite(*v) || *v < -90 || *v > 90) {
		return apperr.Invalid("%s must be between -90 and 90", field)
	}
	return nil
}

func checkLon(field string, v *float64) error {
	if v != nil && (!finite(*v) || *v < -180 || *v > 180) {
		return apperr.Invalid("%s must be between -180 and 180", field)
	}
	return nil
}

func checkNonNegative(field string, v *float64) error {
	if v != nil && (!finite(*v) || *v < 0) {
		return apperr.Invalid("%s must be a number of at least 0", field)
	}
	return nil
}

// listPage reads one page of table's rows (cols, in order) with the number
// of all its rows, for the paginated lists.
func listPage[T any](ctx context.Context, q db.Querier, scan func(db.Scanner) (T, error), table, cols, order string, pg httpx.Page) ([]T, int, error) {
	var total int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&total); err != nil {
		return nil, 0, err
	}
	out, err := db.All(ctx, q, scan, `SELECT `+cols+` FROM `+table+` ORDER BY `+order+` LIMIT $1 OFFSET $2`, pg.Limit, pg.Offset())
	return out, total, err
}

// getByID serves GET of one resource: the UUID in the path's {id}, loaded
// by load.
func getByID[T any](w http.ResponseWriter, r *http.Request, q db.Querier, load func(context.Context, db.Querier, string) (T, error)) {
	var v T
	id, err := pathID(r, "id")
	if err == nil {
		v, err = load(r.Context(), q, id)
	}
	httpx.Respond(w, r, http.StatusOK, v, err)
}

// deleteByID serves DELETE of the row of table with the path's {id}; none
// is a 404 naming what.
func (h *Handler) deleteByID(w http.ResponseWriter, r *http.Request, table, what string) {
	id, err := pathID(r, "id")
	if err == nil {
		err = db.ExecOne(r.Context(), h.S.DB, what, `DELETE FROM `+table+` WHERE id = $1`, id)
	}
	httpx.RespondEmpty(w, r, err)
}

// bindWithID reads the UUID in the path's {id}, then the JSON body into b,
// for the PATCH and sub-resource POST handlers. On false the error is
// written and the handler returns.
func bindWithID(w http.ResponseWriter, r *http.Request, b any) (string, bool) {
	id, err := pathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return "", false
	}
	return id, httpx.Bind(w, r, b)
}

// patchByID serves the rest of a PATCH in one transaction: load the row id,
// let save apply the body to it and write it at now, and answer the row.
func patchByID[T any](h *Handler, w http.ResponseWriter, r *http.Request, id string, load func(context.Context, db.Querier, string) (T, error),
	save func(ctx context.Context, tx *db.Tx, v *T, now time.Time) error) {
	ctx := r.Context()
	var v T
	err := h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		var err error
		if v, err = load(ctx, tx, id); err != nil {
			return err
		}
		return save(ctx, tx, &v, h.S.Clock.Now())
	})
	httpx.Respond(w, r, http.StatusOK, v, err)
}

// Nullable column helpers.

func fptr(n sql.NullFloat64) *float64 {
	if !n.Valid {
		return nil
	}
	v := n.Float64
	return &v
}

func nullF(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}

func nullS(v *string) any {
	if v == nil {
		return nil
	}
	return *v
}

func tags(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

// ph returns the SQL placeholder $n.
func ph(n int) string { return "$" + strconv.Itoa(n) }

// setList accumulates the "col = $n" parts of an UPDATE.
type setList struct {
	parts []string
	args  []any
}

func (s *setList) add(col string, v any) {
	s.args = append(s.args, v)
	s.parts = append(s.parts, col+" = "+ph(len(s.args)))
}

// exec runs UPDATE table SET … , updated_at = now WHERE id = id and reports
// whether a row matched.
func (s *setList) exec(ctx context.Context, q db.Querier, table, id string, now time.Time) (bool, error) {
	s.add("updated_at", db.TS(now))
	s.args = append(s.args, id)
	res, err := q.ExecContext(ctx, `UPDATE `+table+` SET `+strings.Join(s.parts, ", ")+` WHERE id = `+ph(len(s.args)), s.args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
