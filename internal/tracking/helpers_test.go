package tracking_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"hmid/internal/access"
	"hmid/internal/apptest"
	"hmid/internal/db"
)

// operator makes a plain (not super-admin) user holding exactly perms through a fresh role.
func operator(t *testing.T, e *apptest.Env, perms ...string) apptest.User {
	t.Helper()
	roleID := "role_t_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
	now := db.TS(e.Clock.Now())
	ctx := t.Context()
	if _, err := e.Server.DB.ExecContext(ctx, `INSERT INTO roles (id, name, description, is_system, requires_two_factor, created_at, updated_at) VALUES ($1, $1, '', FALSE, FALSE, $2, $2)`, roleID, now); err != nil {
		t.Fatal(err)
	}
	for _, p := range perms {
		res, act, _ := strings.Cut(p, ":")
		if _, err := e.Server.DB.ExecContext(ctx, `INSERT INTO role_permissions (role_id, permission_id, created_at) VALUES ($1, $2, $3)`, roleID, access.PermissionID(res, act), now); err != nil {
			t.Fatal(err)
		}
	}
	return e.NewUser(t, apptest.UserSpec{Roles: []string{"role_user", roleID}})
}

// data returns the data object of an enveloped answer.
func data(r *apptest.Resp) map[string]any {
	d, _ := r.JSON()["data"].(map[string]any)
	return d
}

// create POSTs body and returns the created resource's data (201 expected).
func create(t *testing.T, e *apptest.Env, path, tok string, body any) map[string]any {
	t.Helper()
	return data(e.Call(t, "POST", path, tok, body, http.StatusCreated))
}

// pointEpoch (2020-01-01) is where the small timestamps of the tests count
// from: hmid accepts GPS timestamps from 2000-01-01 to a day past its clock.
var pointEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// point is a valid GPS body at Unix second ts, or ts seconds past
// pointEpoch when ts is before 2000.
func point(ts int64, extra map[string]any) map[string]any {
	if ts < 946684800 {
		ts += pointEpoch
	}
	b := map[string]any{
		"latitude": 52.52, "longitude": 13.405, "altitude": 34.5, "heading": 90, "timestamp": ts,
		"speed_kmh": 36, "speed_mps": 10, "speed_mph": 22.37, "speed_knots": 19.44,
	}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

func without(m map[string]any, key string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

func ids(list []any) []string {
	out := []string{}
	for _, x := range list {
		out = append(out, x.(map[string]any)["id"].(string))
	}
	return out
}
