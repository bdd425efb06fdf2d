package webhooks_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/clock/clocktest"
	"hmid/internal/db"
	"hmid/internal/dbtest"
	"hmid/internal/httpx"
	"hmid/internal/outbound"
	"hmid/internal/secretbox"
	"hmid/internal/webhooks"
)

var start = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

// loopback lets the tests' receivers on 127.0.0.1 be reached.
var loopback = outbound.Policy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}

// instance is one hmid process as far as webhooks go: its own audit
// writer, service (with its own subscription set) and worker on a database.
type instance struct {
	d      *db.DB
	clock  *clocktest.Fake
	audit  *audit.Writer
	s      *webhooks.Service
	worker *webhooks.Worker
}

// key is the service key every instance of a test shares (as
// HMID_SECRET_KEY is shared), so one opens what another sealed.
var key = make([]byte, secretbox.KeySize)

func newInstance(t testing.TB, d *db.DB, clk *clocktest.Fake, policy outbound.Policy) *instance {
	t.Helper()
	box, err := secretbox.New(key)
	if err != nil {
		t.Fatal(err)
	}
	w := &audit.Writer{DB: d, Clock: clk}
	s := &webhooks.Service{DB: d, Clock: clk, Box: box, Audit: w, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Outbound: policy, AllowHTTP: true}
	if err := s.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.Forward = s
	return &instance{d: d, clock: clk, audit: w, s: s, worker: webhooks.NewWorker(s, policy.Client())}
}

// eachInstance runs test on one instance, on a fake clock at start, over
// each database engine.
func eachInstance(t *testing.T, test func(t *testing.T, in *instance, clk *clocktest.Fake)) {
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		clk := clocktest.NewFake(start)
		test(t, newInstance(t, eng.Open(t), clk, loopback), clk)
	})
}

// twoInstances are two instances on one PostgreSQL database, as two hmid
// processes share one; the test is skipped without PostgreSQL.
func twoInstances(t *testing.T) (a, b *instance) {
	if dbtest.PostgresURL() == "" {
		t.Skip("HMID_TEST_POSTGRES_URL is not set")
	}
	eng := dbtest.Engine{Name: "postgres", URL: dbtest.Postgres(t)}
	clk := clocktest.NewFake(start)
	return newInstance(t, eng.Open(t), clk, loopback), newInstance(t, eng.Open(t), clk, loopback)
}

