package admin

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/httpx"
	"hmid/internal/tracking"
	"hmid/internal/web"
)

// TrackingPages is /admin/tracking: the devices, the trips with their
// status, and a trip's status history and GPS track, drawn as an SVG of
// its own (no map tiles: the console works offline). It calls
// tracking.Service as GET /v1/devices, /v1/trips, /v1/trips/{id},
// /v1/trips/{id}/history and /v1/trips/{id}/gps do.
type TrackingPages struct {
	H        *web.Handler
	Tracking *tracking.Service
}

// Page sizes of the tracking pages.
const (
	trackingPageSize = 20
	// trackMaxPath bounds the vertices of a drawn track: more would not
	// show on a drawing 640 units wide, only make the page heavy.
	trackMaxPath = 1000
)

// trackingStatuses are the trip statuses, in lifecycle order.
var trackingStatuses = []string{tracking.StatusDraft, tracking.StatusActive, tracking.StatusPaused, tracking.StatusCompleted}

// statusOption is an entry of the trip status filter.
type statusOption struct {
	Value    string
	Selected bool
}

// trackingIndexView is the data of /admin/tracking: each list shows for
// holders of its REST route's permission.
type trackingIndexView struct {
	ShowDevices, ShowTrips bool
	Devices                []tracking.Device
	DevicesTotal           int
	DevicesNav             pageNav
	Trips                  []tracking.Trip
	TripsTotal             int
	TripsNav               pageNav
	Status                 string
	Statuses               []statusOption
	StatusError            string
}

// Index is GET /admin/tracking: the devices (devices_page) and the trips
// (trips_page, status) as GET /v1/devices and GET /v1/trips list them.
func (tp *TrackingPages) Index(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p := authn.From(ctx)
	q := r.URL.Query()
	status := http.StatusOK
	v := trackingIndexView{ShowDevices: p.Can("devices:read"), ShowTrips: p.Can("trips:read"), Status: q.Get("status")}
	if v.ShowDevices {
		pg := httpx.ParsePageValues(q.Get("devices_page"), "", trackingPageSize)
		var err error
		if v.Devices, v.DevicesTotal, err = tp.Tracking.Devices(ctx, pg); err != nil {
			tp.H.Fail(w, r, err)
			return
		}
		v.DevicesNav = newPageNav(pg, v.DevicesTotal, "admin.tracking.devices", func(n int) string {
			return web.WithParam("/admin/tracking", q, "devices_page", strconv.Itoa(n)) + "#devices"
		})
	}
	if v.ShowTrips {
		for _, s := range trackingStatuses {
			v.Statuses = append(v.Statuses, statusOption{Value: s, Selected: s == v.Status})
		}
		pg := httpx.ParsePageValues(q.Get("trips_page"), "", trackingPageSize)
		var err error
		v.Trips, v.TripsTotal, err = tp.Tracking.Trips(ctx, v.Status, pg)
		switch {
		case apperr.FieldOf(err) == "status":
			v.StatusError, status = tp.H.ErrorText(r, err), tp.H.Status(w, err)
		case err != nil:
			tp.H.Fail(w, r, err)
			return
		default:
			v.TripsNav = newPageNav(pg, v.TripsTotal, "admin.tracking.trips", func(n int) string {
				return web.WithParam("/admin/tracking", q, "trips_page", strconv.Itoa(n)) + "#trips"
			})
		}
	}
	tp.H.Console(w, r, status, "admin_tracking", web.ConsoleView{Title: "admin.tracking.title", Section: "tracking", Data: v})
}

// tripView is the data of /admin/tracking/trips/{id}.
type tripView struct {
	Trip tracking.Trip
	// StartPos, EndPos and Weight are the trip's optional figures written
	// out, "" when not set.
	StartPos, EndPos, Weight string
	History                  []historyRow
	Track                    tracking.Track
	Drawing                  *trackDrawing // nil without points
	// Distance is the track's length for the reader's language.
	Distance  string
	Points    []tracking.Point
	PointsNav pageNav
	// DeviceName is the name of the trip's device for readers who may read
	// devices (devices:read, as GET /v1/devices/{id}); "" otherwise, when
	// the page shows the device's id alone.
	DeviceName string
}

// historyRow is a status change with where it happened written out.
type historyRow struct {
	tracking.HistoryEntry
	Where string
}

