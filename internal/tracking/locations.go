package tracking

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// Location is a reusable place; Contacts is set on single-location answers.
type Location struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Street    string     `json:"street"`
	Zip       string     `json:"zip"`
	City      string     `json:"city"`
	Country   string     `json:"country"`
	Latitude  *float64   `json:"latitude"`
	Longitude *float64   `json:"longitude"`
	Notes     string     `json:"notes"`
	IsActive  bool       `json:"is_active"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	Contacts  *[]Contact `json:"contacts,omitempty"`
}

// Contact is a contact person of a location.
type Contact struct {
	ID         string    `json:"id"`
	LocationID string    `json:"location_id"`
	Name       string    `json:"name"`
	Phone      string    `json:"phone"`
	Email      string    `json:"email"`
	Role       string    `json:"role"`
	CreatedAt  time.Time `json:"created_at"`
}

const locationCols = `id, name, street, zip, city, country, latitude, longitude, notes, is_active, created_at, updated_at`

func scanLocation(row db.Scanner) (Location, error) {
	var l Location
	var la, lo sql.NullFloat64
	var c, u int64
	err := row.Scan(&l.ID, &l.Name, &l.Street, &l.Zip, &l.City, &l.Country, &la, &lo, &l.Notes, &l.IsActive, &c, &u)
	l.Latitude, l.Longitude = fptr(la), fptr(lo)
	l.CreatedAt, l.UpdatedAt = db.FromTS(c), db.FromTS(u)
	return l, err
}

const contactCols = `id, location_id, name, phone, email, role, created_at`

func scanContact(row db.Scanner) (Contact, error) {
	var c Contact
	var at int64
	err := row.Scan(&c.ID, &c.LocationID, &c.Name, &c.Phone, &c.Email, &c.Role, &at)
	c.CreatedAt = db.FromTS(at)
	return c, err
}

// getLocation loads a location with its contacts.
func getLocation(ctx context.Context, q db.Querier, id string) (Location, error) {
	l, err := scanLocation(q.QueryRowContext(ctx, `SELECT `+locationCols+` FROM locations WHERE id = $1`, id))
	if err != nil {
		return l, db.NotFoundOr(err, "location")
	}
	cs, err := db.All(ctx, q, scanContact, `SELECT `+contactCols+` FROM location_contacts WHERE location_id = $1 ORDER BY created_at, id`, id)
	if err != nil {
		return l, err
	}
	l.Contacts = &cs
	return l, nil
}

type locationBody struct {
	Name      httpx.Opt[string]  `json:"name"`
	Street    httpx.Opt[string]  `json:"street"`
	Zip       httpx.Opt[string]  `json:"zip"`
	City      httpx.Opt[string]  `json:"city"`
	Country   httpx.Opt[string]  `json:"country"`
	Latitude  httpx.Opt[float64] `json:"latitude"`
	Longitude httpx.Opt[float64] `json:"longitude"`
	Notes     httpx.Opt[string]  `json:"notes"`
	IsActive  httpx.Opt[bool]    `json:"is_active"`
	Contacts  []contactBody      `json:"contacts"`
}

type contactBody struct {
	Name  httpx.Opt[string] `json:"name"`
	Phone httpx.Opt[string] `json:"phone"`
	Email httpx.Opt[string] `json:"email"`
	Role  httpx.Opt[string] `json:"role"`
}

// country checks an ISO 3166-1 alpha-2 code ("" clears it) and returns it upper-case.
func country(v string) (string, error) {
	v = strings.ToUpper(strings.TrimSpace(v))
	if v == "" {
		return "", nil
	}
	if len(v) != 2 || v[0] < 'A' || v[0] > 'Z' || v[1] < 'A' || v[1] > 'Z' {
		return "", apperr.Invalid("country must be a two-letter ISO 3166-1 code")
	}
	return v, nil
}

// apply validates and applies the location fields present in the body.
func (b *locationBody) apply(l *Location) error {
	if err := setName("name", b.Name, &l.Name); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		opt  httpx.Opt[string]
		dst  *string
	}{{"street", b.Street, &l.Street}, {"zip", b.Zip, &l.Zip}, {"city", b.City, &l.City}} {
		if !f.opt.Set {
			continue
		}
		v := strings.TrimSpace(f.opt.Value)
		if err := httpx.CheckLen(f.name, v, maxNameLen); err != nil {
			return err
		}
		*f.dst = v
	}
	if b.Country.Set {
		c, err := country(b.Country.Value)
		if err != nil {
			return err
		}
		l.Country = c
	}
	if b.Latitude.Set {
		if err := checkLat("latitude", b.Latitude.Ptr()); err != nil {
			return err
		}
		l.Latitude = b.Latitude.Ptr()
	}
	if b.Longitude.Set {
		if err := checkLon("longitude", b.Longitude.Ptr()); err != nil {
			return err
		}
		l.Longitude = b.Longitude.Ptr()
	}
	if err := setText("notes", b.Notes, &l.Notes); err != nil {
		return err
	}
	if b.IsActive.Set {
		l.IsActive = b.IsActive.Value
	}
	return nil
}

// apply validates and applies the contact fields present in the body.
func (b *contactBody) apply(c *Contact) error {
	if err := setName("contact name", b.Name, &c.Name); err != nil {
		return err
	}
	if b.Phone.Set {
		c.Phone = strings.TrimSpace(b.Phone.Value)
	}
	if b.Email.Set {
		e := strings.TrimSpace(b.Email.Value)
		if e != "" && (!strings.Contains(e, "@") || strings.HasPrefix(e, "@") || strings.HasSuffix(e, "@") || len(e) > 254) {
			return apperr.Invalid("email %q is not an email address", e)
		}
		c.Email = e
	}
	if b.Role.Set {
		c.Role = strings.TrimSpace(b.Role.Value)
	}
	return nil
}

func insertContact(ctx context.Context, tx *db.Tx, c Contact) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO location_contacts (`+contactCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		c.ID, c.LocationID, c.Name, c.Phone, c.Email, c.Role, db.TS(c.CreatedAt))
	return err
}

