package tracking

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// MarshalJSON encodes p exactly as encoding/json encodes its fields, without
// reflection: GPS points are the most numerous objects hmid answers with
// (a hundred to a listing page), and reflection was a quarter of a
// listing's CPU. TestPointJSONMatchesReflection holds the two encodings equal.
func (p Point) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 448)
	b = append(b, `{"id":`...)
	b = appendString(b, p.ID)
	b = append(b, `,"device_id":`...)
	b = appendOptString(b, p.DeviceID)
	b = append(b, `,"trip_id":`...)
	b = appendOptString(b, p.TripID)
	for _, f := range []struct {
		name string
		v    float64
	}{{`,"latitude":`, p.Latitude}, {`,"longitude":`, p.Longitude}, {`,"altitude":`, p.Altitude}, {`,"heading":`, p.Heading}} {
		b = append(b, f.name...)
		var err error
		if b, err = appendFloat(b, f.v); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"timestamp":`...)
	b = appendTime(b, p.Timestamp)
	for _, f := range []struct {
		name string
		v    *float64
	}{
		{`,"speed_kmh":`, &p.SpeedKmh}, {`,"speed_mps":`, &p.SpeedMps}, {`,"speed_mph":`, &p.SpeedMph},
		{`,"speed_knots":`, &p.SpeedKnots}, {`,"pdop":`, p.PDOP}, {`,"hdop":`, p.HDOP}, {`,"vdop":`, p.VDOP},
	} {
		b = append(b, f.name...)
		if f.v == nil {
			b = append(b, "null"...)
			continue
		}
		var err error
		if b, err = appendFloat(b, *f.v); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"created_at":`...)
	b = appendTime(b, p.CreatedAt)
	return append(b, '}'), nil
}

// appendFloat formats f as encoding/json does: shortest representation,
// exponent form only below 1e-6 and from 1e21, with a two-digit exponent
// trimmed to one digit ("1e-7", not "1e-07").
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("tracking: unsupported float %v", f)
	}
	abs, format := math.Abs(f), byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// appendString appends s as a JSON string. Ids are plain ASCII and are
// copied as they are; anything else takes encoding/json's escaping, without
// HTML escaping: encoding/json applies that (or not) to a marshaler's
// output itself, as its encoder is set.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s)
			return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func appendOptString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendString(b, *s)
}

// appendTime appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds as needed); hmid's times are UTC and within years 0–9999.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}
