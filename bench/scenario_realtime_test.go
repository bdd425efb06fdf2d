package main

import (
	"encoding/json"
	"testing"
	"time"

	"hmid/internal/tracking"
)

func TestCreatedAtReadsAPointEvent(t *testing.T) {
	at := time.Date(2026, 11, 22, 8, 30, 0, 123456000, time.UTC)
	dev := "d1"
	pt := tracking.Point{ID: "p1", DeviceID: &dev, Timestamp: at.Add(-time.Second), CreatedAt: at}
	raw, err := json.Marshal(pt)
	if err != nil {
		t.Fatal(err)
	}
	msg := append(append([]byte(`{"type":"event","topic":"gps.device.d1","payload":`), raw...), '}')
	if got := createdAt(msg); !got.Equal(at) {
		t.Fatalf("createdAt = %v, want %v (message %s)", got, at, msg)
	}
	for _, bad := range []string{`{}`, `{"created_at":"yesterday"}`, `{"created_at":"2026`} {
		if got := createdAt([]byte(bad)); !got.IsZero() {
			t.Fatalf("createdAt(%s) = %v, want zero", bad, got)
		}
	}
}