// position writes a latitude and longitude in degrees, "" unless both are set.
func position(lat, lon *float64) string {
	if lat == nil || lon == nil {
		return ""
	}
	return fmt.Sprintf("%.5f, %.5f", *lat, *lon)
}

// Trip is GET /admin/tracking/trips/{id}: the trip, its status history and
// its GPS track, drawn and summed up, with its points in pages (page).
func (tp *TrackingPages) Trip(w http.ResponseWriter, r *http.Request) {
	tp.H.Show(w, r, http.StatusOK, "admin_tracking_trip", web.ConsoleView{Title: "admin.tracking.trip.title", Section: "tracking"},
		func() (any, error) { return tp.tripView(r, chi.URLParam(r, "id")) })
}

// tripView is the trip id with its history, its track and the page of
// its points the query asks for.
func (tp *TrackingPages) tripView(r *http.Request, id string) (v tripView, err error) {
	ctx := r.Context()
	t, err := tp.Tracking.Trip(ctx, id)
	if err != nil {
		return v, err
	}
	v = tripView{Trip: t, StartPos: position(t.StartLatitude, t.StartLongitude), EndPos: position(t.EndLatitude, t.EndLongitude)}
	if t.WeightKg != nil {
		v.Weight = strconv.FormatFloat(*t.WeightKg, 'f', -1, 64) + " kg"
	}
	if t.DeviceID != nil && authn.From(ctx).Can("devices:read") {
		if d, err := tp.Tracking.Device(ctx, *t.DeviceID); err == nil {
			v.DeviceName = d.Name
		} else if apperr.KindOf(err) != apperr.NotFound {
			return v, err
		}
	}
	history, err := tp.Tracking.TripHistory(ctx, t.ID)
	if err != nil {
		return v, err
	}
	for _, e := range history {
		v.History = append(v.History, historyRow{HistoryEntry: e, Where: position(e.Latitude, e.Longitude)})
	}
	if v.Track, err = tp.Tracking.TripTrack(ctx, t.ID, trackMaxPath); err != nil {
		return v, err
	}
	lang := tp.H.UserLanguage(r, authn.From(ctx))
	v.Distance = formatDistance(lang, v.Track.DistanceM)
	if v.Track.Points > 0 {
		v.Drawing = drawTrack(v.Track)
	}
	q := r.URL.Query()
	pg := httpx.ParsePageValues(q.Get("page"), "", trackingPageSize)
	var total int
	if v.Points, total, err = tp.Tracking.TripPoints(ctx, t.ID, pg); err != nil {
		return v, err
	}
	v.PointsNav = newPageNav(pg, total, "admin.tracking.pointlist", func(n int) string {
		return web.WithParam("/admin/tracking/trips/"+t.ID, q, "page", strconv.Itoa(n)) + "#points"
	})
	return v, nil
}

// formatDistance writes metres as m below a kilometre, else as km with two
// decimals, with the decimal comma in German.
func formatDistance(lang string, m float64) string {
	s := fmt.Sprintf("%.0f m", m)
	if m >= 1000 {
		s = fmt.Sprintf("%.2f km", m/1000)
	}
	if lang == "de" {
		s = strings.Replace(s, ".", ",", 1)
	}
	return s
}

// The drawing's coordinate system (the SVG viewBox): 640×360 units, with
// a margin that keeps the markers inside.
const (
	drawWidth, drawHeight = 640.0, 360.0
	drawMargin            = 24.0
)

// xy is a point of the drawing.
type xy struct{ X, Y float64 }

// trackDrawing is a track in the drawing's coordinates, for the template.
type trackDrawing struct {
	Width, Height float64
	Line          string // the polyline's points attribute: "x,y x,y …"
	Start, End    xy
	// Scale is a scale bar (its length in units and label), absent when the
	// track is a single spot.
	Scale *scaleBar
	// North is the tip of the arrow that points north, in a corner.
	North xy
}

// scaleBar is a round distance drawn to scale.
type scaleBar struct {
	X1, X2, Y float64
	Label     string
}

