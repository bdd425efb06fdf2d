package tracking

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// Device is a GPS device. APIKeyID names the API key linked to it, whose
// points are recorded for the device when they name none.
type Device struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	DeviceType  string    `json:"device_type"`
	APIKeyID    *string   `json:"api_key_id"`
	IsActive    bool      `json:"is_active"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

const deviceCols = `id, name, description, device_type, api_key_id, is_active, created_at, updated_at`

func scanDevice(row interface{ Scan(...any) error }) (Device, error) {
	var d Device
	var key sql.NullString
	var c, u int64
	err := row.Scan(&d.ID, &d.Name, &d.Description, &d.DeviceType, &key, &d.IsActive, &c, &u)
	d.APIKeyID = db.StringPtr(key)
	d.CreatedAt, d.UpdatedAt = db.FromTS(c), db.FromTS(u)
	return d, err
}

type deviceBody struct {
	Name        httpx.Opt[string] `json:"name"`
	Description httpx.Opt[string] `json:"description"`
	DeviceType  httpx.Opt[string] `json:"device_type"`
	APIKeyID    httpx.Opt[string] `json:"api_key_id"`
	IsActive    httpx.Opt[bool]   `json:"is_active"`
}

// checkKeyLink allows linking an API key the caller owns; super admins and
// system keys may link any key. An unknown key is a 400, another user's a 403.
func checkKeyLink(ctx context.Context, q db.Querier, p *authn.Principal, raw string) (string, error) {
	id, err := parseUUID("api_key_id", raw)
	if err != nil {
		return "", err
	}
	var owner sql.NullString
	if err := q.QueryRowContext(ctx, `SELECT user_id FROM api_keys WHERE id = $1`, id).Scan(&owner); err != nil {
		if err == sql.ErrNoRows {
			return "", apperr.Invalid("api_key_id %s does not exist", id)
		}
		return "", err
	}
	if !p.IsAdmin() && (p.UserID == "" || !owner.Valid || owner.String != p.UserID) {
		return "", apperr.Forbiddenf("you can only link API keys you own")
	}
	return id, nil
}

// linkKey moves key to device: a key drives at most one device.
func linkKey(ctx context.Context, tx *db.Tx, key, deviceID string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE devices SET api_key_id = NULL, updated_at = $1 WHERE api_key_id = $2 AND id <> $3`, db.TS(now), key, deviceID)
	return err
}

func (s *Service) getDevice(ctx context.Context, q db.Querier, id string) (Device, error) {
	d, err := scanDevice(q.QueryRowContext(ctx, `SELECT `+deviceCols+` FROM devices WHERE id = $1`, id))
	return d, db.NotFoundOr(err, "device")
}

// Device returns the device id (GET /v1/devices/{id}); NotFound when there
// is none.
func (s *Service) Device(ctx context.Context, id string) (Device, error) {
	return s.getDevice(ctx, s.DB, id)
}

// Devices lists one page of the devices, newest first, and the number of
// all devices (GET /v1/devices).
func (s *Service) Devices(ctx context.Context, pg httpx.Page) ([]Device, int, error) {
	var total int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM devices`).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.DB.QueryContext(ctx, `SELECT `+deviceCols+` FROM devices ORDER BY created_at DESC, id DESC LIMIT $1 OFFSET $2`, pg.Limit, pg.Offset())
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []Device{}
	for rows.Next() {
		d, err := scanDevice(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, d)
	}
	return out, total, rows.Err()
}

// ListDevices serves GET /v1/devices, newest first.
func (h *Handler) ListDevices(w http.ResponseWriter, r *http.Request) {
	pg := httpx.ParsePage(r, 10)
	out, total, err := h.S.Devices(r.Context(), pg)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteList(w, r, out, pg, total)
}

// GetDevice serves GET /v1/devices/{id}.
func (h *Handler) GetDevice(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	d, err := h.S.getDevice(r.Context(), h.S.DB, id)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResource(w, r, http.StatusOK, d)
}

// CreateDevice serves POST /v1/devices.
func (h *Handler) CreateDevice(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var b deviceBody
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	name, err := requiredName("name", b.Name.Value)
	if err == nil {
		err = b.checkText()
	}
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	var key *string
	if b.APIKeyID.Set && !b.APIKeyID.Null {
		k, err := checkKeyLink(ctx, h.S.DB, authn.From(ctx), b.APIKeyID.Value)
		if err != nil {
			httpx.Error(w, r, err)
			return
		}
		key = &k
	}
	active := true
	if b.IsActive.Set && !b.IsActive.Null {
		active = b.IsActive.Value
	}
	id, now := db.NewID(), h.S.Clock.Now()
	var d Device
	err = h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		if key != nil {
			if err := linkKey(ctx, tx, *key, id, now); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO devices (`+deviceCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
			id, name, b.Description.Value, strings.TrimSpace(b.DeviceType.Value), nullS(key), active, db.TS(now)); err != nil {
			return err
		}
		d, err = h.S.getDevice(ctx, tx, id)
		return err
	})
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResourceAt(w, r, http.StatusCreated, d, "/v1/devices/"+id)
}

