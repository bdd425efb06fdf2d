package tracking

import (
	"context"
	"math"
	"time"

	"hmid/internal/db"
)

// EarthRadius is the mean radius of the Earth in metres (IUGG, R1 of the
// WGS 84 ellipsoid), the radius of the sphere Distance measures on.
const EarthRadius = 6371008.8

// Distance is the great-circle distance in metres between two WGS 84
// positions in degrees, by the haversine formula on a sphere of
// EarthRadius (within 0.5 % of the ellipsoidal distance, plenty for a
// trip's length).
func Distance(lat1, lon1, lat2, lon2 float64) float64 {
	rad := math.Pi / 180
	dLat, dLon := (lat2-lat1)*rad, (lon2-lon1)*rad
	h := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * EarthRadius * math.Asin(math.Min(1, math.Sqrt(h)))
}

// TrackPoint is a position of a track.
type TrackPoint struct {
	Latitude, Longitude float64
	Time                time.Time
}

// Track is a trip's GPS track as a whole, for drawing it: the figures are
// those of every point, Path at most the number of points asked for.
type Track struct {
	Points     int     // how many points the trip has
	DistanceM  float64 // along the points in time order, in metres
	Start, End TrackPoint
	// The bounding box of every point, in degrees.
	MinLat, MaxLat, MinLon, MaxLon float64
	// Path is the track thinned evenly to at most the points asked for,
	// in time order; the first and the last point are always in it.
	Path []TrackPoint
}

// TripTrack reads the GPS track of the trip with id (a UUID, as on GET
// /v1/trips/{id}/gps): its points oldest first, summed up, with a path of
// at most maxPath points (at least 2). It reads the points once, keeping
// only the path, so a long trip costs one pass and little memory.
func (s *Service) TripTrack(ctx context.Context, id string, maxPath int) (Track, error) {
	t, err := s.Trip(ctx, id)
	if err != nil {
		return Track{}, err
	}
	var n int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM gps_points WHERE trip_id = $1`, t.ID).Scan(&n); err != nil {
		return Track{}, err
	}
	step := 1
	if maxPath = max(2, maxPath); n > maxPath {
		// Every step-th point, the last one added after: at most maxPath.
		step = (n - 1 + maxPath - 2) / (maxPath - 1)
	}
	rows, err := s.DB.QueryContext(ctx, `SELECT latitude, longitude, ts FROM gps_points WHERE trip_id = $1 ORDER BY ts, id`, t.ID)
	if err != nil {
		return Track{}, err
	}
	defer rows.Close()
	var tr Track
	kept := false // whether the last point read is in Path
	for rows.Next() {
		var p TrackPoint
		var ts int64
		if err := rows.Scan(&p.Latitude, &p.Longitude, &ts); err != nil {
			return Track{}, err
		}
		p.Time = db.FromTS(ts)
		if tr.Points == 0 {
			tr.Start = p
			tr.MinLat, tr.MaxLat, tr.MinLon, tr.MaxLon = p.Latitude, p.Latitude, p.Longitude, p.Longitude
		} else {
			tr.DistanceM += Distance(tr.End.Latitude, tr.End.Longitude, p.Latitude, p.Longitude)
			tr.MinLat, tr.MaxLat = math.Min(tr.MinLat, p.Latitude), math.Max(tr.MaxLat, p.Latitude)
			tr.MinLon, tr.MaxLon = math.Min(tr.MinLon, p.Longitude), math.Max(tr.MaxLon, p.Longitude)
		}
		kept = tr.Points%step == 0
		if kept {
			tr.Path = append(tr.Path, p)
		}
		tr.End = p
		tr.Points++
	}
	if err := rows.Err(); err != nil {
		return Track{}, err
	}
	if tr.Points > 0 && !kept {
		tr.Path = append(tr.Path, tr.End)
	}
	return tr, nil
}
