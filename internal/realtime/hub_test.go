package realtime

import (
	"context"
	"encoding/json"
	"testing"

	"hmid/internal/authn"
)

func TestPublishWithoutSubscribersIsCheap(t *testing.T) {
	h, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	payload := map[string]any{"latitude": 1.0}
	if n := testing.AllocsPerRun(100, func() { h.Publish(context.Background(), "gps.device.x", payload) }); n != 0 {
		t.Fatalf("%v allocations per publish with nobody subscribed", n)
	}
}

func TestEventFrame(t *testing.T) {
	var m Message
	if err := json.Unmarshal(eventFrame(`gps.device."x"`, json.RawMessage(`{"a":1}`)), &m); err != nil {
		t.Fatal(err)
	}
	if m.Type != "event" || m.Topic != `gps.device."x"` || string(m.Payload) != `{"a":1}` {
		t.Fatalf("%+v", m)
	}
}

func TestResolveTopic(t *testing.T) {
	gps := authn.NewPrincipal(authn.Principal{Kind: authn.KindAPIKey, UserID: "u1"}, authn.NewPermSet("gps:read"))
	if got, err := resolveTopic(gps, "audit.me"); err != nil || got != "audit.user.u1" {
		t.Fatalf("audit.me: %q %v", got, err)
	}
	if _, err := resolveTopic(gps, "gps.device.d-1_A"); err != nil {
		t.Fatal(err)
	}
	if _, err := resolveTopic(gps, "trips.t1"); err == nil {
		t.Fatal("trips without trips:read")
	}
	for _, bad := range []string{"gps.device.", "gps.device.a.b", "trips.", "audit.user.u1", "audit.me.x", ""} {
		if _, err := resolveTopic(gps, bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
	if IsBot(gps) || !IsBot(authn.NewPrincipal(authn.Principal{Kind: authn.KindAPIKey}, authn.NewPermSet("chatplatform:*"))) ||
		IsBot(authn.NewPrincipal(authn.Principal{Kind: authn.KindSession, SuperAdmin: true}, nil)) {
		t.Fatal("IsBot")
	}
}
