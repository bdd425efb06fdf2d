package accounts

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
	hmail "hmid/internal/mail"
	"hmid/internal/token"
)

// An email change and an email link are both a request confirmed by a
// mailed token: one pending request per user in its own table (email_change_
// requests, email_link_requests), replaced by a new one, used up by its
// verification. The steps they share live here; what the confirmation does
// (change the address, or create an account) stays with each.

// mailRequest describes a new request: its table, the columns after id,
// user_id and token_hash with their values, and the mail that carries its
// token.
type mailRequest struct {
	table  string
	cols   string // the columns after id, user_id, token_hash
	vals   []any
	kind   string
	page   string // the confirmation page the mail links to
	to     string
	locale string
	data   hmail.Data // Link, Token and ExpiresAt are filled in
}

// startRequest stores req for userID in place of an earlier one and mails
// its token; when the mail cannot be sent the request is removed again, so
// no token exists that nobody received. It returns when the token expires.
func (s *Service) startRequest(ctx context.Context, userID string, req mailRequest) (time.Time, error) {
	now := s.Clock.Now()
	exp := now.Add(TokenTTL)
	tok := token.New("")
	id := uuid.NewString()
	vals := append([]any{id, userID, token.Hash(tok)}, req.vals...)
	vals = append(vals, nullable(authn.From(ctx).UserID), db.TS(now), db.TS(exp))
	marks := make([]string, len(vals))
	for i := range marks {
		marks[i] = "$" + strconv.Itoa(i+1)
	}
	// One statement replaces the earlier request (user_id is unique): a
	// DELETE then INSERT lets two concurrent requests both find nothing to
	// delete and collide on the index (a 500 on PostgreSQL), where the
	// upsert makes the later one win.
	sets := []string{"id = excluded.id", "token_hash = excluded.token_hash"}
	for _, c := range strings.Split(req.cols, ",") {
		c = strings.TrimSpace(c)
		sets = append(sets, c+" = excluded."+c)
	}
	sets = append(sets, "requested_by = excluded.requested_by", "created_at = excluded.created_at", "expires_at = excluded.expires_at")
	_, err := s.DB.ExecContext(ctx, `INSERT INTO `+req.table+` (id, user_id, token_hash, `+req.cols+`, requested_by, created_at, expires_at)
		VALUES (`+strings.Join(marks, ", ")+`)
		ON CONFLICT (user_id) DO UPDATE SET `+strings.Join(sets, ", "), vals...)
	if err != nil {
		return time.Time{}, err
	}
	req.data.Link, req.data.Token, req.data.ExpiresAt = s.link(req.page, tok), tok, exp
	if err := s.send(ctx, req.kind, req.to, req.locale, req.data); err != nil {
		_, _ = s.DB.ExecContext(ctx, `DELETE FROM `+req.table+` WHERE id = $1`, id)
		return time.Time{}, err
	}
	return exp, nil
}

// readRequest finds the unexpired request in table that tok confirms and
// reads its id, its user and cols into dest; the caller must be that user
// or allowed to write users, and the user must still exist. Any other
// token is errBadToken.
func readRequest(ctx context.Context, tx *db.Tx, table, cols, tok string, now time.Time, dest ...any) (id string, u user, err error) {
	var userID string
	err = tx.QueryRowContext(ctx, `SELECT id, user_id, `+cols+` FROM `+table+` WHERE token_hash = $1 AND expires_at > $2`,
		token.Hash(tok), db.TS(now)).Scan(append([]any{&id, &userID}, dest...)...)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !mayVerify(authn.From(ctx), userID)) {
		return "", u, errBadToken
	}
	if err != nil {
		return "", u, err
	}
	if u, err = loadUser(ctx, tx, userID); err != nil {
		return "", u, errBadToken
	}
	return id, u, nil
}

// useRequest spends the request id of table for userID once its address
// addr is checked to be still free (checkEmailFree): single use, of two
// racing verifications only one deletes the row and the other is errBadToken.
func useRequest(ctx context.Context, tx *db.Tx, table, id, addr, userID string) error {
	if err := checkEmailFree(ctx, tx, addr, userID); err != nil {
		return err
	}
	err := db.ExecOne(ctx, tx, "request", `DELETE FROM `+table+` WHERE id = $1`, id)
	if apperr.Is(err, apperr.NotFound) {
		return errBadToken
	}
	return err
}

// bindToken reads the {token} body of a verification; false when it was
// refused (and answered).
func bindToken(w http.ResponseWriter, r *http.Request) (string, bool) {
	var b struct {
		Token string `json:"token"`
	}
	if !httpx.Bind(w, r, &b) {
		return "", false
	}
	tok := strings.TrimSpace(b.Token)
	if tok == "" {
		httpx.Error(w, r, apperr.Invalid("token is required"))
		return "", false
	}
	return tok, true
}