func (in *instance) endpoint(t testing.TB, url string, types ...string) webhooks.Endpoint {
	t.Helper()
	e, err := in.s.Create(context.Background(), nil, audit.Event{}, webhooks.Input{
		URL: httpx.Opt[string]{Set: true, Value: url}, EventTypes: httpx.Opt[[]string]{Set: true, Value: types}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (in *instance) record(t testing.TB, eventType string) string {
	t.Helper()
	id, err := in.audit.Record(context.Background(), in.d, audit.Event{EventType: eventType, ResourceType: "oauth_client",
		ResourceID: "c1", Description: "test event", Metadata: map[string]any{"n": 1}})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func (in *instance) run(t *testing.T) int {
	t.Helper()
	n, err := in.worker.RunOnce(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// longestDelay is the longest wait the schedule may pick after the
// attempts-th failure (its jitter at the top).
func longestDelay(attempts int) time.Duration {
	exact := webhooks.Schedule
	exact.Jitter = 0
	return time.Duration(float64(exact.Delay(attempts))*(1+webhooks.Schedule.Jitter)) + time.Second
}

// checkSigned verifies every request with the independent verifier.
func checkSigned(t *testing.T, secret string, got []received, now time.Time) {
	t.Helper()
	for _, r := range got {
		if err := verify(secret, r.Header, r.Body, now); err != nil {
			t.Errorf("webhook %s does not verify: %v", r.ID, err)
		}
	}
}

// TestSignMatchesTheSpecificationsVector: the test vector the Standard
// Webhooks libraries share, and the independent verifier agrees.
func TestSignMatchesTheSpecificationsVector(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	ts := time.Unix(1614265330, 0)
	body := []byte(`{"test": 2432232314}`)
	got, err := webhooks.Sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", ts, body)
	if err != nil || got != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("Sign = %q, %v", got, err)
	}
	h := http.Header{}
	h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", "v1,bm90IGl0 "+got)
	if err := verify(secret, h, body, ts); err != nil {
		t.Fatal(err)
	}
	if err := verify(secret, h, []byte(`{"test": 2432232315}`), ts); err == nil {
		t.Fatal("a changed body verifies")
	}
	s, err := webhooks.NewSecret()
	if err != nil || !strings.HasPrefix(s, "whsec_") || len(s) != len("whsec_")+44 {
		t.Fatalf("NewSecret = %q, %v", s, err)
	}
}

// TestDeliveredOncePerEndpoint: each subscribed endpoint gets the event
// once, signed, as {type, timestamp, data}; one that wants other types gets
// nothing.
func TestDeliveredOncePerEndpoint(t *testing.T) {
	eachInstance(t, func(t *testing.T, in *instance, clk *clocktest.Fake) {
		a, b, c := newReceiver(t, 0), newReceiver(t, 0), newReceiver(t, 0)
		ea := in.endpoint(t, a.URL+"/hook", audit.ClientCreated, audit.Login)
		eb := in.endpoint(t, b.URL, audit.ClientCreated)
		in.endpoint(t, c.URL, audit.Logout)
		id := in.record(t, audit.ClientCreated)
		in.record(t, audit.UserUpdated) // nobody wants it
		if n := in.run(t); n != 2 {
			t.Fatalf("delivered %d, want 2", n)
		}
		if n := in.run(t); n != 0 {
			t.Fatalf("second pass delivered %d", n)
		}
		checkDelivered(t, in, a, ea.Secret, id, clk.Now())
		checkDelivered(t, in, b, eb.Secret, id, clk.Now())
		if got := c.requests(); len(got) != 0 {
			t.Fatalf("the logout endpoint got %d messages", len(got))
		}
		ds, total, err := in.s.Deliveries(context.Background(), ea.ID, httpx.Page{Page: 1, Limit: 10})
		if err != nil || total != 1 || ds[0].Status != webhooks.StatusDelivered || ds[0].Attempts != 1 ||
			ds[0].LastStatusCode == nil || *ds[0].LastStatusCode != http.StatusNoContent || ds[0].LastDurationMS == nil {
			t.Fatalf("deliveries %+v %d %v", ds, total, err)
		}
	})
}

// checkDelivered: rc got the event id once, signed with secret, as
// {type, timestamp, data} whose data is the event as the audit log shows it.
func checkDelivered(t *testing.T, in *instance, rc *receiver, secret, id string, now time.Time) {
	t.Helper()
	got := rc.requests()
	if len(got) != 1 || got[0].ID != "msg_"+id {
		t.Fatalf("receiver got %+v, want one message msg_%s", got, id)
	}
	checkSigned(t, secret, got, now)
	var m struct {
		Type      string      `json:"type"`
		Timestamp time.Time   `json:"timestamp"`
		Data      audit.Entry `json:"data"`
	}
	if err := json.Unmarshal(got[0].Body, &m); err != nil {
		t.Fatal(err)
	}
	if m.Type != audit.ClientCreated || m.Data.ID != id || !m.Timestamp.Equal(start) || m.Data.Metadata["n"] != float64(1) {
		t.Fatalf("body %s", got[0].Body)
	}
	logged, _, err := audit.List(context.Background(), in.d, audit.Filter{Page: httpx.Page{Page: 1, Limit: 10}, EventType: audit.ClientCreated})
	if err != nil || len(logged) != 1 {
		t.Fatal(logged, err)
	}
	want, _ := json.Marshal(logged[0])
	gotData, _ := json.Marshal(m.Data)
	if string(want) != string(gotData) {
		t.Fatalf("data %s\nlog  %s", gotData, want)
	}
}

// TestThirdAttemptSameID: a receiver that fails twice gets the message on
// the third attempt, with the same webhook-id each time.
func TestThirdAttemptSameID(t *testing.T) {
	eachInstance(t, func(t *testing.T, in *instance, clk *clocktest.Fake) {
		rc := newReceiver(t, 2)
		e := in.endpoint(t, rc.URL, audit.Login)
		in.record(t, audit.Login)
		in.run(t)
		in.run(t) // not due yet
		if got := len(rc.requests()); got != 1 {
			t.Fatalf("%d requests before the first retry is due", got)
		}
		for i := 1; i <= 2; i++ {
			clk.Advance(longestDelay(i))
			in.run(t)
		}
		got := rc.requests()
		if len(got) != 3 || got[0].ID != got[1].ID || got[1].ID != got[2].ID {
			ds, _, err := in.s.Deliveries(context.Background(), e.ID, httpx.Page{Page: 1, Limit: 10})
			t.Fatalf("%d requests; deliveries %+v %v", len(got), ds, err)
		}
		if got[0].Body == nil || string(got[0].Body) != string(got[2].Body) {
			t.Fatal("the body changed between attempts")
		}
		for _, r := range got {
			if err := verify(e.Secret, r.Header, r.Body, clk.Now()); err != nil {
				t.Fatal(err)
			}
		}
		ds, _, err := in.s.Deliveries(context.Background(), e.ID, httpx.Page{Page: 1, Limit: 10})
		if err != nil || ds[0].Status != webhooks.StatusDelivered || ds[0].Attempts != 3 {
			t.Fatalf("%+v %v", ds, err)
		}
	})
}

// TestCrashLosesNothing: an event written but never sent (the process died
// after commit), and one claimed by a sender that died, are delivered by a
// new instance.
func TestCrashLosesNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		clk := clocktest.NewFake(start)
		a := newInstance(t, eng.Open(t), clk, loopback)
		rc := newReceiver(t, 0)
		a.endpoint(t, rc.URL, audit.Login)
		first := a.record(t, audit.Login)
		second := a.record(t, audit.Login)
		// The second is claimed as a sender does, and its sender dies.
		if _, err := a.d.ExecContext(context.Background(), `UPDATE webhook_deliveries SET attempts = 1, next_attempt_at = $1
			WHERE message_id = $2`, db.TS(clk.Now().Add(webhooks.Lease)), "msg_"+second); err != nil {
			t.Fatal(err)
		}
		// A new instance, with nothing in memory from the first.
		b := newInstance(t, eng.Open(t), clk, loopback)
		b.run(t)
		if got := rc.requests(); len(got) != 1 || got[0].ID != "msg_"+first {
			t.Fatalf("after restart: %+v", got)
		}
		clk.Advance(webhooks.Lease)
		b.run(t)
		if got := rc.requests(); len(got) != 2 || got[1].ID != "msg_"+second {
			t.Fatalf("after the lease: %+v", got)
		}
	})
}

// TestTwoInstancesDeliverOnce: two instances on one PostgreSQL, sending at
// the same time, deliver each message once.
func TestTwoInstancesDeliverOnce(t *testing.T) {
	a, b := twoInstances(t)
	rc := newReceiver(t, 0)
	a.endpoint(t, rc.URL, audit.Login)
	const n = 40
	for range n {
		a.record(t, audit.Login)
	}
	for round := 0; round < 20 && len(rc.requests()) < n; round++ {
		var wg sync.WaitGroup
		for _, in := range []*instance{a, b, a, b} {
			wg.Add(1)
			go func() { defer wg.Done(); _, _ = in.worker.RunOnce(context.Background()) }()
		}
		wg.Wait()
	}
	ids := map[string]int{}
	for _, r := range rc.requests() {
		ids[r.ID]++
	}
	if len(rc.requests()) != n || len(ids) != n {
		t.Fatalf("%d requests, %d distinct, want %d each once", len(rc.requests()), len(ids), n)
	}
	if a.worker.Delivered() == 0 || b.worker.Delivered() == 0 {
		t.Logf("one instance sent everything (a %d, b %d)", a.worker.Delivered(), b.worker.Delivered())
	}
}

// TestPrivateAddressRefused: an endpoint on an internal address is refused
// when registered, and, should its name lead there only when it is used,
// when dialled; the operator's allow list lets it through.
func TestPrivateAddressRefused(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, eng dbtest.Engine) {
		clk := clocktest.NewFake(start)
		d := eng.Open(t)
		strict := newInstance(t, d, clk, outbound.Policy{})
		for _, u := range []string{"http://127.0.0.1:9/x", "https://10.1.2.3/", "https://localhost/hook", "https://[::1]/", "https://169.254.169.254/latest"} {
			_, err := strict.s.Create(context.Background(), nil, audit.Event{}, webhooks.Input{
				URL: httpx.Opt[string]{Set: true, Value: u}, EventTypes: httpx.Opt[[]string]{Set: true, Value: []string{audit.Login}}})
			if !apperr.Is(err, apperr.Validation) {
				t.Fatalf("%s: %v, want a validation error", u, err)
			}
		}
		// Registered where allowed; sent by an instance that does not allow it.
		rc := newReceiver(t, 0)
		allowed := newInstance(t, d, clk, loopback)
		e := allowed.endpoint(t, rc.URL, audit.Login)
		strict.record(t, audit.Login)
		strict.run(t)
		if got := rc.requests(); len(got) != 0 {
			t.Fatalf("the refused address got %d requests", len(got))
		}
		ds, _, err := strict.s.Deliveries(context.Background(), e.ID, httpx.Page{Page: 1, Limit: 10})
		if err != nil || ds[0].Status != webhooks.StatusFailed || !strings.Contains(ds[0].LastError, outbound.EnvAllowCIDRs) {
			t.Fatalf("%+v %v", ds, err)
		}
		// A resend through the allowing instance arrives.
		if _, err := allowed.s.Resend(context.Background(), e.ID, ds[0].ID); err != nil {
			t.Fatal(err)
		}
		allowed.run(t)
		if got := rc.requests(); len(got) != 1 || got[0].ID != ds[0].MessageID {
			t.Fatalf("resend: %+v", got)
		}
	})
}

