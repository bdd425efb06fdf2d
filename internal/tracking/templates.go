package tracking

import (
	"context"
	"database/sql"
	"net/http"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// Template is a reusable trip blueprint.
type Template struct {
	ID                string    `json:"id"`
	Name              string    `json:"name"`
	Description       string    `json:"description"`
	CategoryID        *string   `json:"category_id"`
	OriginID          *string   `json:"origin_id"`
	DestinationID     *string   `json:"destination_id"`
	DeviceID          *string   `json:"device_id"`
	GPSLoggingEnabled bool      `json:"gps_logging_enabled"`
	DefaultWeightKg   *float64  `json:"default_weight_kg"`
	Notes             string    `json:"notes"`
	Tags              []string  `json:"tags"`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"updated_at"`
}

const templateCols = `id, name, description, category_id, origin_id, destination_id, device_id, gps_logging_enabled, default_weight_kg, notes, tags, created_at, updated_at`

func scanTemplate(row db.Scanner) (Template, error) {
	var t Template
	var cat, orig, dest, dev sql.NullString
	var wt sql.NullFloat64
	var tg db.Strings
	var c, u int64
	err := row.Scan(&t.ID, &t.Name, &t.Description, &cat, &orig, &dest, &dev, &t.GPSLoggingEnabled, &wt, &t.Notes, &tg, &c, &u)
	t.CategoryID, t.OriginID, t.DestinationID, t.DeviceID = db.StringPtr(cat), db.StringPtr(orig), db.StringPtr(dest), db.StringPtr(dev)
	t.DefaultWeightKg, t.Tags = fptr(wt), tags(tg)
	t.CreatedAt, t.UpdatedAt = db.FromTS(c), db.FromTS(u)
	return t, err
}

func getTemplate(ctx context.Context, q db.Querier, id string) (Template, error) {
	t, err := scanTemplate(q.QueryRowContext(ctx, `SELECT `+templateCols+` FROM trip_templates WHERE id = $1`, id))
	return t, db.NotFoundOr(err, "trip template")
}

// templateBody is the body of POST and PATCH /v1/trip-templates.
type templateBody struct {
	Name              httpx.Opt[string]   `json:"name"`
	Description       httpx.Opt[string]   `json:"description"`
	CategoryID        httpx.Opt[string]   `json:"category_id"`
	OriginID          httpx.Opt[string]   `json:"origin_id"`
	DestinationID     httpx.Opt[string]   `json:"destination_id"`
	DeviceID          httpx.Opt[string]   `json:"device_id"`
	GPSLoggingEnabled httpx.Opt[bool]     `json:"gps_logging_enabled"`
	DefaultWeightKg   httpx.Opt[float64]  `json:"default_weight_kg"`
	Notes             httpx.Opt[string]   `json:"notes"`
	Tags              httpx.Opt[[]string] `json:"tags"`
}

func (b *templateBody) empty() bool {
	return !b.Name.Set && !b.Description.Set && !b.CategoryID.Set && !b.OriginID.Set && !b.DestinationID.Set && !b.DeviceID.Set &&
		!b.GPSLoggingEnabled.Set && !b.DefaultWeightKg.Set && !b.Notes.Set && !b.Tags.Set
}

// apply validates and applies the fields present in the body; references must exist.
func (b *templateBody) apply(ctx context.Context, q db.Querier, t *Template) error {
	err := applyPlan(
		planFields{name: b.Name, description: b.Description, gpsLogging: b.GPSLoggingEnabled, weightName: "default_weight_kg", weight: b.DefaultWeightKg, notes: b.Notes, tags: b.Tags},
		planTarget{name: &t.Name, description: &t.Description, gpsLogging: &t.GPSLoggingEnabled, weight: &t.DefaultWeightKg, notes: &t.Notes, tags: &t.Tags})
	if err != nil {
		return err
	}
	return setRefs(ctx, q, ref{"category_id", b.CategoryID, &t.CategoryID}, ref{"origin_id", b.OriginID, &t.OriginID},
		ref{"destination_id", b.DestinationID, &t.DestinationID}, ref{"device_id", b.DeviceID, &t.DeviceID})
}

// ListTemplates serves GET /v1/trip-templates: a bare array ordered by name.
func (h *Handler) ListTemplates(w http.ResponseWriter, r *http.Request) {
	out, err := db.All(r.Context(), h.S.DB, scanTemplate, `SELECT `+templateCols+` FROM trip_templates ORDER BY LOWER(name), id`)
	httpx.RespondJSON(w, r, http.StatusOK, out, err)
}

// GetTemplate serves GET /v1/trip-templates/{id}.
func (h *Handler) GetTemplate(w http.ResponseWriter, r *http.Request) {
	getByID(w, r, h.S.DB, getTemplate)
}

// CreateTemplate serves POST /v1/trip-templates.
func (h *Handler) CreateTemplate(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var b templateBody
	if !httpx.Bind(w, r, &b) {
		return
	}
	now := db.FromTS(db.TS(h.S.Clock.Now()))
	t := Template{ID: db.NewID(), Tags: []string{}, CreatedAt: now, UpdatedAt: now}
	b.Name.Set = true
	err := h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := b.apply(ctx, tx, &t); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO trip_templates (`+templateCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)`,
			t.ID, t.Name, t.Description, nullS(t.CategoryID), nullS(t.OriginID), nullS(t.DestinationID), nullS(t.DeviceID), t.GPSLoggingEnabled,
			nullF(t.DefaultWeightKg), t.Notes, db.JSON(t.Tags), db.TS(now))
		return err
	})
	httpx.RespondAt(w, r, http.StatusCreated, t, "/v1/trip-templates/"+t.ID, err)
}

// UpdateTemplate serves PATCH /v1/trip-templates/{id}.
func (h *Handler) UpdateTemplate(w http.ResponseWriter, r *http.Request) {
	var b templateBody
	id, ok := bindWithID(w, r, &b)
	if !ok {
		return
	}
	if b.empty() {
		httpx.Error(w, r, apperr.Invalid("give at least one template field to change"))
		return
	}
	patchByID(h, w, r, id, getTemplate, func(ctx context.Context, tx *db.Tx, t *Template, now time.Time) error {
		if err := b.apply(ctx, tx, t); err != nil {
			return err
		}
		t.UpdatedAt = db.FromTS(db.TS(now))
		_, err := tx.ExecContext(ctx, `UPDATE trip_templates SET name = $1, description = $2, category_id = $3, origin_id = $4, destination_id = $5,
			device_id = $6, gps_logging_enabled = $7, default_weight_kg = $8, notes = $9, tags = $10, updated_at = $11 WHERE id = $12`,
			t.Name, t.Description, nullS(t.CategoryID), nullS(t.OriginID), nullS(t.DestinationID), nullS(t.DeviceID), t.GPSLoggingEnabled,
			nullF(t.DefaultWeightKg), t.Notes, db.JSON(tags(t.Tags)), db.TS(now), id)
		return err
	})
}

// DeleteTemplate serves DELETE /v1/trip-templates/{id}; trips made from it stay.
func (h *Handler) DeleteTemplate(w http.ResponseWriter, r *http.Request) {
	h.deleteByID(w, r, "trip_templates", "trip template")
}

// CreateTripFromTemplate serves POST /v1/trip-templates/{id}/create-trip with
// {weight_kg}: a draft trip named "<template name> (from template)" carrying
// the template's description, category, origin, destination, device, GPS
// logging, notes and tags.
func (h *Handler) CreateTripFromTemplate(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var b struct {
		WeightKg *float64 `json:"weight_kg"`
	}
	id, ok := bindWithID(w, r, &b)
	if !ok {
		return
	}
	if b.WeightKg == nil {
		httpx.Error(w, r, apperr.Invalid("weight_kg is required"))
		return
	}
	if err := checkNonNegative("weight_kg", b.WeightKg); err != nil {
		httpx.Error(w, r, err)
		return
	}
	now := db.FromTS(db.TS(h.S.Clock.Now()))
	var t Trip
	err := h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		tpl, err := getTemplate(ctx, tx, id)
		if err != nil {
			return err
		}
		t = Trip{ID: db.NewID(), Name: tpl.Name + " (from template)", Description: tpl.Description, Status: StatusDraft,
			GPSLoggingEnabled: tpl.GPSLoggingEnabled, DeviceID: tpl.DeviceID, CategoryID: tpl.CategoryID, OriginID: tpl.OriginID,
			DestinationID: tpl.DestinationID, WeightKg: b.WeightKg, Notes: tpl.Notes, Tags: tags(tpl.Tags), CreatedAt: now, UpdatedAt: now}
		return insertTrip(ctx, tx, t)
	})
	httpx.RespondAt(w, r, http.StatusCreated, t, "/v1/trips/"+t.ID, err)
}
