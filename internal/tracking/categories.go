package tracking

import (
	"context"
	"database/sql"
	"math"
	"net/http"
	"regexp"
	"strings"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// Category is a trip category; categories form a tree through ParentID.
type Category struct {
	ID          string    `json:"id"`
	ParentID    *string   `json:"parent_id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Color       *string   `json:"color"`
	IsActive    bool      `json:"is_active"`
	SortOrder   int       `json:"sort_order"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

const categoryCols = `id, parent_id, name, description, color, is_active, sort_order, created_at, updated_at`

func scanCategory(row db.Scanner) (Category, error) {
	var c Category
	var parent, color sql.NullString
	var cr, u int64
	err := row.Scan(&c.ID, &parent, &c.Name, &c.Description, &color, &c.IsActive, &c.SortOrder, &cr, &u)
	c.ParentID, c.Color = db.StringPtr(parent), db.StringPtr(color)
	c.CreatedAt, c.UpdatedAt = db.FromTS(cr), db.FromTS(u)
	return c, err
}

func getCategory(ctx context.Context, q db.Querier, id string) (Category, error) {
	c, err := scanCategory(q.QueryRowContext(ctx, `SELECT `+categoryCols+` FROM trip_categories WHERE id = $1`, id))
	return c, db.NotFoundOr(err, "trip category")
}

// hexColor is a CSS hex colour: #RGB or #RRGGBB.
var hexColor = regexp.MustCompile(`^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)

type categoryBody struct {
	ParentID    httpx.Opt[string] `json:"parent_id"`
	Name        httpx.Opt[string] `json:"name"`
	Description httpx.Opt[string] `json:"description"`
	Color       httpx.Opt[string] `json:"color"`
	IsActive    httpx.Opt[bool]   `json:"is_active"`
	SortOrder   httpx.Opt[int]    `json:"sort_order"`
}

// apply validates and applies the fields present in the body except parent_id.
func (b *categoryBody) apply(c *Category) error {
	if err := setName("name", b.Name, &c.Name); err != nil {
		return err
	}
	if err := setText("description", b.Description, &c.Description); err != nil {
		return err
	}
	if b.Color.Set {
		c.Color = nil
		if v := strings.TrimSpace(b.Color.Value); !b.Color.Null && v != "" {
			if !hexColor.MatchString(v) {
				return apperr.Invalid("color must be a hex colour code such as #1e90ff or #fff")
			}
			v = strings.ToLower(v)
			c.Color = &v
		}
	}
	if b.IsActive.Set {
		c.IsActive = b.IsActive.Value
	}
	if b.SortOrder.Set {
		if v := b.SortOrder.Value; v < math.MinInt32 || v > math.MaxInt32 {
			return apperr.Invalid("sort_order must be a 32-bit integer")
		}
		c.SortOrder = b.SortOrder.Value
	}
	return nil
}

// setParent validates a new parent: it must exist and must not be the
// category itself or one of its descendants, which would close a cycle.
func setParent(ctx context.Context, q db.Querier, c *Category, opt httpx.Opt[string]) error {
	if !opt.Set {
		return nil
	}
	parent, err := optUUID("parent_id", opt.Ptr())
	if err != nil {
		return err
	}
	if err := checkRef(ctx, q, "parent_id", parent); err != nil {
		return err
	}
	// Walk up from the new parent; meeting c means c would be its own ancestor.
	// The walk is bounded, since existing rows never hold a cycle.
	for at := parent; at != nil; {
		if *at == c.ID {
			return apperr.Invalid("parent_id would make the category its own ancestor")
		}
		var next sql.NullString
		if err := q.QueryRowContext(ctx, `SELECT parent_id FROM trip_categories WHERE id = $1`, *at).Scan(&next); err != nil {
			return err
		}
		at = db.StringPtr(next)
	}
	c.ParentID = parent
	return nil
}

// ListCategories serves GET /v1/trip-categories: a bare array ordered by sort_order, then name.
func (h *Handler) ListCategories(w http.ResponseWriter, r *http.Request) {
	out, err := db.All(r.Context(), h.S.DB, scanCategory, `SELECT `+categoryCols+` FROM trip_categories ORDER BY sort_order, LOWER(name), id`)
	httpx.RespondJSON(w, r, http.StatusOK, out, err)
}

// GetCategory serves GET /v1/trip-categories/{id}.
func (h *Handler) GetCategory(w http.ResponseWriter, r *http.Request) {
	getByID(w, r, h.S.DB, getCategory)
}

// CreateCategory serves POST /v1/trip-categories.
func (h *Handler) CreateCategory(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var b categoryBody
	if !httpx.Bind(w, r, &b) {
		return
	}
	now := db.FromTS(db.TS(h.S.Clock.Now()))
	c := Category{ID: db.NewID(), IsActive: true, CreatedAt: now, UpdatedAt: now}
	b.Name.Set = true
	if err := b.apply(&c); err != nil {
		httpx.Error(w, r, err)
		return
	}
	err := h.S.DB.Tx(ctx, func(tx *db.Tx) error {
		if err := setParent(ctx, tx, &c, b.ParentID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO trip_categories (`+categoryCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)`,
			c.ID, nullS(c.ParentID), c.Name, c.Description, nullS(c.Color), c.IsActive, c.SortOrder, db.TS(now))
		return err
	})
	httpx.RespondAt(w, r, http.StatusCreated, c, "/v1/trip-categories/"+c.ID, err)
}

// UpdateCategory serves PATCH /v1/trip-categories/{id}. Besides the fields
// the spec lists it accepts parent_id, with the same existence and no-cycle rules.
func (h *Handler) UpdateCategory(w http.ResponseWriter, r *http.Request) {
	var b categoryBody
	id, ok := bindWithID(w, r, &b)
	if !ok {
		return
	}
	if !b.ParentID.Set && !b.Name.Set && !b.Description.Set && !b.Color.Set && !b.IsActive.Set && !b.SortOrder.Set {
		httpx.Error(w, r, apperr.Invalid("give at least one of name, description, color, is_active, sort_order, parent_id"))
		return
	}
	patchByID(h, w, r, id, getCategory, func(ctx context.Context, tx *db.Tx, c *Category, now time.Time) error {
		if err := b.apply(c); err != nil {
			return err
		}
		if err := setParent(ctx, tx, c, b.ParentID); err != nil {
			return err
		}
		c.UpdatedAt = db.FromTS(db.TS(now))
		_, err := tx.ExecContext(ctx, `UPDATE trip_categories SET parent_id = $1, name = $2, description = $3, color = $4, is_active = $5, sort_order = $6,
			updated_at = $7 WHERE id = $8`, nullS(c.ParentID), c.Name, c.Description, nullS(c.Color), c.IsActive, c.SortOrder, db.TS(now), id)
		return err
	})
}

// DeleteCategory serves DELETE /v1/trip-categories/{id}; its children move
// to the top level and its trips and templates lose the category.
func (h *Handler) DeleteCategory(w http.ResponseWriter, r *http.Request) {
	h.deleteByID(w, r, "trip_categories", "trip category")
}
