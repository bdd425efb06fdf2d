package store_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"hmid/internal/db"
	"hmid/internal/dbtest"
	"hmid/internal/oauth/claims"
	"hmid/internal/oauth/store"
	"hmid/internal/token"
)

// The store's conformance suite: every method, on SQLite and (with
// HMID_TEST_POSTGRES_URL) PostgreSQL, against the real schema, with no app.
// The database is migrated once per engine; each case makes the users and
// clients it needs, so the cases share it without seeing each other's rows.

// t0 is the clock of every case: the store takes its times as arguments.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// env is one engine's database and store.
type env struct {
	d  *db.DB
	st *store.Store
}

// TestStore runs every case on each engine, Purge last: it deletes what
// the other cases left expired.
func TestStore(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, e dbtest.Engine) {
		d := e.Open(t)
		en := &env{d: d, st: store.New(d)}
		for _, c := range []struct {
			name string
			run  func(*testing.T, *env)
		}{
			{"CodeSingleUse", testCodeSingleUse},
			{"CodeRacingRedemptions", testCodeRacing},
			{"CodeReplayRevokesFamily", testCodeReplay},
			{"RotationRacing", testRotationRacing},
			{"RotationReuse", testRotationReuse},
			{"ReissueLocks", testReissueLocks},
			{"RevocationCascades", testRevocationCascades},
			{"EndUserTokens", testEndUserTokens},
			{"ResolveAccess", testResolveAccess},
			{"Introspect", testIntrospect},
			{"Consents", testConsents},
			{"Pending", testPending},
			{"Clients", testClients},
			{"ClientTokens", testClientTokens},
			{"Devices", testDevices},
			{"InitialTokens", testInitialTokens},
			{"SigningKeys", testSigningKeys},
			{"SessionGrants", testSessionGrants},
			{"Users", testUsers},
			{"TableSizes", testTableSizes},
			{"Purge", testPurge},
		} {
			t.Run(c.name, func(t *testing.T) { c.run(t, en) })
		}
	})
}

// user inserts a user and returns its id.
func (en *env) user(t *testing.T) string {
	t.Helper()
	id := db.NewID()
	if _, err := en.d.ExecContext(context.Background(), `INSERT INTO users (id, username, email, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)`,
		id, "u"+id, id+"@example.org", db.TS(t0)); err != nil {
		t.Fatal(err)
	}
	return id
}

// client registers an active confidential client owned by owner ("" for none).
func (en *env) client(t *testing.T, owner string, mods ...func(*store.Client)) store.Client {
	t.Helper()
	c := store.Client{ID: db.NewID(), Name: "Client", RedirectURIs: []string{"https://app.example/cb"}, AllowedScopes: []string{"openid", "profile"},
		ClientType: "confidential", IsActive: true, IDTokenSignedResponseAlg: "HS256", SecretHash: token.Hash("secret"),
		PostLogoutRedirectURIs: []string{}, TokenEndpointAuthMethod: "client_secret_basic", Resources: []string{}, AccessTokenFormat: "opaque",
		GrantTypes: []string{"authorization_code", "refresh_token"}}
	if owner != "" {
		c.OwnerID = &owner
	}
	for _, m := range mods {
		m(&c)
	}
	if err := en.st.InsertClient(context.Background(), en.d, c, t0); err != nil {
		t.Fatal(err)
	}
	return c
}

// family is a new token family of userID at c.
func family(c store.Client, userID string) store.Family {
	return store.Family{ID: db.NewID(), ClientID: c.ID, UserID: userID, Scopes: []string{"openid", "profile"}, AuthTime: t0, Context: `{"acr":"1"}`}
}

// issued is a token pair and the tokens themselves.
type issued struct {
	store.TokenPair
	access, refresh string
}

// pair draws a new pair of f, for an hour (access) and a day (refresh).
func pair(f store.Family) issued {
	a, r := token.New(token.PrefixAccessToken), token.New(token.PrefixRefreshToken)
	return issued{TokenPair: store.TokenPair{Family: f, AccessID: db.NewID(), AccessHash: token.Hash(a), AccessScopes: f.Scopes,
		AccessExpires: t0.Add(time.Hour), RefreshHash: token.Hash(r), RefreshExpires: t0.Add(24 * time.Hour)}, access: a, refresh: r}
}

// stored stores a new pair of f.
func (en *env) stored(t *testing.T, f store.Family) issued {
	t.Helper()
	p := pair(f)
	if err := en.st.StoreTokens(context.Background(), en.d, p.TokenPair, t0); err != nil {
		t.Fatal(err)
	}
	return p
}