// TestRotationSignsWithBoth: after a rotation both secrets sign for 24 h,
// then only the new one.
func TestRotationSignsWithBoth(t *testing.T) {
	eachInstance(t, func(t *testing.T, in *instance, clk *clocktest.Fake) {
		rc := newReceiver(t, 0)
		old := in.endpoint(t, rc.URL, audit.Login)
		rot, err := in.s.Rotate(context.Background(), nil, audit.Event{}, old.ID)
		if err != nil || rot.Secret == old.Secret || rot.PreviousSecretExpiresAt == nil {
			t.Fatal(rot, err)
		}
		in.record(t, audit.Login)
		in.run(t)
		got := rc.requests()
		if len(got) != 1 || len(strings.Fields(got[0].Signature)) != 2 {
			t.Fatalf("%+v", got)
		}
		checkSigned(t, old.Secret, got, clk.Now())
		checkSigned(t, rot.Secret, got, clk.Now())
		clk.Advance(webhooks.RotationOverlap + time.Second)
		in.record(t, audit.Login)
		in.run(t)
		got = rc.requests()
		if len(got) != 2 || len(strings.Fields(got[1].Signature)) != 1 {
			t.Fatalf("%+v", got)
		}
		checkSigned(t, rot.Secret, got[1:], clk.Now())
		if verify(old.Secret, got[1].Header, got[1].Body, clk.Now()) == nil {
			t.Fatal("the old secret still signs after its overlap")
		}
	})
}