// drawTrack projects a track into the drawing, north up: longitude is
// scaled by the cosine of the box's middle latitude (an equirectangular
// projection, true to shape for the few kilometres of a trip), and the
// box is fitted into the drawing with equal scale on both axes, centred.
func drawTrack(tr tracking.Track) *trackDrawing {
	k := math.Cos((tr.MinLat + tr.MaxLat) / 2 * math.Pi / 180)
	spanX, spanY := (tr.MaxLon-tr.MinLon)*k, tr.MaxLat-tr.MinLat
	scale := 0.0 // units per degree of latitude; 0 for a single spot
	for _, s := range []float64{(drawWidth - 2*drawMargin) / spanX, (drawHeight - 2*drawMargin) / spanY} {
		if !math.IsInf(s, 0) && !math.IsNaN(s) && (scale == 0 || s < scale) {
			scale = s
		}
	}
	offX, offY := (drawWidth-spanX*scale)/2, (drawHeight-spanY*scale)/2
	at := func(p tracking.TrackPoint) xy {
		return xy{X: round1(offX + (p.Longitude-tr.MinLon)*k*scale), Y: round1(drawHeight - offY - (p.Latitude-tr.MinLat)*scale)}
	}
	d := &trackDrawing{Width: drawWidth, Height: drawHeight, Start: at(tr.Start), End: at(tr.End), North: xy{X: drawWidth - 14, Y: 8}}
	parts := make([]string, len(tr.Path))
	for i, p := range tr.Path {
		c := at(p)
		parts[i] = strconv.FormatFloat(c.X, 'f', -1, 64) + "," + strconv.FormatFloat(c.Y, 'f', -1, 64)
	}
	d.Line = strings.Join(parts, " ")
	if scale > 0 {
		perMetre := scale / (tracking.EarthRadius * math.Pi / 180)
		if m := niceLength(drawWidth / 4 / perMetre); m > 0 {
			label := fmt.Sprintf("%g m", m)
			if m >= 1000 {
				label = fmt.Sprintf("%g km", m/1000)
			}
			d.Scale = &scaleBar{X1: drawMargin, X2: round1(drawMargin + m*perMetre), Y: drawHeight - 8, Label: label}
		}
	}
	return d
}

