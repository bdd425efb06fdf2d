package admin

import (
	"strconv"
	"strings"
	"testing"

	"hmid/internal/tracking"
)

func vertices(t *testing.T, line string) []xy {
	t.Helper()
	var out []xy
	for _, v := range strings.Fields(line) {
		a, b, _ := strings.Cut(v, ",")
		x, err1 := strconv.ParseFloat(a, 64)
		y, err2 := strconv.ParseFloat(b, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("vertex %q", v)
		}
		out = append(out, xy{x, y})
	}
	return out
}

func box(path ...tracking.TrackPoint) tracking.Track {
	tr := tracking.Track{Points: len(path), Path: path, Start: path[0], End: path[len(path)-1],
		MinLat: path[0].Latitude, MaxLat: path[0].Latitude, MinLon: path[0].Longitude, MaxLon: path[0].Longitude}
	for _, p := range path {
		tr.MinLat, tr.MaxLat = min(tr.MinLat, p.Latitude), max(tr.MaxLat, p.Latitude)
		tr.MinLon, tr.MaxLon = min(tr.MinLon, p.Longitude), max(tr.MaxLon, p.Longitude)
	}
	return tr
}

// TestDrawTrack: the track's bounding box fills the drawing inside the
// margin along its longer side, centred, north up, with one scale.
func TestDrawTrack(t *testing.T) {
	// Near the equator a degree is (almost) as long either way: a 2°×1°
	// box is limited by the width (592 units for 2°), centred vertically.
	d := drawTrack(box(tracking.TrackPoint{Latitude: 0, Longitude: 0}, tracking.TrackPoint{Latitude: 1, Longitude: 2},
		tracking.TrackPoint{Latitude: 0.5, Longitude: 1}))
	v := vertices(t, d.Line)
	want := []xy{{24, 328}, {616, 32}, {320, 180}}
	if len(v) != 3 || v[0] != want[0] || v[1] != want[1] || v[2] != want[2] {
		t.Fatalf("vertices %v, want %v", v, want)
	}
	if d.Start != want[0] || d.End != want[2] {
		t.Fatalf("markers %v %v", d.Start, d.End)
	}
	// A tall box is limited by the height; at 60° north a degree of
	// longitude is half a degree of latitude long.
	d = drawTrack(box(tracking.TrackPoint{Latitude: 59.5, Longitude: 10}, tracking.TrackPoint{Latitude: 60.5, Longitude: 11}))
	v = vertices(t, d.Line)
	if v[0].Y != 336 || v[1].Y != 24 || v[1].X-v[0].X < 155.9 || v[1].X-v[0].X > 156.1 || (v[0].X+v[1].X)/2 != 320 {
		t.Fatalf("tall box at 60°: %v", v)
	}
	// A scale bar of a round length no longer than a quarter of the width.
	if d.Scale == nil || d.Scale.Label != "50 km" || d.Scale.X2-d.Scale.X1 > 160 || d.Scale.X2-d.Scale.X1 < 160/2.5 {
		t.Fatalf("scale bar %+v", d.Scale)
	}
	// One spot: in the middle, without a scale.
	d = drawTrack(box(tracking.TrackPoint{Latitude: 53.5, Longitude: 9.9}, tracking.TrackPoint{Latitude: 53.5, Longitude: 9.9}))
	if d.Line != "320,180 320,180" || d.Scale != nil {
		t.Fatalf("a single spot: %q %+v", d.Line, d.Scale)
	}
	// A track due east: a horizontal line through the middle.
	d = drawTrack(box(tracking.TrackPoint{Latitude: 10, Longitude: 1}, tracking.TrackPoint{Latitude: 10, Longitude: 2}))
	if d.Line != "24,180 616,180" {
		t.Fatalf("due east: %q", d.Line)
	}
}

func TestNiceLengthAndDistance(t *testing.T) {
	for in, want := range map[float64]float64{0.5: 0, 1: 1, 1.9: 1, 4.99: 2, 5: 5, 730: 500, 1999: 1000, 26000: 20000} {
		if got := niceLength(in); got != want {
			t.Errorf("niceLength(%v) = %v, want %v", in, got, want)
		}
	}
	for _, c := range []struct {
		lang string
		m    float64
		want string
	}{{"en", 0, "0 m"}, {"en", 999.4, "999 m"}, {"en", 1234.5, "1.23 km"}, {"de", 1234.5, "1,23 km"}, {"de", 12, "12 m"}} {
		if got := formatDistance(c.lang, c.m); got != c.want {
			t.Errorf("formatDistance(%s, %v) = %q, want %q", c.lang, c.m, got, c.want)
		}
	}
}