// TestGivingUpDisablesTheEndpoint: an endpoint that fails for a day is
// turned off, with a reason, an audit event, and no more deliveries.
func TestGivingUpDisablesTheEndpoint(t *testing.T) {
	eachInstance(t, func(t *testing.T, in *instance, clk *clocktest.Fake) {
		rc := newReceiver(t, 1000)
		e := in.endpoint(t, rc.URL, audit.Login)
		in.record(t, audit.Login)
		for range webhooks.GiveUp.MaxAttempts + 2 {
			in.run(t)
			clk.Advance(longestDelay(webhooks.GiveUp.MaxAttempts))
		}
		got, err := in.s.Get(context.Background(), e.ID)
		if err != nil || got.Enabled || got.DisabledReason == "" || got.DisabledAt == nil {
			t.Fatalf("%+v %v", got, err)
		}
		if n, err := in.s.CountTurnedOff(context.Background()); err != nil || n != 1 {
			t.Fatalf("turned off: %d %v", n, err)
		}
		n := len(rc.requests())
		if n < 2 || n > webhooks.GiveUp.MaxAttempts {
			t.Fatalf("%d attempts", n)
		}
		events, _, err := audit.List(context.Background(), in.d, audit.Filter{Page: httpx.Page{Page: 1, Limit: 10}, EventType: audit.WebhookDisabled})
		if err != nil || len(events) != 1 {
			t.Fatal(events, err)
		}
		in.record(t, audit.Login)
		in.run(t)
		if len(rc.requests()) != n {
			t.Fatal("a disabled endpoint got a message")
		}
		if _, err := in.s.Test(context.Background(), e.ID); !apperr.Is(err, apperr.Conflict) {
			t.Fatalf("test on a disabled endpoint: %v", err)
		}
	})
}

