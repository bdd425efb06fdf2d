package twofactor

import (
	"context"
	"strconv"
	"strings"

	"hmid/internal/authn"
	"hmid/internal/db"
)

// EnabledAmong returns which of the users userIDs have two-factor
// authentication on, in one query, for a list of users. Reading other
// users' two-factor state needs what GET …/2fa/status with user_id needs
// (mayActOnOthers): without it the answer is Forbidden.
func (s *Service) EnabledAmong(ctx context.Context, p *authn.Principal, userIDs []string) (map[string]bool, error) {
	if err := mayActOnOthers(p); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	if len(userIDs) == 0 {
		return out, nil
	}
	args := []any{stateEnabled}
	marks := make([]string, len(userIDs))
	for i, id := range userIDs {
		args = append(args, id)
		marks[i] = "$" + strconv.Itoa(len(args))
	}
	ids, err := db.All(ctx, s.DB, db.ScanString, `SELECT user_id FROM two_factor WHERE status = $1 AND user_id IN (`+strings.Join(marks, ", ")+`)`, args...)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}
