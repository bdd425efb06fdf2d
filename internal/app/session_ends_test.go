package app_test

import (
	"context"
	"net/http"
	"testing"

	"hmid/internal/apptest"
)

// TestSessionEndsAreQueued: a session revoked or deleted while an OAuth
// grant is open in it is queued for the back-channel logout worker by the
// database itself (oauth_session_ends), whichever statement ended it; a
// session without an open grant is not; a pass of the worker ends the
// queued session's grants and empties the queue.
func TestSessionEndsAreQueued(t *testing.T) {
	apptest.Each(t, func(t *testing.T, e *apptest.Env) {
		c := mkClient(t, e, e.SystemKey, map[string]any{"name": "Queued Ends"})
		queued := func(sessionID string) bool {
			return count(t, e, `SELECT COUNT(*) FROM oauth_session_ends WHERE session_id = $1`, sessionID) == 1
		}
		openGrants := func(sessionID string) int {
			return count(t, e, `SELECT COUNT(*) FROM oauth_session_grants WHERE session_id = $1 AND ended_at IS NULL`, sessionID)
		}
		// The server's own worker may have swept the queue already (it
		// passes every 2 s); then the grants are ended.
		queuedOrSwept := func(sessionID string) bool {
			return queued(sessionID) != (openGrants(sessionID) == 0)
		}

		// Revoked with a grant open: queued, then swept.
		u := e.NewUser(t, apptest.UserSpec{})
		tok, sessionID := e.NewSession(t, u.ID)
		grantTokens(t, e, tok, c, "openid")
		e.Call(t, "DELETE", "/v1/users/me/sessions/"+sessionID, u.Token, nil, http.StatusOK)
		if !queuedOrSwept(sessionID) {
			t.Fatalf("revoked session: queued %v, open grants %d", queued(sessionID), openGrants(sessionID))
		}
		if _, err := e.Server.Backchannel.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if queued(sessionID) || openGrants(sessionID) != 0 {
			t.Fatalf("after a pass: queued %v, open grants %d", queued(sessionID), openGrants(sessionID))
		}

		// Revoked without a grant: not queued.
		_, bare := e.NewSession(t, u.ID)
		e.Call(t, "DELETE", "/v1/users/me/sessions/"+bare, u.Token, nil, http.StatusOK)
		if queued(bare) {
			t.Fatal("a session without grants was queued")
		}

		// Deleted with its user (ON DELETE CASCADE): queued.
		gone := e.NewUser(t, apptest.UserSpec{})
		gtok, gsession := e.NewSession(t, gone.ID)
		grantTokens(t, e, gtok, c, "openid")
		if _, err := e.Server.DB.ExecContext(context.Background(), `DELETE FROM users WHERE id = $1`, gone.ID); err != nil {
			t.Fatal(err)
		}
		if !queuedOrSwept(gsession) {
			t.Fatal("a session deleted with its user was neither queued nor swept")
		}
	})
}
