package bans

import (
	"context"
	"strconv"
	"strings"

	"hmid/internal/db"
)

// BannedAmong returns which of the users userIDs have a ban in force now
// (the status GET /v1/users/{id}/ban reports as active), in one query: a
// list of users shows it on each row.
func (s *Service) BannedAmong(ctx context.Context, userIDs []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(userIDs) == 0 {
		return out, nil
	}
	// ActiveBanSQL compares with the time bound to $2; the ids take $1 and $3 on.
	args := []any{userIDs[0], db.TS(s.Clock.Now())}
	marks := []string{"$1"}
	for _, id := range userIDs[1:] {
		args = append(args, id)
		marks = append(marks, "$"+strconv.Itoa(len(args)))
	}
	ids, err := db.All(ctx, s.DB, db.ScanString, `SELECT DISTINCT user_id FROM bans WHERE user_id IN (`+strings.Join(marks, ", ")+`) AND `+db.ActiveBanSQL, args...)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}