// tx runs fn in a transaction and fails the test on its error.
func (en *env) tx(t *testing.T, fn func(tx *db.Tx) error) {
	t.Helper()
	if err := en.d.Tx(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// live reports whether the access token of p still resolves at now.
func (en *env) live(t *testing.T, access string, now time.Time) bool {
	t.Helper()
	_, err := en.st.ResolveAccess(context.Background(), token.Hash(access), now, nil)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// race runs fn n times at once and returns how many reported true.
func race(t *testing.T, n int, fn func() (bool, error)) int {
	t.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins int
	)
	for range n {
		wg.Go(func() {
			ok, err := fn()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Error(err)
			}
			if ok {
				wins++
			}
		})
	}
	wg.Wait()
	return wins
}

// code issues an authorization code of userID at c and returns its hash.
func (en *env) code(t *testing.T, c store.Client, userID string, f store.Family) string {
	t.Helper()
	hash := token.Hash(token.New(token.PrefixAuthCode))
	err := en.st.IssueCode(context.Background(), en.d, store.Code{Hash: hash, FamilyID: f.ID, ClientID: c.ID, UserID: userID,
		RedirectURI: "https://app.example/cb", Scopes: []string{"openid", "offline_access"}, Nonce: "n", Challenge: "ch", AuthTime: t0.Add(-time.Minute),
		Created: t0, Expires: t0.Add(10 * time.Minute), SessionID: "sess-1", Context: `{"acr":"2"}`})
	if err != nil {
		t.Fatal(err)
	}
	return hash
}

// redeem redeems a code in a transaction of its own, committed.
func (en *env) redeem(hash string, now time.Time) (store.RedeemedCode, error) {
	var code store.RedeemedCode
	var redeemErr error
	err := en.d.Tx(context.Background(), func(tx *db.Tx) error {
		code, redeemErr = en.st.RedeemCode(context.Background(), tx, hash, now)
		if redeemErr != nil && !errors.Is(redeemErr, store.ErrNotFound) && !errors.Is(redeemErr, store.ErrCodeReplayed) {
			return redeemErr
		}
		return nil
	})
	if err != nil {
		return code, err
	}
	return code, redeemErr
}

// testCodeSingleUse: a code redeems once and returns what it was bound to,
// with its user's standing (RFC 6749 §4.1.2); an unknown code is ErrNotFound.
func testCodeSingleUse(t *testing.T, en *env) {
	u := en.user(t)
	c := en.client(t, u)
	f := family(c, u)
	hash := en.code(t, c, u, f)
	code, err := en.redeem(hash, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := store.Code{Hash: hash, FamilyID: f.ID, ClientID: c.ID, UserID: u, RedirectURI: "https://app.example/cb", Scopes: []string{"openid", "offline_access"},
		Nonce: "n", Challenge: "ch", AuthTime: t0.Add(-time.Minute), Expires: t0.Add(10 * time.Minute), SessionID: "sess-1", Context: `{"acr":"2"}`}
	if !code.Usable || !reflect.DeepEqual(code.Code, want) {
		t.Fatalf("redeemed %+v, want %+v (usable)", code, want)
	}
	if _, err := en.redeem(hash, t0.Add(2*time.Second)); !errors.Is(err, store.ErrCodeReplayed) {
		t.Fatalf("second redemption: %v, want ErrCodeReplayed", err)
	}
	if _, err := en.redeem(token.Hash("hm_ac_unknown"), t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown code: %v, want ErrNotFound", err)
	}
	// A banned user's code still redeems (it is burnt), but says so.
	b := en.user(t)
	if _, err := en.d.ExecContext(context.Background(), `INSERT INTO bans (id, user_id, banned_at, is_permanent) VALUES ($1, $2, $3, TRUE)`,
		db.NewID(), b, db.TS(t0)); err != nil {
		t.Fatal(err)
	}
	code, err = en.redeem(en.code(t, c, b, family(c, b)), t0.Add(time.Second))
	if err != nil || code.Usable {
		t.Fatalf("banned user's code: %v usable=%v", err, code.Usable)
	}
}

// testCodeRacing: of racing redemptions of one code exactly one gets it.
func testCodeRacing(t *testing.T, en *env) {
	u := en.user(t)
	c := en.client(t, u)
	hash := en.code(t, c, u, family(c, u))
	wins := race(t, 8, func() (bool, error) {
		_, err := en.redeem(hash, t0.Add(time.Second))
		if errors.Is(err, store.ErrCodeReplayed) {
			return false, nil
		}
		return err == nil, err
	})
	if wins != 1 {
		t.Fatalf("%d of 8 racing redemptions won, want 1", wins)
	}
}

// testCodeReplay: presenting a redeemed code again revokes every token of
// its family, and only those (RFC 9700 §4.3.1).
func testCodeReplay(t *testing.T, en *env) {
	u := en.user(t)
	c := en.client(t, u)
	f := family(c, u)
	hash := en.code(t, c, u, f)
	if _, err := en.redeem(hash, t0); err != nil {
		t.Fatal(err)
	}
	bought, other := en.stored(t, f), en.stored(t, family(c, u))
	if _, err := en.redeem(hash, t0.Add(time.Minute)); !errors.Is(err, store.ErrCodeReplayed) {
		t.Fatalf("replay: %v", err)
	}
	if en.live(t, bought.access, t0.Add(2*time.Minute)) || !en.live(t, other.access, t0.Add(2*time.Minute)) {
		t.Fatal("a replayed code must revoke its own family's tokens and no others")
	}
}

// refresh reads the refresh token of p.
func (en *env) refresh(t *testing.T, p issued, now time.Time) store.RefreshToken {
	t.Helper()
	var row claims.Row
	rt, err := en.st.RefreshToken(context.Background(), p.RefreshHash, now, &row)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// testRotationRacing: of N racing rotations of one refresh token exactly
// one wins and stores its pair (RFC 9700 §4.14.2); the pair it spent is
// revoked, the access token with it.
func testRotationRacing(t *testing.T, en *env) {
	u := en.user(t)
	c := en.client(t, u)
	f := family(c, u)
	f.SessionID, f.OfflineRefresh = "sess-2", true
	old := en.stored(t, f)
	rt := en.refresh(t, old, t0.Add(time.Minute))
	if !rt.Usable || rt.Rotated.Valid || rt.Revoked.Valid || rt.Family.ID != f.ID || rt.Family.SessionID != "sess-2" || !rt.Family.OfflineRefresh {
		t.Fatalf("read %+v", rt)
	}
	succ := rt.Successor()
	if !succ.OfflineAccess || succ.ID != f.ID {
		t.Fatalf("successor %+v: the new pair stays in the family and keeps its offline standing", succ)
	}
	var (
		mu    sync.Mutex
		pairs []issued
	)
	now := t0.Add(time.Minute)
	wins := race(t, 8, func() (bool, error) {
		next := pair(succ)
		won, err := en.st.RotateRefresh(context.Background(), rt, next.TokenPair, now)
		if won {
			mu.Lock()
			pairs = append(pairs, next)
			mu.Unlock()
		}
		return won, err
	})
	if wins != 1 || len(pairs) != 1 {
		t.Fatalf("%d of 8 racing rotations won, want 1", wins)
	}
	if en.live(t, old.access, now) || !en.live(t, pairs[0].access, now) {
		t.Fatal("the rotation must revoke the spent pair's access token and store a live new pair")
	}
	spent := en.refresh(t, old, now)
	if !spent.Rotated.Valid || !spent.Revoked.Valid {
		t.Fatalf("spent token %+v: rotated and revoked", spent)
	}
	fresh := en.refresh(t, pairs[0], now)
	if fresh.Family.SessionID != "sess-2" || !fresh.Family.OfflineRefresh || fresh.Family.Context != f.Context {
		t.Fatalf("new refresh token %+v: keeps the family's session, context and offline standing", fresh)
	}
	rotated, err := en.st.RotatedAt(context.Background(), en.d, spent.ID)
	if err != nil || !rotated.Valid || !rotated.Time.Equal(now) {
		t.Fatalf("RotatedAt: %v %v", rotated, err)
	}
}

// testRotationReuse: a spent refresh token rotates no more; revoking its
// family ends every token of the authorization, the newest pair too.
func testRotationReuse(t *testing.T, en *env) {
	u := en.user(t)
	c := en.client(t, u)
	f := family(c, u)
	old := en.stored(t, f)
	rt := en.refresh(t, old, t0)
	next := pair(rt.Successor())
	if won, err := en.st.RotateRefresh(context.Background(), rt, next.TokenPair, t0); !won || err != nil {
		t.Fatalf("rotation: %v %v", won, err)
	}
	again := pair(rt.Successor())
	if won, err := en.st.RotateRefresh(context.Background(), rt, again.TokenPair, t0.Add(time.Second)); won || err != nil {
		t.Fatalf("rotating a spent token: %v %v, want false", won, err)
	}
	if en.live(t, again.access, t0.Add(time.Second)) {
		t.Fatal("a lost rotation must store nothing")
	}
	var n int64
	en.tx(t, func(tx *db.Tx) error {
		var err error
		n, err = en.st.RevokeFamily(context.Background(), tx, f.ID, t0.Add(2*time.Second))
		return err
	})
	if n != 2 || en.live(t, next.access, t0.Add(2*time.Second)) {
		t.Fatalf("RevokeFamily revoked %d (want the 2 live tokens of the newest pair)", n)
	}
	if got := en.refresh(t, next, t0.Add(2*time.Second)); !got.Revoked.Valid || got.Rotated.Valid {
		t.Fatalf("the newest refresh token after revocation: %+v", got)
	}
}

// testReissueLocks: LockLiveRefresh sees a family's live refresh tokens,
// and none once the family is revoked or its tokens have expired.
func testReissueLocks(t *testing.T, en *env) {
	u := en.user(t)
	c := en.client(t, u)
	f := family(c, u)
	en.stored(t, f)
	lock := func(now time.Time) (live bool) {
		en.tx(t, func(tx *db.Tx) error {
			var err error
			live, err = en.st.LockLiveRefresh(context.Background(), tx, f.ID, now)
			return err
		})
		return live
	}
	if !lock(t0) || lock(t0.Add(25*time.Hour)) {
		t.Fatal("a family has a live refresh token until it expires")
	}
	en.tx(t, func(tx *db.Tx) error { _, err := en.st.RevokeFamily(context.Background(), tx, f.ID, t0); return err })
	if lock(t0) {
		t.Fatal("a revoked family has no live refresh token")
	}
}

// testRevocationCascades: a refresh token takes its family with it, an
// access token only its pair (RFC 7009 §2.1); a client's deactivation and
// deletion end its tokens.
func testRevocationCascades(t *testing.T, en *env) {
	ctx := context.Background()
	u := en.user(t)
	c := en.client(t, u)
	f := family(c, u)
	a, b := en.stored(t, f), en.stored(t, f)
	ref, err := en.st.TokenByHash(ctx, en.d, a.AccessHash)
	if err != nil || ref.Kind != "access" || ref.ClientID != c.ID || ref.FamilyID != f.ID {
		t.Fatalf("TokenByHash: %+v %v", ref, err)
	}
	en.tx(t, func(tx *db.Tx) error { return en.st.RevokeWithKin(ctx, tx, ref, t0) })
	if en.live(t, a.access, t0) || !en.live(t, b.access, t0) {
		t.Fatal("revoking an access token revokes its pair only")
	}
	if rt := en.refresh(t, a, t0); !rt.Revoked.Valid {
		t.Fatal("the refresh token paired with a revoked access token is revoked")
	}
	byUser, err := en.st.UserToken(ctx, en.d, b.AccessID, u)
	if err != nil || byUser.PairID == "" {
		t.Fatalf("UserToken: %+v %v", byUser, err)
	}
	if _, err := en.st.UserToken(ctx, en.d, b.AccessID, en.user(t)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another user's token: %v", err)
	}
	refresh, err := en.st.TokenByHash(ctx, en.d, b.RefreshHash)
	if err != nil || refresh.Kind != "refresh" {
		t.Fatalf("TokenByHash refresh: %+v %v", refresh, err)
	}
	c2 := en.client(t, u)
	other := en.stored(t, family(c2, u))
	en.tx(t, func(tx *db.Tx) error { return en.st.RevokeWithKin(ctx, tx, refresh, t0) })
	if en.live(t, b.access, t0) || !en.live(t, other.access, t0) {
		t.Fatal("revoking a refresh token revokes its family only")
	}
	if _, err := en.st.TokenByHash(ctx, en.d, token.Hash("hm_at_none")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown token: %v", err)
	}
	// Deactivation revokes; deletion cascades.
	en.tx(t, func(tx *db.Tx) error { return en.st.RevokeClientTokens(ctx, tx, c2.ID, t0) })
	if en.live(t, other.access, t0) {
		t.Fatal("RevokeClientTokens leaves a token live")
	}
	c3 := en.client(t, u)
	gone := en.stored(t, family(c3, u))
	en.tx(t, func(tx *db.Tx) error { return en.st.DeleteClient(ctx, tx, c3.ID) })
	if _, err := en.st.TokenByHash(ctx, en.d, gone.AccessHash); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a deleted client's token: %v", err)
	}
}

// testEndUserTokens: ending a user's credentials revokes their tokens,
// burns their codes, decides their pending authorizations and denies the
// device authorizations they approved; other users keep theirs.
func testEndUserTokens(t *testing.T, en *env) {
	ctx := context.Background()
	u, keep := en.user(t), en.user(t)
	c := en.client(t, u)
	p, kept := en.stored(t, family(c, u)), en.stored(t, family(c, keep))
	hash := en.code(t, c, u, family(c, u))
	pendingID := db.NewID()
	if err := en.st.CreatePending(ctx, store.PendingAuthorization{ID: pendingID, UserID: u, ClientID: c.ID, RedirectURI: "https://app.example/cb",
		Scopes: []string{"openid"}, AuthTime: t0, Created: t0, Expires: t0.Add(time.Hour), Context: "{}"}); err != nil {
		t.Fatal(err)
	}
	dev := en.approvedDevice(t, c, u)
	en.tx(t, func(tx *db.Tx) error { return store.EndUserTokens(ctx, tx, u, t0) })
	if en.live(t, p.access, t0) || !en.live(t, kept.access, t0) {
		t.Fatal("EndUserTokens must revoke the user's tokens and only theirs")
	}
	if _, err := en.redeem(hash, t0); !errors.Is(err, store.ErrCodeReplayed) {
		t.Fatalf("the user's open code after EndUserTokens: %v, want it spent", err)
	}
	if _, err := en.st.Pending(ctx, pendingID, u, t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the user's pending authorization: %v, want decided", err)
	}
	d, err := en.st.PollDevice(ctx, store.DevicePoll{DeviceCodeHash: dev, Now: t0})
	if err != nil || d.Status != "denied" {
		t.Fatalf("the approved device authorization: %+v %v, want denied", d, err)
	}
}

// testResolveAccess: a usable access token resolves with its claims and
// context in one read; an unusable one (revoked, inactive client, deleted
// or banned user) is ErrNotFound.
func testResolveAccess(t *testing.T, en *env) {
	ctx := context.Background()
	u := en.user(t)
	c := en.client(t, u)
	p := en.stored(t, family(c, u))
	var row claims.Row
	at, err := en.st.ResolveAccess(ctx, p.AccessHash, t0, &row)
	if err != nil || at.UserID != u || at.ClientID != c.ID || at.ID != p.AccessID || at.Context != `{"acr":"1"}` ||
		!db.FromTS(at.Expires).Equal(p.AccessExpires) || !slices.Equal(at.Scopes, p.AccessScopes) {
		t.Fatalf("ResolveAccess: %+v %v", at, err)
	}
	var set claims.Set
	if err := claims.Fill(ctx, en.d, u, &row, []string{"profile"}, false, &set); err != nil || set.ToMap()["preferred_username"] != "u"+u {
		t.Fatalf("claims read with the token: %v %v", set.ToMap(), err)
	}
	if at, err = en.st.ResolveAccess(ctx, p.AccessHash, t0, nil); err != nil || at.Context != "" || store.DecodeResources(at.Audience) != nil {
		t.Fatalf("without claims: %+v %v", at, err)
	}
	if _, err := en.d.ExecContext(ctx, `UPDATE users SET deleted_at = $1 WHERE id = $2`, db.TS(t0), u); err != nil {
		t.Fatal(err)
	}
	if en.live(t, p.access, t0) {
		t.Fatal("a deleted user's token resolves")
	}
	b := en.user(t)
	q := en.stored(t, family(c, b))
	if _, err := en.d.ExecContext(ctx, `INSERT INTO bans (id, user_id, banned_at, expires_at, is_permanent) VALUES ($1, $2, $3, $4, FALSE)`,
		db.NewID(), b, db.TS(t0), db.TS(t0.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	if en.live(t, q.access, t0) || !en.live(t, q.access, t0.Add(2*time.Hour)) {
		t.Fatal("a token resolves only while its user's ban is not in force")
	}
	c.IsActive = false
	en.tx(t, func(tx *db.Tx) error { return en.st.UpdateClient(ctx, tx, c, t0) })
	if en.live(t, q.access, t0.Add(2*time.Hour)) {
		t.Fatal("an inactive client's token resolves")
	}
}

// testIntrospect: introspection reads a token whatever its state, with its
// client's and user's.
func testIntrospect(t *testing.T, en *env) {
	ctx := context.Background()
	u := en.user(t)
	c := en.client(t, u)
	f := family(c, u)
	p := pair(f)
	p.Audience = []string{"https://api.example"}
	if err := en.st.StoreTokens(ctx, en.d, p.TokenPair, t0); err != nil {
		t.Fatal(err)
	}
	it, err := en.st.Introspect(ctx, p.AccessHash, t0)
	if err != nil || it.Kind != "access" || it.UserID != u || it.Username != "u"+u || !it.ClientActive || it.UserDeleted || it.Banned ||
		it.Audience == nil || *it.Audience != `["https://api.example"]` || it.Revoked.Valid || !it.Created.Equal(t0) {
		t.Fatalf("Introspect: %+v %v", it, err)
	}
	rt, err := en.st.Introspect(ctx, p.RefreshHash, t0)
	if err != nil || rt.Kind != "refresh" || rt.Audience != nil || !rt.Expires.Equal(p.RefreshExpires) {
		t.Fatalf("Introspect refresh: %+v %v", rt, err)
	}
	if _, err := en.st.Introspect(ctx, token.Hash("x"), t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}

// testConsents: a consent grows by SaveConsent, reads back sorted, lists
// newest first, and goes with RevokeConsent, which ends the client's
// tokens of the user.
func testConsents(t *testing.T, en *env) {
	ctx := context.Background()
	u := en.user(t)
	c1, c2 := en.client(t, u), en.client(t, u)
	if _, err := en.st.ConsentScopes(ctx, en.d, u, c1.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no consent yet: %v", err)
	}
	en.tx(t, func(tx *db.Tx) error { return en.st.SaveConsent(ctx, tx, u, c1.ID, []string{"profile", "openid"}, t0) })
	en.tx(t, func(tx *db.Tx) error {
		return en.st.SaveConsent(ctx, tx, u, c1.ID, []string{"email", "openid"}, t0.Add(time.Second))
	})
	en.tx(t, func(tx *db.Tx) error {
		return en.st.SaveConsent(ctx, tx, u, c2.ID, []string{"openid"}, t0.Add(2*time.Second))
	})
	got, err := en.st.ConsentScopes(ctx, en.d, u, c1.ID)
	if err != nil || !slices.Equal(got, []string{"email", "openid", "profile"}) {
		t.Fatalf("ConsentScopes: %v %v, want the union, sorted", got, err)
	}
	list, err := en.st.UserConsents(ctx, u)
	if err != nil || len(list) != 2 || list[0].ClientID != c2.ID || !list[1].GrantedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("UserConsents: %+v %v", list, err)
	}
	p, other := en.stored(t, family(c1, u)), en.stored(t, family(c2, u))
	en.tx(t, func(tx *db.Tx) error { return en.st.RevokeConsent(ctx, tx, u, c1.ID, t0) })
	if en.live(t, p.access, t0) || !en.live(t, other.access, t0) {
		t.Fatal("RevokeConsent ends the client's tokens of the user, and only those")
	}
	if err := en.d.Tx(ctx, func(tx *db.Tx) error { return en.st.RevokeConsent(ctx, tx, u, c1.ID, t0) }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoking again: %v", err)
	}
}

// testPending: a pending authorization reads back for its user and is
// decided once, by one of racing decisions.
func testPending(t *testing.T, en *env) {
	ctx := context.Background()
	u := en.user(t)
	c := en.client(t, u)
	want := store.PendingAuthorization{ID: db.NewID(), UserID: u, ClientID: c.ID, RedirectURI: "https://app.example/cb", Scopes: []string{"openid"},
		State: "st", Nonce: "no", Challenge: "ch", AuthTime: t0, Created: t0, Expires: t0.Add(15 * time.Minute), Context: `{"acr":"1"}`, SessionID: "sess-3"}
	if err := en.st.CreatePending(ctx, want); err != nil {
		t.Fatal(err)
	}
	v, err := en.st.Pending(ctx, want.ID, u, t0)
	if err != nil || v.ClientName != c.Name || v.Context != want.Context || !v.Expires.Equal(want.Expires) {
		t.Fatalf("Pending: %+v %v", v, err)
	}
	if _, err := en.st.Pending(ctx, want.ID, en.user(t), t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another user's: %v", err)
	}
	if _, err := en.st.Pending(ctx, want.ID, u, t0.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired: %v", err)
	}
	var (
		mu  sync.Mutex
		got store.PendingAuthorization
	)
	wins := race(t, 6, func() (bool, error) {
		var p store.PendingAuthorization
		var decided error
		err := en.d.Tx(ctx, func(tx *db.Tx) error {
			p, decided = en.st.DecidePending(ctx, tx, want.ID, u, t0.Add(time.Second))
			if errors.Is(decided, store.ErrNotFound) {
				return nil
			}
			return decided
		})
		if err == nil && decided == nil {
			mu.Lock()
			got = p
			mu.Unlock()
		}
		return err == nil && decided == nil, err
	})
	if wins != 1 {
		t.Fatalf("%d of 6 racing decisions won, want 1", wins)
	}
	want.Created, want.Expires = time.Time{}, time.Time{} // what the code needs, not the pending row's own times
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decided %+v, want %+v", got, want)
	}
}

// testClients: a client reads back as stored, changes, lists per owner,
// changes its secret and goes.
func testClients(t *testing.T, en *env) {
	ctx := context.Background()
	u := en.user(t)
	lifetime := int64(600)
	c := en.client(t, u, func(c *store.Client) {
		c.AccessTokenLifetimeSeconds, c.GrantTypes = &lifetime, []string{"authorization_code"}
	})
	got, err := en.st.Client(ctx, en.d, c.ID)
	if err != nil || got.Name != c.Name || got.OwnerID == nil || *got.OwnerID != u || got.SecretHash != c.SecretHash || !got.AllowsGrant("authorization_code") ||
		got.AllowsGrant("refresh_token") || got.Registration() != "" || got.AccessTokenLifetimeSeconds == nil || *got.AccessTokenLifetimeSeconds != 600 ||
		!got.CreatedAt.Equal(t0) || len(got.Resources) != 0 || got.Resources == nil {
		t.Fatalf("Client: %+v %v", got, err)
	}
	got.Name, got.RedirectURIs = "Renamed", []string{"https://other.example/cb"}
	en.tx(t, func(tx *db.Tx) error { return en.st.UpdateClient(ctx, tx, got, t0.Add(time.Minute)) })
	en.tx(t, func(tx *db.Tx) error {
		return en.st.SetClientSecret(ctx, tx, c.ID, token.Hash("new"), t0.Add(2*time.Minute))
	})
	got, err = en.st.Client(ctx, en.d, c.ID)
	if err != nil || got.Name != "Renamed" || got.SecretHash != token.Hash("new") || !got.UpdatedAt.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("after update: %+v %v", got, err)
	}
	kind := "open"
	dyn := en.client(t, "", func(c *store.Client) { c.DynamicRegistration, c.RegistrationHash = &kind, token.Hash("rat") })
	if got, err := en.st.Client(ctx, en.d, dyn.ID); err != nil || got.Registration() != "open" || got.RegistrationHash != token.Hash("rat") || got.OwnerID != nil {
		t.Fatalf("dynamic client: %+v %v", got, err)
	}
	mine, total, err := en.st.Clients(ctx, store.ClientFilter{OwnerID: u}, 10, 0)
	if err != nil || total != 1 || len(mine) != 1 || mine[0].ID != c.ID {
		t.Fatalf("Clients of the owner: %d %+v %v", total, mine, err)
	}
	if none, total, err := en.st.Clients(ctx, store.ClientFilter{}, 10, 0); err != nil || total != 0 || len(none) != 0 {
		t.Fatalf("Clients of no owner: %d %v", total, err)
	}
	all, total, err := en.st.Clients(ctx, store.ClientFilter{All: true}, 1, 0)
	if err != nil || total < 2 || len(all) != 1 {
		t.Fatalf("Clients, all, one page: %d %d %v", total, len(all), err)
	}
	uris, err := en.st.ActiveRedirectURIs(ctx)
	if err != nil || !slices.ContainsFunc(uris, func(u []string) bool { return slices.Equal(u, []string{"https://other.example/cb"}) }) {
		t.Fatalf("ActiveRedirectURIs: %v %v", uris, err)
	}
	en.tx(t, func(tx *db.Tx) error { return en.st.DeleteClient(ctx, tx, c.ID) })
	if _, err := en.st.Client(ctx, en.d, c.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("deleted client: %v", err)
	}
}

// testClientTokens: a client credentials token reads back live, follows
// its client's registration at once, and is revoked by its own client only.
func testClientTokens(t *testing.T, en *env) {
	ctx := context.Background()
	c := en.client(t, "", func(c *store.Client) {
		c.GrantTypes, c.AllowedScopes = []string{"client_credentials"}, []string{"gps:read", "devices:read"}
	})
	tok := store.ClientToken{ID: db.NewID(), Hash: token.Hash("hm_at_ctoken"), ClientID: c.ID, Scopes: []string{"devices:read", "gps:read"},
		Created: t0, Expires: t0.Add(time.Hour)}
	if err := en.st.StoreClientToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	got, err := en.st.ClientToken(ctx, tok.Hash)
	if err != nil || !got.Live("client_credentials", t0) || got.Live("client_credentials", t0.Add(time.Hour)) || got.Live("authorization_code", t0) ||
		!slices.Equal(got.Scopes, tok.Scopes) {
		t.Fatalf("ClientToken: %+v %v", got, err)
	}
	// A scope taken from the client leaves the token at once.
	c.AllowedScopes = []string{"gps:read"}
	en.tx(t, func(tx *db.Tx) error { return en.st.UpdateClient(ctx, tx, c, t0) })
	if got, err = en.st.ClientToken(ctx, tok.Hash); err != nil || !slices.Equal(got.Scopes, []string{"gps:read"}) {
		t.Fatalf("after the client lost a scope: %v %v", got.Scopes, err)
	}
	if err := en.st.RevokeClientToken(ctx, tok.Hash, db.NewID(), t0); err != nil {
		t.Fatal(err)
	}
	if got, _ = en.st.ClientToken(ctx, tok.Hash); !got.Live("client_credentials", t0) {
		t.Fatal("another client revoked the token")
	}
	if err := en.st.RevokeClientToken(ctx, tok.Hash, c.ID, t0); err != nil {
		t.Fatal(err)
	}
	if got, _ = en.st.ClientToken(ctx, tok.Hash); got.Live("client_credentials", t0) {
		t.Fatal("the revoked token is live")
	}
	if _, err := en.st.ClientToken(ctx, token.Hash("none")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	// The audience is kept as issued: nil stays nil (the client is the audience).
	aud := []string{"https://api.example/", "https://files.example/v1"}
	forAPI := store.ClientToken{ID: db.NewID(), Hash: token.Hash("hm_at_ctoken_aud"), ClientID: c.ID, Scopes: []string{"gps:read"},
		Audience: aud, Created: t0, Expires: t0.Add(time.Hour)}
	if err := en.st.StoreClientToken(ctx, forAPI); err != nil {
		t.Fatal(err)
	}
	if got, err := en.st.ClientToken(ctx, forAPI.Hash); err != nil || !slices.Equal(got.Audience, aud) {
		t.Fatalf("audience %v, %v; want %v", got.Audience, err, aud)
	}
	if got, _ := en.st.ClientToken(ctx, tok.Hash); got.Audience != nil {
		t.Fatalf("a token issued without resources has audience %v", got.Audience)
	}
}

// startDevice starts a device authorization of c and returns its device
// code hash and user code hash.
func (en *env) startDevice(t *testing.T, c store.Client) (id, deviceHash, userHash string) {
	t.Helper()
	id, deviceHash, userHash = db.NewID(), token.Hash(token.New("hm_dc_")), token.Hash(db.NewID())
	if err := en.st.StartDevice(context.Background(), store.DeviceAuthorization{ID: id, DeviceCodeHash: deviceHash, UserCodeHash: userHash, ClientID: c.ID,
		Scopes: []string{"openid"}, Interval: 5 * time.Second, Created: t0, Expires: t0.Add(10 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	return id, deviceHash, userHash
}

// approvedDevice starts a device authorization of c approved by userID and
// returns its device code hash.
func (en *env) approvedDevice(t *testing.T, c store.Client, userID string) string {
	t.Helper()
	id, deviceHash, _ := en.startDevice(t, c)
	en.tx(t, func(tx *db.Tx) error {
		won, err := en.st.DecideDevice(context.Background(), tx, store.DeviceDecision{ID: id, Approved: true, UserID: userID, AuthTime: t0, Context: "{}", Now: t0})
		if !won && err == nil {
			t.Fatal("the decision did not take")
		}
		return err
	})
	return deviceHash
}

// testDevices: polls are paced (RFC 8628 §3.5), a person decides once, and
// an approval is redeemed by one of racing polls.
func testDevices(t *testing.T, en *env) {
	ctx := context.Background()
	u := en.user(t)
	c := en.client(t, u)
	id, deviceHash, userHash := en.startDevice(t, c)
	if _, _, err := en.startDeviceWithUserCode(ctx, c, userHash); !db.IsUniqueViolation(err) {
		t.Fatalf("a user code taken already: %v, want a unique violation", err)
	}
	poll := func(at time.Duration) store.DeviceState {
		t.Helper()
		d, err := en.st.PollDevice(ctx, store.DevicePoll{DeviceCodeHash: deviceHash, Now: t0.Add(at), Grace: 500 * time.Millisecond, Step: 5 * time.Second,
			MaxInterval: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := poll(time.Second); d.Status != "pending" || d.Slowed || d.ID != id || d.ClientID != c.ID || !d.Expires.Equal(t0.Add(10*time.Minute)) {
		t.Fatalf("first poll: %+v", d)
	}
	if d := poll(3 * time.Second); !d.Slowed {
		t.Fatal("a poll two seconds after the last is too fast for a 5 s interval")
	}
	if d := poll(12 * time.Second); !d.Slowed {
		t.Fatal("a poll nine seconds after the last is too fast: the slowed poll grew the interval to 10 s")
	}
	if d := poll(27 * time.Second); d.Slowed {
		t.Fatal("a poll fifteen seconds after the last keeps the grown interval")
	}
	p, err := en.st.PendingDevice(ctx, userHash, t0)
	if err != nil || p.ID != id || p.ClientID != c.ID || !slices.Equal(p.Scopes, []string{"openid"}) || p.Resources != nil {
		t.Fatalf("PendingDevice: %+v %v", p, err)
	}
	// The resources a device request named come back with it.
	resHash := token.Hash(db.NewID())
	if err := en.st.StartDevice(ctx, store.DeviceAuthorization{ID: db.NewID(), DeviceCodeHash: token.Hash(token.New("hm_dc_")), UserCodeHash: resHash,
		ClientID: c.ID, Scopes: []string{"openid"}, Resources: []string{"https://api.example/"}, Interval: 5 * time.Second, Created: t0,
		Expires: t0.Add(10 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if rp, err := en.st.PendingDevice(ctx, resHash, t0); err != nil || !slices.Equal(rp.Resources, []string{"https://api.example/"}) {
		t.Fatalf("PendingDevice with resources: %+v %v", rp, err)
	}
	decisions := race(t, 4, func() (bool, error) {
		var won bool
		err := en.d.Tx(ctx, func(tx *db.Tx) error {
			var err error
			won, err = en.st.DecideDevice(ctx, tx, store.DeviceDecision{ID: id, Approved: true, UserID: u, AuthTime: t0, Context: `{"acr":"1"}`, Now: t0.Add(time.Minute)})
			return err
		})
		return won, err
	})
	if decisions != 1 {
		t.Fatalf("%d of 4 racing decisions took, want 1", decisions)
	}
	if _, err := en.st.PendingDevice(ctx, userHash, t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a decided authorization is pending: %v", err)
	}
	if d := poll(time.Minute + 30*time.Second); d.Status != "approved" || d.UserID != u || d.Context != `{"acr":"1"}` || !d.AuthTime.Equal(t0) {
		t.Fatalf("poll after approval: %+v", d)
	}
	redemptions := race(t, 6, func() (bool, error) {
		var won bool
		err := en.d.Tx(ctx, func(tx *db.Tx) error {
			var err error
			won, err = en.st.RedeemDevice(ctx, tx, id)
			return err
		})
		return won, err
	})
	if redemptions != 1 {
		t.Fatalf("%d of 6 racing redemptions won, want 1", redemptions)
	}
	if _, err := en.st.PollDevice(ctx, store.DevicePoll{DeviceCodeHash: token.Hash("none"), Now: t0}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown device code: %v", err)
	}
}

// startDeviceWithUserCode starts a device authorization with a given user
// code hash (to provoke a collision).
func (en *env) startDeviceWithUserCode(ctx context.Context, c store.Client, userHash string) (string, string, error) {
	id, deviceHash := db.NewID(), token.Hash(token.New("hm_dc_"))
	return id, deviceHash, en.st.StartDevice(ctx, store.DeviceAuthorization{ID: id, DeviceCodeHash: deviceHash, UserCodeHash: userHash, ClientID: c.ID,
		Scopes: []string{"openid"}, Interval: 5 * time.Second, Created: t0, Expires: t0.Add(10 * time.Minute)})
}

// testInitialTokens: an initial access token registers at most max_clients
// clients, however many race (RFC 7591 §3), and stops when revoked.
func testInitialTokens(t *testing.T, en *env) {
	ctx := context.Background()
	expires := t0.Add(time.Hour)
	iat := store.InitialAccessToken{ID: db.NewID(), Name: "ci", MaxClients: 3, AllowedScopes: []string{"openid"}, CreatedAt: t0, ExpiresAt: &expires}
	hash := token.Hash(db.NewID())
	if err := en.st.CreateInitialToken(ctx, iat, hash); err != nil {
		t.Fatal(err)
	}
	spent := race(t, 8, func() (bool, error) {
		var ok bool
		err := en.d.Tx(ctx, func(tx *db.Tx) error {
			id, allowed, err := en.st.SpendInitialToken(ctx, tx, hash, t0)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			ok = err == nil && id == iat.ID && slices.Equal(allowed, []string{"openid"})
			return err
		})
		return ok, err
	})
	if spent != 3 {
		t.Fatalf("%d of 8 racing registrations counted, want max_clients = 3", spent)
	}
	list, total, err := en.st.InitialTokens(ctx, 100, 0)
	i := slices.IndexFunc(list, func(x store.InitialAccessToken) bool { return x.ID == iat.ID })
	if err != nil || total < 1 || i < 0 || list[i].ClientsRegistered != 3 || list[i].ExpiresAt == nil || !list[i].ExpiresAt.Equal(expires) || list[i].RevokedAt != nil {
		t.Fatalf("InitialTokens: %+v %v", list, err)
	}
	if scopes, err := en.st.InitialTokenScopes(ctx, iat.ID); err != nil || !slices.Equal(scopes, []string{"openid"}) {
		t.Fatalf("InitialTokenScopes: %v %v", scopes, err)
	}
	other := store.InitialAccessToken{ID: db.NewID(), Name: "other", MaxClients: 5, AllowedScopes: []string{}, CreatedAt: t0}
	otherHash := token.Hash(db.NewID())
	if err := en.st.CreateInitialToken(ctx, other, otherHash); err != nil {
		t.Fatal(err)
	}
	for range 2 { // revoking twice changes nothing the second time
		if err := en.st.RevokeInitialToken(ctx, other.ID, t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := en.d.Tx(ctx, func(tx *db.Tx) error {
		_, _, err := en.st.SpendInitialToken(ctx, tx, otherHash, t0)
		return err
	}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a revoked token spent: %v", err)
	}
	if err := en.st.RevokeInitialToken(ctx, db.NewID(), t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoking an unknown token: %v", err)
	}
}

// testSigningKeys: of racing inserts of one generation one wins; a
// rotation retires the older generations; retired keys are deleted after
// their grace.
func testSigningKeys(t *testing.T, en *env) {
	ctx := context.Background()
	alg := "TEST-" + db.NewID()[:8] // an algorithm of this case alone
	first := race(t, 4, func() (bool, error) {
		return en.st.InsertSigningKey(ctx, store.SigningKey{Kid: db.NewID(), Alg: alg, Generation: 1, Sealed: "sealed-1"}, t0)
	})
	if first != 1 {
		t.Fatalf("%d of 4 racing first keys won, want 1", first)
	}
	rotations := race(t, 4, func() (bool, error) {
		return en.st.RotateSigningKey(ctx, store.SigningKey{Kid: db.NewID(), Alg: alg, Generation: 2, Sealed: "sealed-2"}, t0.Add(time.Hour))
	})
	if rotations != 1 {
		t.Fatalf("%d of 4 racing rotations won, want 1", rotations)
	}
	keys := en.keys(t, alg)
	if len(keys) != 2 || keys[0].Generation != 2 || !keys[0].Retired.IsZero() || keys[1].Generation != 1 || !keys[1].Retired.Equal(t0.Add(time.Hour)) ||
		!keys[0].Activated.Equal(t0.Add(time.Hour)) || keys[1].Sealed != "sealed-1" {
		t.Fatalf("keys after rotation: %+v", keys)
	}
	if n, err := en.st.DeleteRetiredSigningKeys(ctx, t0.Add(30*time.Minute)); err != nil || n != 0 {
		t.Fatalf("nothing retired that early: %d %v", n, err)
	}
	if _, err := en.st.DeleteRetiredSigningKeys(ctx, t0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if keys := en.keys(t, alg); len(keys) != 1 || keys[0].Generation != 2 {
		t.Fatalf("after deleting the retired key: %+v", keys)
	}
}

// session inserts a browser session of userID, live for an hour from t0.
func (en *env) session(t *testing.T, userID string) string {
	t.Helper()
	id := db.NewID()
	if _, err := en.d.ExecContext(context.Background(), `INSERT INTO sessions (id, user_id, token_hash, auth_time, created_at, expires_at, last_activity_at)
		VALUES ($1, $2, $3, $4, $4, $5, $4)`, id, userID, token.Hash(id), db.TS(t0), db.TS(t0.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	return id
}

// testSessionGrants: a family granted in a session is noted once; when the
// session is revoked its grants are queued (the trigger), closed by one
// instance, and a logout token is queued for each client that takes them
// (Back-Channel Logout 1.0 §2.5); a session that merely expired is found
// by the full sweep, to close without notice.
func testSessionGrants(t *testing.T, en *env) {
	ctx := context.Background()
	u := en.user(t)
	uri := "https://rp.example/logout"
	takes, silent := en.client(t, u, func(c *store.Client) { c.BackchannelLogoutURI = &uri }), en.client(t, u)
	sess := en.session(t, u)
	for _, c := range []store.Client{takes, silent} {
		f := family(c, u)
		f.SessionID = sess
		for range 2 { // noted once
			en.tx(t, func(tx *db.Tx) error { return en.st.RecordSessionGrant(ctx, tx, f, t0) })
		}
	}
	if _, err := en.d.ExecContext(ctx, `UPDATE sessions SET revoked_at = $1 WHERE id = $2`, db.TS(t0), sess); err != nil {
		t.Fatal(err)
	}
	queued, err := en.st.QueuedSessionEnds(ctx)
	if err != nil || !slices.Contains(queued, store.EndedSession{SessionID: sess, Notify: true}) {
		t.Fatalf("QueuedSessionEnds: %+v %v", queued, err)
	}
	swept, err := en.st.EndedSessions(ctx, t0)
	if err != nil || !slices.Contains(swept, store.EndedSession{SessionID: sess, Notify: true}) {
		t.Fatalf("EndedSessions: %+v %v", swept, err)
	}
	var users map[string]string
	en.tx(t, func(tx *db.Tx) error {
		var err error
		if users, err = en.st.EndSessionGrants(ctx, tx, sess, t0); err != nil {
			return err
		}
		for client, user := range users {
			ok, err := en.st.QueueLogout(ctx, tx, store.Logout{ClientID: client, UserID: user, SessionID: sess}, t0)
			if err != nil || ok != (client == takes.ID) {
				t.Errorf("QueueLogout for %s: %v %v", client, ok, err)
			}
		}
		return nil
	})
	if len(users) != 2 || users[takes.ID] != u || users[silent.ID] != u {
		t.Fatalf("EndSessionGrants: %v", users)
	}
	en.tx(t, func(tx *db.Tx) error {
		again, err := en.st.EndSessionGrants(ctx, tx, sess, t0)
		if len(again) != 0 {
			t.Errorf("closed twice: %v", again)
		}
		return err
	})
	if queued, _ := en.st.QueuedSessionEnds(ctx); slices.Contains(queued, store.EndedSession{SessionID: sess, Notify: true}) {
		t.Fatal("the session stays queued after its grants were closed")
	}
	expired := en.session(t, u)
	f := family(takes, u)
	f.SessionID = expired
	en.tx(t, func(tx *db.Tx) error { return en.st.RecordSessionGrant(ctx, tx, f, t0) })
	swept, err = en.st.EndedSessions(ctx, t0.Add(2*time.Hour))
	if err != nil || !slices.Contains(swept, store.EndedSession{SessionID: expired}) {
		t.Fatalf("an expired session's grant: %+v %v, want it without notice", swept, err)
	}
	if err := en.st.DeleteEndedSessionGrants(ctx, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := en.d.QueryRowContext(ctx, `SELECT COUNT(*) FROM oauth_session_grants WHERE session_id = $1`, sess).Scan(&left); err != nil || left != 0 {
		t.Fatalf("closed grant records left: %d %v", left, err)
	}
}

// keys are the stored keys of alg.
func (en *env) keys(t *testing.T, alg string) []store.SigningKey {
	t.Helper()
	all, err := en.st.SigningKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(all, func(k store.SigningKey) bool { return k.Alg != alg })
}

// testUsers: the standing of users as the OAuth rules read it.
func testUsers(t *testing.T, en *env) {
	ctx := context.Background()
	u := en.user(t)
	if ok, err := en.st.UserUsable(ctx, en.d, u, t0); !ok || err != nil {
		t.Fatalf("UserUsable: %v %v", ok, err)
	}
	if ok, err := en.st.UserUsable(ctx, en.d, db.NewID(), t0); ok || err != nil {
		t.Fatalf("a missing user: %v %v", ok, err)
	}
	if super, usable, err := en.st.Owner(ctx, u, t0); super || !usable || err != nil {
		t.Fatalf("Owner: %v %v %v", super, usable, err)
	}
	if _, _, err := en.st.Owner(ctx, db.NewID(), t0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a missing owner: %v", err)
	}
}

// testTableSizes: the collector reports one gauge per token table.
func testTableSizes(t *testing.T, en *env) {
	ch := make(chan prometheus.Metric, 10)
	en.st.TableSizes().Collect(ch)
	close(ch)
	n := 0
	for range ch {
		n++
	}
	if n != 5 {
		t.Fatalf("TableSizes collected %d gauges, want 5", n)
	}
}

// testPurge: what nothing needs any more goes; a live family and a spent
// code within its day of grace stay.
func testPurge(t *testing.T, en *env) {
	ctx := context.Background()
	u := en.user(t)
	c := en.client(t, u)
	live := en.stored(t, family(c, u))
	dead := en.stored(t, family(c, u))
	en.tx(t, func(tx *db.Tx) error {
		f := dead.Family
		_, err := en.st.RevokeFamily(ctx, tx, f.ID, t0)
		return err
	})
	kind := "open"
	unused := en.client(t, "", func(c *store.Client) { c.DynamicRegistration = &kind })
	hash := en.code(t, c, u, family(c, u))
	deleted, err := en.st.Purge(ctx, store.PurgeOptions{Now: t0.Add(30 * time.Minute), RegistrationExpiry: 10 * time.Minute})
	if err != nil || !deleted {
		t.Fatalf("Purge: %v, deleted a client: %v", err, deleted)
	}
	if _, err := en.st.TokenByHash(ctx, en.d, dead.RefreshHash); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a revoked family's refresh token stays: %v", err)
	}
	if !en.live(t, live.access, t0.Add(30*time.Minute)) {
		t.Fatal("a live family's token was purged")
	}
	if _, err := en.st.Client(ctx, en.d, unused.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unused open registration stays: %v", err)
	}
	if _, err := en.redeem(hash, t0.Add(30*time.Minute)); err != nil {
		t.Fatalf("a code within its retention: %v", err)
	}
	if _, err := en.st.Purge(ctx, store.PurgeOptions{Now: t0.Add(48 * time.Hour), RegistrationExpiry: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := en.redeem(hash, t0.Add(48*time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a code a day past its expiry: %v, want purged", err)
	}
	if _, err := en.st.TokenByHash(ctx, en.d, live.AccessHash); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an expired family stays: %v", err)
	}
}