// ListLocations serves GET /v1/locations, ordered by name.
func (h *Handler) ListLocations(w http.ResponseWriter, r *http.Request) {
	pg := httpx.ParsePage(r, 10)
	out, total, err := listPage(r.Context(), h.S.DB, scanLocation, "locations", locationCols, "LOWER(name), id", pg)
	httpx.RespondList(w, r, out, pg, total, err)
}

// GetLocation serves GET /v1/locations/{id} with the location's contacts.
func (h *Handler) GetLocation(w http.ResponseWriter, r *http.Request) {
	getByID(w, r, h.S.DB, getLocation)
}

// CreateLocation serves POST /v1/locations: the location and its contacts
// are written in one transaction, so a bad contact leaves nothing behind.
func (h *Handler) CreateLocation(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var b locationBody
	if !httpx.Bind(w, r, &b) {
		return
	}
	now := db.FromTS(db.TS(h.S.Clock.Now()))
	l := Location{ID: db.NewID(), IsActive: true, CreatedAt: now, UpdatedAt: now}
	b.Name.Set = true
	if err := b.apply(&l); err != nil {
		httpx.Error(w, r, err)
		return
	}
	contacts := make([]Contact, 0, len(b.Contacts))
	for _, cb := range b.Contacts {
		c := Contact{ID: db.NewID(), LocationID: l.ID, CreatedAt: now}
		cb.Name.Set = true
		if err := cb.apply(&c); err != nil {
			httpx.Error(w, r, err)
			return
		}
		contacts = append(contacts, c)
	}
	err := h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO locations (`+locationCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)`,
			l.ID, l.Name, l.Street, l.Zip, l.City, l.Country, nullF(l.Latitude), nullF(l.Longitude), l.Notes, l.IsActive, db.TS(now)); err != nil {
			return err
		}
		for _, c := range contacts {
			if err := insertContact(ctx, tx, c); err != nil {
				return err
			}
		}
		var err error
		l, err = getLocation(ctx, tx, l.ID)
		return err
	})
	httpx.RespondAt(w, r, http.StatusCreated, l, "/v1/locations/"+l.ID, err)
}

