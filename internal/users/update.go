package users

import (
	"context"
	"slices"
	"strings"

	"hmid/internal/apperr"
	"hmid/internal/audit"
	"hmid/internal/authn"
	"hmid/internal/db"
	"hmid/internal/httpx"
)

// The changes a user or a manager makes to a user (spec 2, Users: PATCH
// /v1/users/{id}, …/locale, …/username). The REST handlers and the account
// console call these methods, so the rules live here once.

// Changes are the fields of a user update; only the fields that are set
// change (a JSON body of PATCH /v1/users/{id} decodes into it).
type Changes struct {
	Username       httpx.Opt[string] `json:"username"`
	Email          httpx.Opt[string] `json:"email"`
	AvatarURL      httpx.Opt[string] `json:"avatar_url"`
	PrivacyMode    httpx.Opt[bool]   `json:"privacy_mode"`
	AvatarsEnabled httpx.Opt[bool]   `json:"avatars_enabled"`
}

// check validates each field on its own; the email comes back trimmed and
// lower-cased.
func (c *Changes) check() error {
	if !c.Username.Set && !c.Email.Set && !c.AvatarURL.Set && !c.PrivacyMode.Set && !c.AvatarsEnabled.Set {
		return apperr.Invalid("give at least one of username, email, avatar_url, privacy_mode, avatars_enabled")
	}
	if c.Username.Set {
		if c.Username.Null {
			return apperr.Invalid("username cannot be null")
		}
		if err := ValidUsername(c.Username.Value); err != nil {
			return err
		}
	}
	if (c.PrivacyMode.Set && c.PrivacyMode.Null) || (c.AvatarsEnabled.Set && c.AvatarsEnabled.Null) {
		return apperr.Invalid("privacy_mode and avatars_enabled must be booleans")
	}
	c.Email.Value = strings.ToLower(strings.TrimSpace(c.Email.Value))
	if c.Email.Set && !c.Email.Null && !validEmail(c.Email.Value) {
		return apperr.Invalid("email is not a valid address")
	}
	if c.AvatarURL.Set && !c.AvatarURL.Null && !validURL(c.AvatarURL.Value) {
		return apperr.Invalid("avatar_url must be an absolute http or https URL of at most 2048 characters")
	}
	return nil
}

// checkAvatar refuses an avatar URL for a user whose avatars are off, after
// this same change's avatars_enabled is applied.
func (c *Changes) checkAvatar(u User) error {
	avatars := u.AvatarsEnabled
	if c.AvatarsEnabled.Set {
		avatars = c.AvatarsEnabled.Value
	}
	if c.AvatarURL.Set && !c.AvatarURL.Null && !avatars {
		return apperr.Invalid("avatars are disabled for this user; enable avatars_enabled before setting avatar_url")
	}
	return nil
}

// Update changes the fields of c on user id for p, in one transaction with
// one user_updated event (ev carries the request's address, user agent and
// source). An email set here is the user's contact address; it is not
// verified, so the sign-in upsert never links accounts by it (only by
// verified platform-account emails). Errors: Validation (a field), NotFound,
// Forbidden (another super admin), Conflict (username or email taken).
func (s *Service) Update(ctx context.Context, p *authn.Principal, id string, c Changes, ev audit.Event) error {
	if err := c.check(); err != nil {
		return err
	}
	return s.manageActive(ctx, p, id, func(tx *db.Tx, u User) error {
		if err := c.checkAvatar(u); err != nil {
			return err
		}
		fields, err := c.store(ctx, &userUpdate{tx: tx, id: id, now: db.TS(s.Clock.Now())}, u)
		if err != nil {
			return err
		}
		return s.recordUpdate(ctx, tx, p, id, fields, ev)
	})
}

// SetLocale sets the preferred locale of user id (nil clears it: mails then
// use the default, en). The locale must be one of SupportedLocales (compared
// case-insensitively). Errors: Validation, NotFound, Forbidden.
func (s *Service) SetLocale(ctx context.Context, p *authn.Principal, id string, locale *string, ev audit.Event) error {
	var v any
	if locale != nil {
		supported, err := s.SupportedLocales(ctx)
		if err != nil {
			return err
		}
		loc := strings.ToLower(strings.TrimSpace(*locale))
		if !slices.Contains(supported, loc) {
			return apperr.Invalid("locale must be one of %s", strings.Join(supported, ", "))
		}
		v = loc
	}
	return s.manageActive(ctx, p, id, func(tx *db.Tx, _ User) error {
		if _, err := tx.ExecContext(ctx, `UPDATE users SET preferred_locale = $1, updated_at = $2 WHERE id = $3`, v, db.TS(s.Clock.Now()), id); err != nil {
			return err
		}
		return s.recordUpdate(ctx, tx, p, id, []string{"preferred_locale"}, ev)
	})
}

