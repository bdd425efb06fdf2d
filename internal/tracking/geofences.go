package tracking

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// Geofence is a circular area: a centre and a radius in kilometres.
type Geofence struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Latitude    float64         `json:"latitude"`
	Longitude   float64         `json:"longitude"`
	RadiusKm    float64         `json:"radius_km"`
	IsActive    bool            `json:"is_active"`
	Metadata    json.RawMessage `json:"metadata"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
}

const geofenceCols = `id, name, description, latitude, longitude, radius_km, is_active, metadata, created_at, updated_at`

func scanGeofence(row db.Scanner) (Geofence, error) {
	var g Geofence
	var meta string
	var c, u int64
	err := row.Scan(&g.ID, &g.Name, &g.Description, &g.Latitude, &g.Longitude, &g.RadiusKm, &g.IsActive, &meta, &c, &u)
	g.Metadata = json.RawMessage(meta)
	g.CreatedAt, g.UpdatedAt = db.FromTS(c), db.FromTS(u)
	return g, err
}

type geofenceBody struct {
	Name        httpx.Opt[string]          `json:"name"`
	Description httpx.Opt[string]          `json:"description"`
	Latitude    httpx.Opt[float64]         `json:"latitude"`
	Longitude   httpx.Opt[float64]         `json:"longitude"`
	RadiusKm    httpx.Opt[float64]         `json:"radius_km"`
	IsActive    httpx.Opt[bool]            `json:"is_active"`
	Metadata    httpx.Opt[json.RawMessage] `json:"metadata"`
}

// apply validates and applies the fields present in the body.
func (b *geofenceBody) apply(g *Geofence) error {
	if err := setName("name", b.Name, &g.Name); err != nil {
		return err
	}
	if err := setText("description", b.Description, &g.Description); err != nil {
		return err
	}
	if err := setCoordinate(b.Latitude, "latitude", checkLat, &g.Latitude); err != nil {
		return err
	}
	if err := setCoordinate(b.Longitude, "longitude", checkLon, &g.Longitude); err != nil {
		return err
	}
	if b.RadiusKm.Set {
		if v := b.RadiusKm.Value; b.RadiusKm.Null || !finite(v) || v <= 0 || v > maxRadiusKm {
			return apperr.Invalid("radius_km must be a number greater than 0 and at most %g", maxRadiusKm)
		}
		g.RadiusKm = b.RadiusKm.Value
	}
	if b.IsActive.Set {
		g.IsActive = b.IsActive.Value
	}
	if b.Metadata.Set {
		m, err := metadataObject(b.Metadata)
		if err != nil {
			return err
		}
		g.Metadata = m
	}
	return nil
}

// setCoordinate checks a present coordinate (a geofence's centre has no
// null) with check and stores it in dst.
func setCoordinate(o httpx.Opt[float64], field string, check func(string, *float64) error, dst *float64) error {
	if !o.Set {
		return nil
	}
	if o.Null {
		return apperr.Invalid("%s is required", field)
	}
	if err := check(field, o.Ptr()); err != nil {
		return err
	}
	*dst = o.Value
	return nil
}

// metadataObject returns a present metadata value compacted, when it is a
// JSON object within the free-JSON bounds.
func metadataObject(o httpx.Opt[json.RawMessage]) (json.RawMessage, error) {
	m := bytes.TrimSpace(o.Value)
	if o.Null || len(m) == 0 || m[0] != '{' {
		return nil, apperr.Invalid("metadata must be a JSON object")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, m); err != nil {
		return nil, apperr.Invalid("metadata must be a JSON object")
	}
	if err := httpx.CheckFreeJSON("metadata", compact.Bytes()); err != nil {
		return nil, err
	}
	return compact.Bytes(), nil
}

// ListGeofences serves GET /v1/geofences, newest first.
func (h *Handler) ListGeofences(w http.ResponseWriter, r *http.Request) {
	pg := httpx.ParsePage(r, 10)
	out, total, err := listPage(r.Context(), h.S.DB, scanGeofence, "geofences", geofenceCols, "created_at DESC, id DESC", pg)
	httpx.RespondList(w, r, out, pg, total, err)
}

// GetGeofence serves GET /v1/geofences/{id}.
func (h *Handler) GetGeofence(w http.ResponseWriter, r *http.Request) {
	getByID(w, r, h.S.DB, getGeofence)
}

func getGeofence(ctx context.Context, q db.Querier, id string) (Geofence, error) {
	g, err := scanGeofence(q.QueryRowContext(ctx, `SELECT `+geofenceCols+` FROM geofences WHERE id = $1`, id))
	return g, db.NotFoundOr(err, "geofence")
}

// CreateGeofence serves POST /v1/geofences.
func (h *Handler) CreateGeofence(w http.ResponseWriter, r *http.Request) {
	var b geofenceBody
	if !httpx.Bind(w, r, &b) {
		return
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"latitude", b.Latitude.Set}, {"longitude", b.Longitude.Set}, {"radius_km", b.RadiusKm.Set}} {
		if !f.set {
			httpx.Error(w, r, apperr.Invalid("%s is required", f.name))
			return
		}
	}
	now := db.FromTS(db.TS(h.S.Clock.Now()))
	g := Geofence{ID: db.NewID(), IsActive: true, Metadata: json.RawMessage("{}"), CreatedAt: now, UpdatedAt: now}
	b.Name.Set = true
	if err := b.apply(&g); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if _, err := h.S.DB.ExecContext(r.Context(), `INSERT INTO geofences (`+geofenceCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
		g.ID, g.Name, g.Description, g.Latitude, g.Longitude, g.RadiusKm, g.IsActive, string(g.Metadata), db.TS(now)); err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResourceAt(w, r, http.StatusCreated, g, "/v1/geofences/"+g.ID)
}

// UpdateGeofence serves PATCH /v1/geofences/{id}.
func (h *Handler) UpdateGeofence(w http.ResponseWriter, r *http.Request) {
	var b geofenceBody
	id, ok := bindWithID(w, r, &b)
	if !ok {
		return
	}
	if !b.Name.Set && !b.Description.Set && !b.Latitude.Set && !b.Longitude.Set && !b.RadiusKm.Set && !b.IsActive.Set && !b.Metadata.Set {
		httpx.Error(w, r, apperr.Invalid("give at least one of name, description, latitude, longitude, radius_km, is_active, metadata"))
		return
	}
	patchByID(h, w, r, id, getGeofence, func(ctx context.Context, tx *db.Tx, g *Geofence, now time.Time) error {
		if err := b.apply(g); err != nil {
			return err
		}
		g.UpdatedAt = db.FromTS(db.TS(now))
		_, err := tx.ExecContext(ctx, `UPDATE geofences SET name = $1, description = $2, latitude = $3, longitude = $4, radius_km = $5, is_active = $6,
			metadata = $7, updated_at = $8 WHERE id = $9`, g.Name, g.Description, g.Latitude, g.Longitude, g.RadiusKm, g.IsActive, string(g.Metadata), db.TS(now), id)
		return err
	})
}

// DeleteGeofence serves DELETE /v1/geofences/{id}.
func (h *Handler) DeleteGeofence(w http.ResponseWriter, r *http.Request) {
	h.deleteByID(w, r, "geofences", "geofence")
}
