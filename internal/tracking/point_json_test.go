package tracking

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestPointJSONMatchesReflection: the hand-written encoding of a point is
// byte for byte what encoding/json makes of its fields by reflection.
func TestPointJSONMatchesReflection(t *testing.T) {
	t.Parallel()
	type plain Point // the same fields without the MarshalJSON method
	r := rand.New(rand.NewPCG(1, 2))
	// The constant -0.0 is +0 in Go (constant arithmetic is exact and has
	// no signed zero), so negative zero is made with Copysign.
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 52.520008, 13.404954, 1e-7, -3.5e-9, 1e-6, 123456789.125, 1e21, -2.5e22, 1e20, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1 + 0.2}
	pick := func() float64 {
		if r.IntN(3) == 0 {
			return floats[r.IntN(len(floats))]
		}
		return (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(30)-12))
	}
	opt := func() *float64 {
		if r.IntN(2) == 0 {
			return nil
		}
		v := pick()
		return &v
	}
	ids := []string{"018f3c1e-7b2a-7c3d-9e4f-0123456789ab", "", `odd "id" <&> \ é` + "\n"}
	optID := func() *string {
		if r.IntN(3) == 0 {
			return nil
		}
		return &ids[r.IntN(len(ids))]
	}
	for i := range 2000 {
		p := Point{
			ID: ids[r.IntN(len(ids))], DeviceID: optID(), TripID: optID(),
			Latitude: pick(), Longitude: pick(), Altitude: pick(), Heading: pick(),
			Timestamp: time.Unix(r.Int64N(4e9), r.Int64N(1e9)*int64(r.IntN(2))).UTC(),
			SpeedKmh:  pick(), SpeedMps: pick(), SpeedMph: pick(), SpeedKnots: pick(),
			PDOP: opt(), HDOP: opt(), VDOP: opt(),
			CreatedAt: time.UnixMicro(r.Int64N(4e15)).UTC(),
		}
		for _, html := range []bool{true, false} {
			if got, want := encode(t, p, html), encode(t, plain(p), html); !bytes.Equal(got, want) {
				t.Fatalf("point %d (HTML escaping %v):\n got %s\nwant %s", i, html, got, want)
			}
		}
	}
	// Negative zero in every float field, so it is tested whatever the
	// generator picks: encoding/json writes it as -0.
	nz := math.Copysign(0, -1)
	z := Point{Latitude: nz, Longitude: nz, Altitude: nz, Heading: nz, SpeedKmh: nz, SpeedMps: nz, SpeedMph: nz, SpeedKnots: nz,
		PDOP: &nz, HDOP: &nz, VDOP: &nz, Timestamp: time.Unix(0, 0).UTC(), CreatedAt: time.Unix(0, 0).UTC()}
	if got, want := encode(t, z, false), encode(t, plain(z), false); !bytes.Equal(got, want) || !bytes.Contains(got, []byte(`"latitude":-0,`)) {
		t.Fatalf("negative zero:\n got %s\nwant %s", got, want)
	}
	if _, err := json.Marshal(Point{Latitude: math.NaN()}); err == nil {
		t.Fatal("NaN encoded")
	}
}

// encode encodes v as httpx.JSON does (escapeHTML false) or as json.Marshal does.
func encode(t *testing.T, v any, escapeHTML bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