// UpdateDevice serves PATCH /v1/devices/{id}; api_key_id null unlinks the key.
func (h *Handler) UpdateDevice(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := pathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	var b deviceBody
	if err := httpx.Decode(r, &b); err != nil {
		httpx.Error(w, r, err)
		return
	}
	if !b.Name.Set && !b.Description.Set && !b.DeviceType.Set && !b.APIKeyID.Set && !b.IsActive.Set {
		httpx.Error(w, r, apperr.Invalid("give at least one of name, description, device_type, api_key_id, is_active"))
		return
	}
	if err := b.checkText(); err != nil {
		httpx.Error(w, r, err)
		return
	}
	var set setList
	if b.Name.Set {
		name, err := requiredName("name", b.Name.Value)
		if err != nil {
			httpx.Error(w, r, err)
			return
		}
		set.add("name", name)
	}
	if b.Description.Set {
		set.add("description", b.Description.Value)
	}
	if b.DeviceType.Set {
		set.add("device_type", strings.TrimSpace(b.DeviceType.Value))
	}
	if b.IsActive.Set {
		if b.IsActive.Null {
			httpx.Error(w, r, apperr.Invalid("is_active must be a boolean"))
			return
		}
		set.add("is_active", b.IsActive.Value)
	}
	var key *string
	if b.APIKeyID.Set {
		if !b.APIKeyID.Null {
			k, err := checkKeyLink(ctx, h.S.DB, authn.From(ctx), b.APIKeyID.Value)
			if err != nil {
				httpx.Error(w, r, err)
				return
			}
			key = &k
		}
		set.add("api_key_id", nullS(key))
	}
	now := h.S.Clock.Now()
	var d Device
	err = h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		if key != nil {
			if err := linkKey(ctx, tx, *key, id, now); err != nil {
				return err
			}
		}
		ok, err := set.exec(ctx, tx, "devices", id, now)
		if err != nil {
			return err
		}
		if !ok {
			return apperr.NotFoundf("device not found")
		}
		d, err = h.S.getDevice(ctx, tx, id)
		return err
	})
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	httpx.WriteResource(w, r, http.StatusOK, d)
}

// DeleteDevice serves DELETE /v1/devices/{id}. Its points, trips and
// templates stay, with device_id null.
func (h *Handler) DeleteDevice(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := pathID(r, "id")
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	res, err := h.S.DB.ExecContext(ctx, `DELETE FROM devices WHERE id = $1`, id)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	if n, _ := res.RowsAffected(); n == 0 {
		httpx.Error(w, r, apperr.NotFoundf("device not found"))
		return
	}
	h.S.forgetCurrent(ctx, &id)
	httpx.NoContent(w)
}

// checkText bounds the free-text fields of a device body.
func (b *deviceBody) checkText() error {
	if err := checkText("description", b.Description.Value); err != nil {
		return err
	}
	return httpx.CheckLen("device_type", strings.TrimSpace(b.DeviceType.Value), maxNameLen)
}