// TestNoSubscriberNoStatement: writing an event nobody subscribed to runs
// the statements it ran before webhooks; a subscribed one adds two (the
// message and its deliveries), however many endpoints want it.
func TestNoSubscriberNoStatement(t *testing.T) {
	eachInstance(t, func(t *testing.T, in *instance, clk *clocktest.Fake) {
		count := func() int {
			ctx, c := db.WithStatementCounter(context.Background())
			if _, err := in.audit.Record(ctx, in.d, audit.Event{EventType: audit.Login}); err != nil {
				t.Fatal(err)
			}
			return len(c.Statements())
		}
		plain := &audit.Writer{DB: in.d, Clock: clk}
		ctx, c := db.WithStatementCounter(context.Background())
		if _, err := plain.Record(ctx, in.d, audit.Event{EventType: audit.Login}); err != nil {
			t.Fatal(err)
		}
		base := len(c.Statements())
		in.endpoint(t, "https://receiver.example/hook", audit.Logout)
		count() // the first write after a change loads the set again
		if got := count(); got != base {
			t.Fatalf("no subscriber: %d statements, want %d", got, base)
		}
		for range 10 {
			in.endpoint(t, "https://receiver.example/hook", audit.Login)
		}
		count()
		if got := count(); got != base+2 {
			t.Fatalf("10 subscribers: %d statements, want %d", got, base+2)
		}
		var deliveries int
		if err := in.d.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM webhook_deliveries`).Scan(&deliveries); err != nil || deliveries != 20 {
			t.Fatalf("%d deliveries %v", deliveries, err)
		}
	})
}

// TestOtherInstancesChangesArrive: an endpoint created on one instance is
// seen by another's subscription set through the shared counter.
func TestOtherInstancesChangesArrive(t *testing.T) {
	a, b := twoInstances(t)
	stop := b.s.Watch(20 * time.Millisecond)
	defer stop()
	if b.s.Subscribed(context.Background(), audit.Login) {
		t.Fatal("subscribed before any endpoint")
	}
	a.endpoint(t, "https://receiver.example/hook", audit.Login)
	deadline := time.Now().Add(5 * time.Second)
	for !b.s.Subscribed(context.Background(), audit.Login) {
		if time.Now().After(deadline) {
			t.Fatal("the other instance never saw the endpoint")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBadInput: what an endpoint may not be is refused with a validation
// error and changes nothing.
func TestBadInput(t *testing.T) {
	eachInstance(t, func(t *testing.T, in *instance, clk *clocktest.Fake) {
		in.s.AllowHTTP = false
		ok := httpx.Opt[string]{Set: true, Value: "https://receiver.example/hook"}
		types := httpx.Opt[[]string]{Set: true, Value: []string{audit.Login}}
		bad := []webhooks.Input{
			{},
			{URL: ok},
			{EventTypes: types},
			{URL: httpx.Opt[string]{Set: true, Value: "http://receiver.example/hook"}, EventTypes: types},
			{URL: httpx.Opt[string]{Set: true, Value: "ftp://receiver.example/"}, EventTypes: types},
			{URL: httpx.Opt[string]{Set: true, Value: "https://user:pw@receiver.example/"}, EventTypes: types},
			{URL: ok, EventTypes: httpx.Opt[[]string]{Set: true, Value: []string{}}},
			{URL: ok, EventTypes: httpx.Opt[[]string]{Set: true, Value: []string{"no_such_event"}}},
			{URL: ok, EventTypes: types, Description: httpx.Opt[string]{Set: true, Value: strings.Repeat("x", 501)}},
			{URL: ok, EventTypes: types, Enabled: httpx.Opt[bool]{Set: true, Null: true}},
		}
		for i, b := range bad {
			if _, err := in.s.Create(context.Background(), nil, audit.Event{}, b); !apperr.Is(err, apperr.Validation) {
				t.Errorf("input %d: %v, want a validation error", i, err)
			}
		}
		e := in.endpoint(t, ok.Value, audit.Login)
		if _, err := in.s.Update(context.Background(), nil, audit.Event{}, e.ID, webhooks.Input{}); !apperr.Is(err, apperr.Validation) {
			t.Errorf("empty change: %v", err)
		}
		if _, err := in.s.Update(context.Background(), nil, audit.Event{}, "nope", webhooks.Input{Enabled: httpx.Opt[bool]{Set: true}}); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("unknown endpoint: %v", err)
		}
		if _, err := in.s.Resend(context.Background(), e.ID, "nope"); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("unknown delivery: %v", err)
		}
		list, total, err := in.s.List(context.Background(), httpx.Page{Page: 1, Limit: 10})
		if err != nil || total != 1 || len(list) != 1 || list[0].Secret != "" {
			t.Fatalf("%+v %d %v", list, total, err)
		}
	})
}

// TestPurgeKeepsWhatIsStillNeeded: finished deliveries and their messages
// go after Keep; a pending delivery and its message stay.
func TestPurgeKeepsWhatIsStillNeeded(t *testing.T) {
	eachInstance(t, func(t *testing.T, in *instance, clk *clocktest.Fake) {
		ok, failing := newReceiver(t, 0), newReceiver(t, 1000)
		in.endpoint(t, ok.URL, audit.Login)
		in.endpoint(t, failing.URL, audit.Logout)
		in.record(t, audit.Login)
		in.record(t, audit.Logout)
		in.run(t)
		clk.Advance(webhooks.Keep + time.Hour)
		if err := in.worker.Purge(context.Background()); err != nil {
			t.Fatal(err)
		}
		var deliveries, messages int
		if err := in.d.QueryRowContext(context.Background(), `SELECT (SELECT COUNT(*) FROM webhook_deliveries), (SELECT COUNT(*) FROM webhook_messages)`).Scan(&deliveries, &messages); err != nil {
			t.Fatal(err)
		}
		if deliveries != 1 || messages != 1 {
			t.Fatalf("%d deliveries and %d messages left, want the pending one and its message", deliveries, messages)
		}
	})
}
