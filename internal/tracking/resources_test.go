package tracking_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apptest"
)

func TestDevices(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		op := operator(t, e, "devices:read", "devices:write", "devices:delete")
		reader := operator(t, e, "devices:read")
		e.Call(t, "GET", "/v1/devices", "", nil, http.StatusUnauthorized)
		e.Call(t, "POST", "/v1/devices", reader.Token, map[string]any{"name": "x"}, http.StatusForbidden)
		e.Call(t, "POST", "/v1/devices", op.Token, map[string]any{"description": "no name"}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/devices", op.Token, map[string]any{"name": 5}, http.StatusBadRequest)

		_, ownKey := e.NewAPIKey(t, op.ID, "gps:write")
		_, otherKey := e.NewAPIKey(t, reader.ID, "gps:write")
		e.Call(t, "POST", "/v1/devices", op.Token, map[string]any{"name": "x", "api_key_id": otherKey}, http.StatusForbidden)
		e.Call(t, "POST", "/v1/devices", op.Token, map[string]any{"name": "x", "api_key_id": uuid.NewString()}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/devices", op.Token, map[string]any{"name": "x", "api_key_id": "k"}, http.StatusBadRequest)

		a := create(t, e, "/v1/devices", op.Token, map[string]any{"name": "A", "description": "first", "device_type": "tracker", "api_key_id": ownKey})
		if a["api_key_id"] != ownKey || a["is_active"] != true || a["device_type"] != "tracker" {
			t.Fatalf("device = %v", a)
		}
		// Linking the key to B unlinks it from A.
		e.Clock.Advance(time.Second)
		b := create(t, e, "/v1/devices", op.Token, map[string]any{"name": "B", "api_key_id": ownKey})
		if got := data(e.Call(t, "GET", "/v1/devices/"+a["id"].(string), reader.Token, nil, http.StatusOK)); got["api_key_id"] != nil {
			t.Fatalf("A still holds the key: %v", got)
		}
		// A system key may link anyone's key.
		data(e.Call(t, "PATCH", "/v1/devices/"+a["id"].(string), sys, map[string]any{"api_key_id": otherKey}, http.StatusOK))

		l := e.Call(t, "GET", "/v1/devices?limit=1", reader.Token, nil, http.StatusOK).JSON()
		if p := l["pagination"].(map[string]any); p["total"] != 2.0 || p["total_pages"] != 2.0 || l["data"].([]any)[0].(map[string]any)["id"] != b["id"] {
			t.Fatalf("devices list = %v", l)
		}
		if lim := e.Call(t, "GET", "/v1/devices", reader.Token, nil, http.StatusOK).JSON()["pagination"].(map[string]any)["limit"]; lim != 10.0 {
			t.Fatalf("default limit = %v", lim)
		}

		id := b["id"].(string)
		e.Call(t, "PATCH", "/v1/devices/"+id, op.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/devices/"+id, op.Token, map[string]any{"name": ""}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/devices/"+id, op.Token, map[string]any{"api_key_id": otherKey}, http.StatusForbidden)
		e.Call(t, "PATCH", "/v1/devices/"+uuid.NewString(), op.Token, map[string]any{"name": "n"}, http.StatusNotFound)
		up := data(e.Call(t, "PATCH", "/v1/devices/"+id, op.Token, map[string]any{"is_active": false, "name": "B2", "api_key_id": nil}, http.StatusOK))
		if up["is_active"] != false || up["name"] != "B2" || up["api_key_id"] != nil {
			t.Fatalf("patched = %v", up)
		}
		e.Call(t, "GET", "/v1/devices/"+uuid.NewString(), reader.Token, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/devices/x", reader.Token, nil, http.StatusBadRequest)

		// Deleting a device keeps its points and trips.
		p := create(t, e, "/v1/gps", sys, point(5, map[string]any{"device_id": id}))
		tr := create(t, e, "/v1/trips", sys, map[string]any{"name": "t", "device_id": id})
		e.Call(t, "DELETE", "/v1/devices/"+id, reader.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/devices/"+id, op.Token, nil, http.StatusNoContent)
		e.Call(t, "DELETE", "/v1/devices/"+id, op.Token, nil, http.StatusNotFound)
		if g := data(e.Call(t, "GET", "/v1/gps/"+p["id"].(string), sys, nil, http.StatusOK)); g["device_id"] != nil {
			t.Fatalf("point after device deletion = %v", g)
		}
		if g := data(e.Call(t, "GET", "/v1/trips/"+tr["id"].(string), sys, nil, http.StatusOK)); g["device_id"] != nil {
			t.Fatalf("trip after device deletion = %v", g)
		}
	})
}

func TestLocationsAndContacts(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		op := operator(t, e, "locations:read", "locations:write")
		e.Call(t, "GET", "/v1/locations", "", nil, http.StatusUnauthorized)
		e.Call(t, "DELETE", "/v1/locations/"+uuid.NewString(), op.Token, nil, http.StatusForbidden)

		// A bad contact fails the whole creation.
		e.Call(t, "POST", "/v1/locations", op.Token, map[string]any{"name": "Z", "contacts": []any{map[string]any{"name": "ok"}, map[string]any{"phone": "1"}}}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/locations", op.Token, map[string]any{"name": "Z", "country": "Germany"}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/locations", op.Token, map[string]any{"name": "Z", "latitude": 100}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/locations", op.Token, map[string]any{"street": "no name"}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/locations", op.Token, map[string]any{"name": "Z", "contacts": []any{map[string]any{"name": "a", "email": "nope"}}}, http.StatusBadRequest)
		if n := e.Call(t, "GET", "/v1/locations", op.Token, nil, http.StatusOK).JSON()["pagination"].(map[string]any)["total"]; n != 0.0 {
			t.Fatalf("failed creations left %v locations", n)
		}

		hub := create(t, e, "/v1/locations", op.Token, map[string]any{"name": "Hub", "street": "Main St 1", "zip": "10115", "city": "Berlin", "country": "de",
			"latitude": 52.5, "longitude": 13.4, "notes": "gate 2",
			"contacts": []any{map[string]any{"name": "Ann", "phone": "+49 30 1", "email": "ann@example.test", "role": "manager"}, map[string]any{"name": "Bob"}}})
		id := hub["id"].(string)
		cs := hub["contacts"].([]any)
		if hub["country"] != "DE" || hub["is_active"] != true || len(cs) != 2 || cs[0].(map[string]any)["location_id"] != id {
			t.Fatalf("location = %v", hub)
		}
		create(t, e, "/v1/locations", sys, map[string]any{"name": "Airport"})
		create(t, e, "/v1/locations", sys, map[string]any{"name": "Zoo"})
		l := e.Call(t, "GET", "/v1/locations", op.Token, nil, http.StatusOK).JSON()
		names := []string{}
		for _, x := range l["data"].([]any) {
			names = append(names, x.(map[string]any)["name"].(string))
			if _, ok := x.(map[string]any)["contacts"]; ok {
				t.Fatalf("list item has contacts: %v", x)
			}
		}
		if len(names) != 3 || names[0] != "Airport" || names[1] != "Hub" || names[2] != "Zoo" || l["pagination"].(map[string]any)["limit"] != 10.0 {
			t.Fatalf("locations by name = %v", names)
		}
		got := data(e.Call(t, "GET", "/v1/locations/"+id, op.Token, nil, http.StatusOK))
		if len(got["contacts"].([]any)) != 2 {
			t.Fatalf("get = %v", got)
		}
		e.Call(t, "GET", "/v1/locations/"+uuid.NewString(), op.Token, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/locations/1", op.Token, nil, http.StatusBadRequest)

		e.Call(t, "PATCH", "/v1/locations/"+id, op.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/locations/"+id, op.Token, map[string]any{"contacts": []any{}}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/locations/"+uuid.NewString(), op.Token, map[string]any{"name": "x"}, http.StatusNotFound)
		up := data(e.Call(t, "PATCH", "/v1/locations/"+id, op.Token, map[string]any{"is_active": false, "city": "Potsdam", "latitude": nil}, http.StatusOK))
		if up["is_active"] != false || up["city"] != "Potsdam" || up["latitude"] != nil || up["street"] != "Main St 1" {
			t.Fatalf("patched = %v", up)
		}

		// Contacts.
		c := create(t, e, "/v1/locations/"+id+"/contacts", op.Token, map[string]any{"name": "Cid", "role": "driver"})
		cid := c["id"].(string)
		e.Call(t, "POST", "/v1/locations/"+id+"/contacts", op.Token, map[string]any{"role": "x"}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/locations/"+uuid.NewString()+"/contacts", op.Token, map[string]any{"name": "x"}, http.StatusNotFound)
		e.Call(t, "PATCH", "/v1/locations/"+id+"/contacts/"+cid, op.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/locations/"+id+"/contacts/"+uuid.NewString(), op.Token, map[string]any{"name": "x"}, http.StatusNotFound)
		e.Call(t, "PATCH", "/v1/locations/"+id+"/contacts/x", op.Token, map[string]any{"name": "x"}, http.StatusBadRequest)
		pc := data(e.Call(t, "PATCH", "/v1/locations/"+id+"/contacts/"+cid, op.Token, map[string]any{"email": "cid@example.test"}, http.StatusOK))
		if pc["email"] != "cid@example.test" || pc["name"] != "Cid" {
			t.Fatalf("contact = %v", pc)
		}
		e.Call(t, "DELETE", "/v1/locations/"+id+"/contacts/"+cid, op.Token, nil, http.StatusNoContent)
		e.Call(t, "DELETE", "/v1/locations/"+id+"/contacts/"+cid, op.Token, nil, http.StatusNotFound)

		// Deleting a location keeps trips, with the reference cleared.
		tr := create(t, e, "/v1/trips", sys, map[string]any{"name": "t", "origin_id": id})
		e.Call(t, "DELETE", "/v1/locations/"+id, sys, nil, http.StatusNoContent)
		e.Call(t, "DELETE", "/v1/locations/"+id, sys, nil, http.StatusNotFound)
		if g := data(e.Call(t, "GET", "/v1/trips/"+tr["id"].(string), sys, nil, http.StatusOK)); g["origin_id"] != nil {
			t.Fatalf("trip after location deletion = %v", g)
		}
	})
}

func TestGeofences(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		reader := operator(t, e, "geofences:read")
		ok := map[string]any{"name": "Yard", "latitude": 52.5, "longitude": 13.4, "radius_km": 1.5}
		for name, b := range map[string]any{
			"no radius":      without(ok, "radius_km"),
			"no latitude":    without(ok, "latitude"),
			"no longitude":   without(ok, "longitude"),
			"no name":        without(ok, "name"),
			"zero radius":    map[string]any{"name": "y", "latitude": 1, "longitude": 1, "radius_km": 0},
			"negative":       map[string]any{"name": "y", "latitude": 1, "longitude": 1, "radius_km": -2},
			"latitude range": map[string]any{"name": "y", "latitude": 91, "longitude": 1, "radius_km": 1},
			"lon range":      map[string]any{"name": "y", "latitude": 1, "longitude": -181, "radius_km": 1},
			"metadata array": map[string]any{"name": "y", "latitude": 1, "longitude": 1, "radius_km": 1, "metadata": []int{1}},
			"metadata str":   map[string]any{"name": "y", "latitude": 1, "longitude": 1, "radius_km": 1, "metadata": "x"},
		} {
			if r := e.Do(t, apptest.Req{Method: "POST", Path: "/v1/geofences", Token: sys, Body: b}); r.Status != http.StatusBadRequest {
				t.Errorf("%s: %d %s", name, r.Status, r.Body)
			}
		}
		e.Call(t, "POST", "/v1/geofences", reader.Token, ok, http.StatusForbidden)
		g := create(t, e, "/v1/geofences", sys, map[string]any{"name": "Yard", "latitude": 52.5, "longitude": 13.4, "radius_km": 1.5, "description": "d",
			"metadata": map[string]any{"zone": "A", "levels": []int{1, 2}}})
		id := g["id"].(string)
		if g["is_active"] != true || g["metadata"].(map[string]any)["zone"] != "A" {
			t.Fatalf("geofence = %v", g)
		}
		plain := create(t, e, "/v1/geofences", sys, ok)
		if m := plain["metadata"].(map[string]any); len(m) != 0 {
			t.Fatalf("default metadata = %v", m)
		}
		got := data(e.Call(t, "GET", "/v1/geofences/"+id, reader.Token, nil, http.StatusOK))
		if got["radius_km"] != 1.5 || got["metadata"].(map[string]any)["levels"].([]any)[1] != 2.0 {
			t.Fatalf("get = %v", got)
		}
		if l := e.Call(t, "GET", "/v1/geofences", reader.Token, nil, http.StatusOK).JSON(); l["pagination"].(map[string]any)["total"] != 2.0 {
			t.Fatalf("list = %v", l)
		}
		e.Call(t, "GET", "/v1/geofences/"+uuid.NewString(), reader.Token, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/geofences/no", reader.Token, nil, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/geofences/"+id, sys, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/geofences/"+id, sys, map[string]any{"radius_km": 0}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/geofences/"+id, sys, map[string]any{"metadata": nil}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/geofences/"+uuid.NewString(), sys, map[string]any{"name": "x"}, http.StatusNotFound)
		up := data(e.Call(t, "PATCH", "/v1/geofences/"+id, sys, map[string]any{"is_active": false, "radius_km": 3, "metadata": map[string]any{}}, http.StatusOK))
		if up["is_active"] != false || up["radius_km"] != 3.0 || up["name"] != "Yard" {
			t.Fatalf("patched = %v", up)
		}
		e.Call(t, "DELETE", "/v1/geofences/"+id, reader.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/geofences/"+id, sys, nil, http.StatusNoContent)
		e.Call(t, "DELETE", "/v1/geofences/"+id, sys, nil, http.StatusNotFound)
	})
}

func TestTripCategories(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		reader := operator(t, e, "trip_categories:read")
		e.Call(t, "POST", "/v1/trip-categories", reader.Token, map[string]any{"name": "x"}, http.StatusForbidden)
		for _, b := range []map[string]any{
			{}, {"name": "x", "color": "red"}, {"name": "x", "color": "#12345"}, {"name": "x", "color": "#GGG"},
			{"name": "x", "parent_id": uuid.NewString()}, {"name": "x", "parent_id": "p"}, {"name": "x", "sort_order": 1.5},
		} {
			e.Call(t, "POST", "/v1/trip-categories", sys, b, http.StatusBadRequest)
		}
		root := create(t, e, "/v1/trip-categories", sys, map[string]any{"name": "Root", "color": "#FFF", "sort_order": 2})
		if root["sort_order"] != 2.0 || root["color"] != "#fff" || root["parent_id"] != nil || root["is_active"] != true {
			t.Fatalf("root = %v", root)
		}
		rid := root["id"].(string)
		child := create(t, e, "/v1/trip-categories", sys, map[string]any{"name": "Child", "parent_id": rid, "color": "#1e90ff"})
		cid := child["id"].(string)
		grand := create(t, e, "/v1/trip-categories", sys, map[string]any{"name": "Alpha", "parent_id": cid})
		if grand["sort_order"] != 0.0 {
			t.Fatalf("default sort_order = %v", grand["sort_order"])
		}
		create(t, e, "/v1/trip-categories", sys, map[string]any{"name": "Beta"})
		list := e.Call(t, "GET", "/v1/trip-categories", reader.Token, nil, http.StatusOK).Array()
		names := []string{}
		for _, x := range list {
			names = append(names, x.(map[string]any)["name"].(string))
		}
		if len(names) != 4 || names[0] != "Alpha" || names[1] != "Beta" || names[2] != "Child" || names[3] != "Root" {
			t.Fatalf("order = %v", names)
		}
		// No cycles: not itself, not a descendant.
		e.Call(t, "PATCH", "/v1/trip-categories/"+rid, sys, map[string]any{"parent_id": rid}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/trip-categories/"+rid, sys, map[string]any{"parent_id": grand["id"]}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/trip-categories/"+rid, sys, map[string]any{"color": "blue"}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/trip-categories/"+rid, sys, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/trip-categories/"+uuid.NewString(), sys, map[string]any{"name": "x"}, http.StatusNotFound)
		up := data(e.Call(t, "PATCH", "/v1/trip-categories/"+grand["id"].(string), sys, map[string]any{"parent_id": rid, "is_active": false, "color": nil, "description": "d"}, http.StatusOK))
		if up["parent_id"] != rid || up["is_active"] != false || up["description"] != "d" {
			t.Fatalf("patched = %v", up)
		}
		got := data(e.Call(t, "GET", "/v1/trip-categories/"+cid, reader.Token, nil, http.StatusOK))
		if got["parent_id"] != rid || got["color"] != "#1e90ff" {
			t.Fatalf("get = %v", got)
		}
		e.Call(t, "GET", "/v1/trip-categories/"+uuid.NewString(), reader.Token, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/trip-categories/c", reader.Token, nil, http.StatusBadRequest)
		// Deleting a parent lifts its children to the top.
		e.Call(t, "DELETE", "/v1/trip-categories/"+rid, reader.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/trip-categories/"+rid, sys, nil, http.StatusNoContent)
		e.Call(t, "DELETE", "/v1/trip-categories/"+rid, sys, nil, http.StatusNotFound)
		if got := data(e.Call(t, "GET", "/v1/trip-categories/"+cid, reader.Token, nil, http.StatusOK)); got["parent_id"] != nil {
			t.Fatalf("child after parent deletion = %v", got)
		}
	})
}

func TestTripTemplates(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		sys := e.SystemKey
		op := operator(t, e, "trips:read", "trips:write")
		dev := create(t, e, "/v1/devices", sys, map[string]any{"name": "d"})["id"].(string)
		cat := create(t, e, "/v1/trip-categories", sys, map[string]any{"name": "c"})["id"].(string)
		o := create(t, e, "/v1/locations", sys, map[string]any{"name": "o"})["id"].(string)
		d := create(t, e, "/v1/locations", sys, map[string]any{"name": "d"})["id"].(string)
		for _, b := range []map[string]any{{}, {"name": "x", "device_id": uuid.NewString()}, {"name": "x", "origin_id": "o"}, {"name": "x", "default_weight_kg": -3}} {
			e.Call(t, "POST", "/v1/trip-templates", op.Token, b, http.StatusBadRequest)
		}
		e.Call(t, "POST", "/v1/trip-templates", operator(t, e, "trips:read").Token, map[string]any{"name": "x"}, http.StatusForbidden)
		tpl := create(t, e, "/v1/trip-templates", op.Token, map[string]any{"name": "Weekly", "description": "desc", "category_id": cat, "origin_id": o,
			"destination_id": d, "device_id": dev, "gps_logging_enabled": true, "default_weight_kg": 500, "notes": "notes", "tags": []string{"a", "b"}})
		id := tpl["id"].(string)
		create(t, e, "/v1/trip-templates", op.Token, map[string]any{"name": "Annual"})
		list := e.Call(t, "GET", "/v1/trip-templates", op.Token, nil, http.StatusOK).Array()
		if len(list) != 2 || list[0].(map[string]any)["name"] != "Annual" {
			t.Fatalf("templates = %v", list)
		}
		if g := data(e.Call(t, "GET", "/v1/trip-templates/"+id, op.Token, nil, http.StatusOK)); g["default_weight_kg"] != 500.0 || g["device_id"] != dev {
			t.Fatalf("get = %v", g)
		}
		e.Call(t, "GET", "/v1/trip-templates/"+uuid.NewString(), op.Token, nil, http.StatusNotFound)
		e.Call(t, "GET", "/v1/trip-templates/t", op.Token, nil, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/trip-templates/"+id, op.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/trip-templates/"+id, op.Token, map[string]any{"category_id": uuid.NewString()}, http.StatusBadRequest)
		e.Call(t, "PATCH", "/v1/trip-templates/"+uuid.NewString(), op.Token, map[string]any{"name": "x"}, http.StatusNotFound)
		if up := data(e.Call(t, "PATCH", "/v1/trip-templates/"+id, op.Token, map[string]any{"notes": "new notes"}, http.StatusOK)); up["notes"] != "new notes" || up["name"] != "Weekly" {
			t.Fatalf("patched = %v", up)
		}

		// create-trip copies the template into a draft.
		e.Call(t, "POST", "/v1/trip-templates/"+id+"/create-trip", op.Token, map[string]any{}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/trip-templates/"+id+"/create-trip", op.Token, map[string]any{"weight_kg": "heavy"}, http.StatusBadRequest)
		e.Call(t, "POST", "/v1/trip-templates/"+uuid.NewString()+"/create-trip", op.Token, map[string]any{"weight_kg": 1}, http.StatusNotFound)
		tr := create(t, e, "/v1/trip-templates/"+id+"/create-trip", op.Token, map[string]any{"weight_kg": 750.25})
		if tr["name"] != "Weekly (from template)" || tr["status"] != "draft" || tr["weight_kg"] != 750.25 || tr["description"] != "desc" ||
			tr["category_id"] != cat || tr["origin_id"] != o || tr["destination_id"] != d || tr["device_id"] != dev ||
			tr["gps_logging_enabled"] != true || tr["notes"] != "new notes" || len(tr["tags"].([]any)) != 2 {
			t.Fatalf("trip from template = %v", tr)
		}
		e.Call(t, "GET", "/v1/trips/"+tr["id"].(string), op.Token, nil, http.StatusOK)

		e.Call(t, "DELETE", "/v1/trip-templates/"+id, op.Token, nil, http.StatusForbidden)
		e.Call(t, "DELETE", "/v1/trip-templates/"+id, sys, nil, http.StatusNoContent)
		e.Call(t, "DELETE", "/v1/trip-templates/"+id, sys, nil, http.StatusNotFound)
	})
}

// TestNameOrderIgnoresCase lists mixed-case names the same way on both engines.
func TestNameOrderIgnoresCase(t *testing.T) {
	t.Parallel()
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		for _, n := range []string{"beta", "Alpha", "gamma", "Delta"} {
			create(t, e, "/v1/locations", e.SystemKey, map[string]any{"name": n})
			create(t, e, "/v1/trip-templates", e.SystemKey, map[string]any{"name": n})
			create(t, e, "/v1/trip-categories", e.SystemKey, map[string]any{"name": n})
		}
		names := func(list []any) string {
			var out []string
			for _, x := range list {
				out = append(out, x.(map[string]any)["name"].(string))
			}
			return strings.Join(out, ",")
		}
		const want = "Alpha,beta,Delta,gamma"
		if got := names(e.Call(t, "GET", "/v1/locations", e.SystemKey, nil, http.StatusOK).JSON()["data"].([]any)); got != want {
			t.Errorf("locations = %s", got)
		}
		if got := names(e.Call(t, "GET", "/v1/trip-templates", e.SystemKey, nil, http.StatusOK).Array()); got != want {
			t.Errorf("templates = %s", got)
		}
		if got := names(e.Call(t, "GET", "/v1/trip-categories", e.SystemKey, nil, http.StatusOK).Array()); got != want {
			t.Errorf("categories = %s", got)
		}
	})
}
