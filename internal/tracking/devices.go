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

func scanDevice(row db.Scanner) (Device, error) {
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
	return listPage(ctx, s.DB, scanDevice, "devices", deviceCols, "created_at DESC, id DESC", pg)
}

// ListDevices serves GET /v1/devices, newest first.
func (h *Handler) ListDevices(w http.ResponseWriter, r *http.Request) {
	pg := httpx.ParsePage(r, 10)
	out, total, err := h.S.Devices(r.Context(), pg)
	httpx.RespondList(w, r, out, pg, total, err)
}

// GetDevice serves GET /v1/devices/{id}.
func (h *Handler) GetDevice(w http.ResponseWriter, r *http.Request) {
	getByID(w, r, h.S.DB, h.S.getDevice)
}

// CreateDevice serves POST /v1/devices.
func (h *Handler) CreateDevice(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var b deviceBody
	if !httpx.Bind(w, r, &b) {
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
	d, err := h.S.saveDevice(ctx, id, key, now, func(tx *db.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO devices (`+deviceCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
			id, name, b.Description.Value, strings.TrimSpace(b.DeviceType.Value), nullS(key), active, db.TS(now))
		return err
	})
	httpx.RespondAt(w, r, http.StatusCreated, d, "/v1/devices/"+id, err)
}

// saveDevice links key (when not nil) to the device id, runs write and
// reads the device back, all in one transaction.
func (s *Service) saveDevice(ctx context.Context, id string, key *string, now time.Time, write func(*db.Tx) error) (Device, error) {
	var d Device
	err := s.DB.Tx(ctx, func(tx *db.Tx) error {
		if key != nil {
			if err := linkKey(ctx, tx, *key, id, now); err != nil {
				return err
			}
		}
		if err := write(tx); err != nil {
			return err
		}
		var err error
		d, err = s.getDevice(ctx, tx, id)
		return err
	})
	return d, err
}

// UpdateDevice serves PATCH /v1/devices/{id}; api_key_id null unlinks the key.
func (h *Handler) UpdateDevice(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var b deviceBody
	id, ok := bindWithID(w, r, &b)
	if !ok {
		return
	}
	if !b.Name.Set && !b.Description.Set && !b.DeviceType.Set && !b.APIKeyID.Set && !b.IsActive.Set {
		httpx.Error(w, r, apperr.Invalid("give at least one of name, description, device_type, api_key_id, is_active"))
		return
	}
	set, key, err := b.changes(ctx, h.S.DB, authn.From(ctx))
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	now := h.S.Clock.Now()
	d, err := h.S.saveDevice(ctx, id, key, now, func(tx *db.Tx) error {
		ok, err := set.exec(ctx, tx, "devices", id, now)
		if err == nil && !ok {
			err = apperr.NotFoundf("device not found")
		}
		return err
	})
	httpx.Respond(w, r, http.StatusOK, d, err)
}

// changes checks the fields present in an update and returns the columns
// to set, with the API key to link (nil when none is).
func (b *deviceBody) changes(ctx context.Context, q db.Querier, p *authn.Principal) (setList, *string, error) {
	var set setList
	if err := b.checkText(); err != nil {
		return set, nil, err
	}
	if b.Name.Set {
		name, err := requiredName("name", b.Name.Value)
		if err != nil {
			return set, nil, err
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
			return set, nil, apperr.Invalid("is_active must be a boolean")
		}
		set.add("is_active", b.IsActive.Value)
	}
	var key *string
	if b.APIKeyID.Set {
		if !b.APIKeyID.Null {
			k, err := checkKeyLink(ctx, q, p, b.APIKeyID.Value)
			if err != nil {
				return set, nil, err
			}
			key = &k
		}
		set.add("api_key_id", nullS(key))
	}
	return set, key, nil
}

// DeleteDevice serves DELETE /v1/devices/{id}. Its points, trips and
// templates stay, with device_id null.
func (h *Handler) DeleteDevice(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id, err := pathID(r, "id")
	if err == nil {
		err = db.ExecOne(ctx, h.S.DB, "device", `DELETE FROM devices WHERE id = $1`, id)
	}
	if err == nil {
		h.S.forgetCurrent(ctx, &id)
	}
	httpx.RespondEmpty(w, r, err)
}

// checkText bounds the free-text fields of a device body.
func (b *deviceBody) checkText() error {
	if err := checkText("description", b.Description.Value); err != nil {
		return err
	}
	return httpx.CheckLen("device_type", strings.TrimSpace(b.DeviceType.Value), maxNameLen)
}