// niceLength is the largest 1, 2 or 5 times a power of ten not above
// limit metres, at least 1 m (0 when limit is below that).
func niceLength(limit float64) float64 {
	if limit < 1 {
		return 0
	}
	p := math.Pow(10, math.Floor(math.Log10(limit)))
	for _, f := range []float64{5, 2, 1} {
		if f*p <= limit {
			return f * p
		}
	}
	return p
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

func init() {
	web.AddMessages(map[string]map[string]string{
		"en": {
			"admin.tracking.title":            "Tracking",
			"admin.tracking.devices":          "Devices",
			"admin.tracking.nodevices":        "No devices are registered.",
			"admin.tracking.col.device":       "Device",
			"admin.tracking.col.type":         "Type",
			"admin.tracking.col.key":          "API key",
			"admin.tracking.col.state":        "State",
			"admin.tracking.col.created":      "Created",
			"admin.tracking.active":           "Active",
			"admin.tracking.inactive":         "Inactive",
			"admin.tracking.linked":           "Linked",
			"admin.tracking.nokey":            "None",
			"admin.tracking.trips":            "Trips",
			"admin.tracking.notrips":          "No trips match.",
			"admin.tracking.filter":           "Trip status",
			"admin.tracking.all":              "All statuses",
			"admin.tracking.apply":            "Show",
			"admin.tracking.col.trip":         "Trip",
			"admin.tracking.col.status":       "Status",
			"admin.tracking.col.started":      "Started",
			"admin.tracking.col.ended":        "Ended",
			"admin.tracking.status.draft":     "Draft",
			"admin.tracking.status.active":    "Active",
			"admin.tracking.status.paused":    "Paused",
			"admin.tracking.status.completed": "Completed",
			"admin.tracking.count":            "%d in all",
			"admin.tracking.pages":            "Pages of %s",
			"admin.tracking.page":             "Page %d of %d",
			"admin.tracking.prev":             "Previous page",
			"admin.tracking.next":             "Next page",
			"admin.tracking.back":             "All trips",
			"admin.tracking.trip.title":       "Trip",
			"admin.tracking.details":          "Details",
			"admin.tracking.description":      "Description",
			"admin.tracking.device":           "Device",
			"admin.tracking.logging":          "GPS logging",
			"admin.tracking.on":               "On",
			"admin.tracking.off":              "Off",
			"admin.tracking.created":          "Created",
			"admin.tracking.weight":           "Weight",
			"admin.tracking.tags":             "Tags",
			"admin.tracking.notes":            "Notes",
			"admin.tracking.track":            "GPS track",
			"admin.tracking.track.alt":        "The trip's GPS track from start to end, drawn to scale with north up.",
			"admin.tracking.track.summary":    "%d points over %s.",
			"admin.tracking.notrack":          "No GPS points were recorded for this trip.",
			"admin.tracking.distance":         "Distance",
			"admin.tracking.points":           "Points",
			"admin.tracking.start":            "Start",
			"admin.tracking.end":              "End",
			"admin.tracking.history":          "Status history",
			"admin.tracking.nohistory":        "The status has not changed since the trip was created.",
			"admin.tracking.col.change":       "Change",
			"admin.tracking.col.when":         "When",
			"admin.tracking.col.by":           "By",
			"admin.tracking.col.where":        "Where",
			"admin.tracking.pointlist":        "Points",
			"admin.tracking.col.time":         "Time",
			"admin.tracking.col.position":     "Position",
			"admin.tracking.col.speed":        "Speed",
			"admin.tracking.col.altitude":     "Altitude",
		},
		"de": {
			"admin.tracking.title":            "Tracking",
			"admin.tracking.devices":          "Geräte",
			"admin.tracking.nodevices":        "Es sind keine Geräte registriert.",
			"admin.tracking.col.device":       "Gerät",
			"admin.tracking.col.type":         "Art",
			"admin.tracking.col.key":          "API-Schlüssel",
			"admin.tracking.col.state":        "Zustand",
			"admin.tracking.col.created":      "Angelegt",
			"admin.tracking.active":           "Aktiv",
			"admin.tracking.inactive":         "Inaktiv",
			"admin.tracking.linked":           "Verknüpft",
			"admin.tracking.nokey":            "Keiner",
			"admin.tracking.trips":            "Fahrten",
			"admin.tracking.notrips":          "Keine passenden Fahrten.",
			"admin.tracking.filter":           "Status der Fahrt",
			"admin.tracking.all":              "Alle Status",
			"admin.tracking.apply":            "Anzeigen",
			"admin.tracking.col.trip":         "Fahrt",
			"admin.tracking.col.status":       "Status",
			"admin.tracking.col.started":      "Begonnen",
			"admin.tracking.col.ended":        "Beendet",
			"admin.tracking.status.draft":     "Entwurf",
			"admin.tracking.status.active":    "Aktiv",
			"admin.tracking.status.paused":    "Pausiert",
			"admin.tracking.status.completed": "Abgeschlossen",
			"admin.tracking.count":            "%d insgesamt",
			"admin.tracking.pages":            "Seiten: %s",
			"admin.tracking.page":             "Seite %d von %d",
			"admin.tracking.prev":             "Vorherige Seite",
			"admin.tracking.next":             "Nächste Seite",
			"admin.tracking.back":             "Alle Fahrten",
			"admin.tracking.trip.title":       "Fahrt",
			"admin.tracking.details":          "Angaben",
			"admin.tracking.description":      "Beschreibung",
			"admin.tracking.device":           "Gerät",
			"admin.tracking.logging":          "GPS-Aufzeichnung",
			"admin.tracking.on":               "An",
			"admin.tracking.off":              "Aus",
			"admin.tracking.created":          "Angelegt",
			"admin.tracking.weight":           "Gewicht",
			"admin.tracking.tags":             "Schlagwörter",
			"admin.tracking.notes":            "Notizen",
			"admin.tracking.track":            "GPS-Strecke",
			"admin.tracking.track.alt":        "Die GPS-Strecke der Fahrt vom Start zum Ziel, maßstabsgetreu, Norden oben.",
			"admin.tracking.track.summary":    "%d Punkte über %s.",
			"admin.tracking.notrack":          "Für diese Fahrt wurden keine GPS-Punkte aufgezeichnet.",
			"admin.tracking.distance":         "Strecke",
			"admin.tracking.points":           "Punkte",
			"admin.tracking.start":            "Start",
			"admin.tracking.end":              "Ziel",
			"admin.tracking.history":          "Statusverlauf",
			"admin.tracking.nohistory":        "Der Status hat sich seit dem Anlegen der Fahrt nicht geändert.",
			"admin.tracking.col.change":       "Änderung",
			"admin.tracking.col.when":         "Wann",
			"admin.tracking.col.by":           "Durch",
			"admin.tracking.col.where":        "Wo",
			"admin.tracking.pointlist":        "Punkte",
			"admin.tracking.col.time":         "Zeit",
			"admin.tracking.col.position":     "Position",
			"admin.tracking.col.speed":        "Geschwindigkeit",
			"admin.tracking.col.altitude":     "Höhe",
		},
	})
}