// SetUsername renames user id. The same name is no change (no event); a
// name another user has, compared case-insensitively, is a Conflict.
// Errors: Validation, NotFound, Forbidden, Conflict.
func (s *Service) SetUsername(ctx context.Context, p *authn.Principal, id, name string, ev audit.Event) error {
	if err := ValidUsername(name); err != nil {
		return err
	}
	return s.manageActive(ctx, p, id, func(tx *db.Tx, u User) error {
		if u.Username == name {
			return nil
		}
		_, err := tx.ExecContext(ctx, `UPDATE users SET username = $1, updated_at = $2 WHERE id = $3`, name, db.TS(s.Clock.Now()), id)
		if db.IsUniqueViolation(err) {
			return apperr.Conflictf("username %q is taken", name)
		}
		if err != nil {
			return err
		}
		return s.recordUpdate(ctx, tx, p, id, []string{"username"}, ev)
	})
}

// userUpdate writes the columns of one user, one statement each, and
// remembers their names for the audit event.
type userUpdate struct {
	tx     *db.Tx
	id     string
	now    int64 // updated_at, in db.TS form
	fields []string
}

func (x *userUpdate) set(ctx context.Context, col string, v any) error {
	_, err := x.tx.ExecContext(ctx, `UPDATE users SET `+col+` = $1, updated_at = $2 WHERE id = $3`, v, x.now, x.id)
	x.fields = append(x.fields, col)
	return err
}

// store writes the fields of c to the user u through x and returns the
// names of the columns written. A username equal to the current one is not
// written; a taken username or email is a 409.
func (c *Changes) store(ctx context.Context, x *userUpdate, u User) ([]string, error) {
	if c.Username.Set && c.Username.Value != u.Username {
		if err := x.set(ctx, "username", c.Username.Value); err != nil {
			if db.IsUniqueViolation(err) {
				return nil, apperr.Conflictf("username %q is taken", c.Username.Value)
			}
			return nil, err
		}
	}
	if c.Email.Set {
		if err := x.setEmail(ctx, c.Email); err != nil {
			return nil, err
		}
	}
	if c.AvatarURL.Set {
		if err := x.set(ctx, "avatar_url", nullable(c.AvatarURL.Value)); err != nil {
			return nil, err
		}
	}
	if c.PrivacyMode.Set {
		if err := x.set(ctx, "privacy_mode", c.PrivacyMode.Value); err != nil {
			return nil, err
		}
	}
	if c.AvatarsEnabled.Set {
		if err := x.setAvatars(ctx, c.AvatarsEnabled.Value); err != nil {
			return nil, err
		}
	}
	return x.fields, nil
}

// setEmail writes the contact address (null clears it); an address another
// user has is a 409.
func (x *userUpdate) setEmail(ctx context.Context, email httpx.Opt[string]) error {
	var v any
	if !email.Null {
		taken, err := emailTaken(ctx, x.tx, email.Value, x.id)
		if err != nil {
			return err
		}
		if taken {
			return apperr.Conflictf("email address is in use by another user")
		}
		v = email.Value
	}
	return x.set(ctx, "email", v)
}

// setAvatars writes avatars_enabled; turning avatars off removes the stored
// avatar URLs of the user and of its platform accounts (spec 2, User).
func (x *userUpdate) setAvatars(ctx context.Context, on bool) error {
	if err := x.set(ctx, "avatars_enabled", on); err != nil {
		return err
	}
	if on {
		return nil
	}
	if _, err := x.tx.ExecContext(ctx, `UPDATE users SET avatar_url = NULL WHERE id = $1`, x.id); err != nil {
		return err
	}
	_, err := x.tx.ExecContext(ctx, `UPDATE platform_accounts SET avatar_url = NULL, updated_at = $1 WHERE user_id = $2 AND avatar_url IS NOT NULL`, x.now, x.id)
	return err
}

// recordUpdate writes the user_updated event of a change to the columns
// fields of user id, on ev (address, user agent, source).
func (s *Service) recordUpdate(ctx context.Context, tx *db.Tx, p *authn.Principal, id string, fields []string, ev audit.Event) error {
	if fields == nil {
		fields = []string{}
	}
	return s.recordUserEvent(ctx, tx, p, id, audit.UserUpdated, "user updated", map[string]any{"fields": fields}, ev)
}

// recordUserEvent writes an audit event of type eventType on user id, done
// by p, on ev (address, user agent, source).
func (s *Service) recordUserEvent(ctx context.Context, tx *db.Tx, p *authn.Principal, id, eventType, description string, metadata map[string]any, ev audit.Event) error {
	ev.UserID, ev.ActorID, ev.EventType, ev.ResourceType, ev.ResourceID = id, actorIfOther(p, id), eventType, "user", id
	ev.Description, ev.Metadata = description, metadata
	_, err := s.Audit.Record(ctx, tx, ev)
	return err
}