// UpdateLocation serves PATCH /v1/locations/{id}; contacts have their own routes.
func (h *Handler) UpdateLocation(w http.ResponseWriter, r *http.Request) {
	var b locationBody
	id, ok := bindWithID(w, r, &b)
	if !ok {
		return
	}
	if b.Contacts != nil {
		httpx.Error(w, r, apperr.Invalid("contacts are changed through /v1/locations/{id}/contacts"))
		return
	}
	if !b.Name.Set && !b.Street.Set && !b.Zip.Set && !b.City.Set && !b.Country.Set && !b.Latitude.Set && !b.Longitude.Set && !b.Notes.Set && !b.IsActive.Set {
		httpx.Error(w, r, apperr.Invalid("give at least one of name, street, zip, city, country, latitude, longitude, notes, is_active"))
		return
	}
	patchByID(h, w, r, id, getLocation, func(ctx context.Context, tx *db.Tx, l *Location, now time.Time) error {
		if err := b.apply(l); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE locations SET name = $1, street = $2, zip = $3, city = $4, country = $5, latitude = $6, longitude = $7,
			notes = $8, is_active = $9, updated_at = $10 WHERE id = $11`, l.Name, l.Street, l.Zip, l.City, l.Country, nullF(l.Latitude), nullF(l.Longitude),
			l.Notes, l.IsActive, db.TS(now), id); err != nil {
			return err
		}
		l.UpdatedAt = db.FromTS(db.TS(now))
		return nil
	})
}

// DeleteLocation serves DELETE /v1/locations/{id}; its contacts go with it,
// trips and templates keep their other fields with origin/destination null.
func (h *Handler) DeleteLocation(w http.ResponseWriter, r *http.Request) {
	h.deleteByID(w, r, "locations", "location")
}

// CreateContact serves POST /v1/locations/{id}/contacts.
func (h *Handler) CreateContact(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var b contactBody
	id, ok := bindWithID(w, r, &b)
	if !ok {
		return
	}
	c := Contact{ID: db.NewID(), LocationID: id, CreatedAt: db.FromTS(db.TS(h.S.Clock.Now()))}
	b.Name.Set = true
	if err := b.apply(&c); err != nil {
		httpx.Error(w, r, err)
		return
	}
	err := h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM locations WHERE id = $1`, id).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return apperr.NotFoundf("location not found")
		}
		return insertContact(ctx, tx, c)
	})
	httpx.RespondAt(w, r, http.StatusCreated, c, "/v1/locations/"+id+"/contacts/"+c.ID, err)
}

// contactPath reads the location {id} and the contact {cid} of a contact
// route, in that order.
func contactPath(r *http.Request) (id, cid string, err error) {
	if id, err = pathID(r, "id"); err == nil {
		cid, err = pathID(r, "cid")
	}
	return id, cid, err
}

// UpdateContact serves PATCH /v1/locations/{id}/contacts/{cid}.
func (h *Handler) UpdateContact(w http.ResponseWriter, r *http.Request) {
	id, cid, err := contactPath(r)
	if err != nil {
		httpx.Error(w, r, err)
		return
	}
	var b contactBody
	if !httpx.Bind(w, r, &b) {
		return
	}
	if !b.Name.Set && !b.Phone.Set && !b.Email.Set && !b.Role.Set {
		httpx.Error(w, r, apperr.Invalid("give at least one of name, phone, email, role"))
		return
	}
	getContact := func(ctx context.Context, q db.Querier, cid string) (Contact, error) {
		c, err := scanContact(q.QueryRowContext(ctx, `SELECT `+contactCols+` FROM location_contacts WHERE id = $1 AND location_id = $2`, cid, id))
		return c, db.NotFoundOr(err, "contact")
	}
	patchByID(h, w, r, cid, getContact, func(ctx context.Context, tx *db.Tx, c *Contact, _ time.Time) error {
		if err := b.apply(c); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE location_contacts SET name = $1, phone = $2, email = $3, role = $4 WHERE id = $5`, c.Name, c.Phone, c.Email, c.Role, cid)
		return err
	})
}

// DeleteContact serves DELETE /v1/locations/{id}/contacts/{cid}.
func (h *Handler) DeleteContact(w http.ResponseWriter, r *http.Request) {
	id, cid, err := contactPath(r)
	if err == nil {
		err = db.ExecOne(r.Context(), h.S.DB, "contact", `DELETE FROM location_contacts WHERE id = $1 AND location_id = $2`, cid, id)
	}
	httpx.RespondEmpty(w, r, err)
}
