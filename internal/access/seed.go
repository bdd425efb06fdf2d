package access

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"hmid/internal/db"
	"hmid/internal/token"
)

// Catalogue is every resource:action the spec names (spec 1, Permission; spec 3).
var Catalogue = []struct{ Resource, Action, Description string }{
	{"*", "*", "All permissions"},
	{"users", "read", "Read users"},
	{"users", "write", "Change users and their roles"},
	{"users", "delete", "Delete users"},
	{"users", "ban", "Ban and unban users"},
	{"roles", "read", "Read roles"},
	{"roles", "write", "Create and change roles and their permissions"},
	{"roles", "delete", "Delete roles"},
	{"permissions", "read", "Read permissions"},
	{"permissions", "write", "Create permissions"},
	{"api_keys", "read", "Read API keys"},
	{"api_keys", "write", "Create and change API keys"},
	{"api_keys", "delete", "Delete API keys"},
	{"api_keys", "*", "All API key operations"},
	{"oauth_clients", "read", "Read every OAuth client"},
	{"oauth_clients", "update", "Change every OAuth client"},
	{"oauth_clients", "delete", "Delete every OAuth client"},
	{"oauth_clients", "*", "All OAuth client operations"},
	{"two_factor", "read", "Read two-factor status"},
	{"two_factor", "write", "Change own two-factor settings"},
	{"two_factor", "manage", "Manage two-factor settings of other users"},
	{"audit", "read", "Read the audit log"},
	{"audit", "write", "Write audit events and review reports"},
	{"settings", "read", "Read settings and system config"},
	{"settings", "write", "Change settings, system config and platforms"},
	{"settings", "delete", "Delete settings"},
	{"gps", "read", "Read GPS points"},
	{"gps", "write", "Record GPS points"},
	{"gps", "delete", "Delete GPS points"},
	{"devices", "read", "Read devices"},
	{"devices", "write", "Create and change devices"},
	{"devices", "delete", "Delete devices"},
	{"trips", "read", "Read trips and templates"},
	{"trips", "write", "Create and change trips and templates"},
	{"trips", "delete", "Delete trips and templates"},
	{"locations", "read", "Read locations"},
	{"locations", "write", "Create and change locations and contacts"},
	{"locations", "delete", "Delete locations"},
	{"geofences", "read", "Read geofences"},
	{"geofences", "write", "Create and change geofences"},
	{"geofences", "delete", "Delete geofences"},
	{"trip_categories", "read", "Read trip categories"},
	{"trip_categories", "write", "Create and change trip categories"},
	{"trip_categories", "delete", "Delete trip categories"},
	{"pegel", "read", "Look up water levels"},
	{"chatplatform", "read", "Read chat-platform guilds, members and settings"},
	{"chatplatform", "edit", "Change chat-platform bot settings"},
	{"chatplatform", "sync", "Sync chat-platform guilds"},
	{"chatplatform", "delete", "Delete stored chat-platform guilds"},
	{"chatplatform", "guild.sync", "Sync the members of a chat-platform guild"},
	{"webhooks", "read", "Read webhook endpoints and their deliveries"},
	{"webhooks", "write", "Create, change, delete webhook endpoints, rotate their secrets, resend and test deliveries"},
}

// DefaultRoles are the system roles with their permissions (spec 1, Permission).
var DefaultRoles = []struct {
	ID, Name, Description string
	Permissions           []string
}{
	{"role_admin", "Admin", "Full access", []string{"*:*"}},
	{"role_system", "System", "Service-to-service access", []string{"*:*"}},
	{"role_user", "User", "Default role of every user", []string{"two_factor:read", "two_factor:write"}},
	{"role_moderator", "Moderator", "Community moderation", []string{"two_factor:read", "two_factor:write"}},
	{"role_developer", "Developer", "Registers OAuth clients and API keys", []string{"two_factor:read", "two_factor:write", "oauth_clients:*", "api_keys:*"}},
	{"role_api_read_only", "API Read Only", "Read-only API access", []string{"two_factor:read"}},
}

// DefaultUserRole is given to every new user.
const DefaultUserRole = "role_user"

// Seed ensures the permission catalogue and the default roles exist. It is
// idempotent and leaves later edits of role permissions alone: a default
// permission is added only when the role itself is created.
func (s *Service) Seed(ctx context.Context) error {
	now := db.TS(s.Clock.Now())
	return s.DB.Tx(ctx, func(tx *db.Tx) error {
		for _, p := range Catalogue {
			if _, err := tx.ExecContext(ctx, `INSERT INTO permissions (id, resource, action, description, created_at, updated_at)
				VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT DO NOTHING`, PermissionID(p.Resource, p.Action), p.Resource, p.Action, p.Description, now); err != nil {
				return fmt.Errorf("seed permission %s:%s: %w", p.Resource, p.Action, err)
			}
		}
		for _, r := range DefaultRoles {
			res, err := tx.ExecContext(ctx, `INSERT INTO roles (id, name, description, is_system, requires_two_factor, created_at, updated_at)
				VALUES ($1, $2, $3, TRUE, FALSE, $4, $4) ON CONFLICT DO NOTHING`, r.ID, r.Name, r.Description, now)
			if err != nil {
				return fmt.Errorf("seed role %s: %w", r.ID, err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				continue
			}
			for _, perm := range r.Permissions {
				res, act, _ := strings.Cut(perm, ":")
				if _, err := tx.ExecContext(ctx, `INSERT INTO role_permissions (role_id, permission_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
					r.ID, PermissionID(res, act), now); err != nil {
					return fmt.Errorf("seed role %s permission %s: %w", r.ID, perm, err)
				}
			}
		}
		return nil
	})
}

// EnsureSystemKey makes sure a system API key exists. With value set it ensures
// a key with exactly that value (idempotent). Without it, it creates a key only
// when no system key exists yet and returns it so the caller can print it once;
// otherwise it returns "".
func (s *Service) EnsureSystemKey(ctx context.Context, value string) (created string, err error) {
	now := db.TS(s.Clock.Now())
	if value != "" {
		if !token.IsAPIKey(value) || len(value) < len(token.PrefixAPIKey)+32 {
			return "", errors.New("HMID_SYSTEM_API_KEY must be hm_ followed by at least 32 letters and digits (generate one with `hmid keys create --system`)")
		}
		_, err := s.DB.ExecContext(ctx, `INSERT INTO api_keys (id, user_id, name, description, key_hash, key_prefix, scopes, is_active, is_system, created_at, updated_at)
			VALUES ($1, NULL, 'System', 'System API key from HMID_SYSTEM_API_KEY', $2, $3, '["*:*"]', TRUE, TRUE, $4, $4)
			ON CONFLICT (key_hash) DO UPDATE SET is_active = TRUE, is_system = TRUE`,
			uuid.NewString(), token.Hash(value), token.KeyPrefix(value), now)
		return "", err
	}
	var n int
	if err := s.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_keys WHERE is_system`).Scan(&n); err != nil {
		return "", err
	}
	if n > 0 {
		return "", nil
	}
	return s.CreateSystemKey(ctx, "System", "System API key created at first start")
}

// CreateSystemKey creates a new system API key and returns its value.
func (s *Service) CreateSystemKey(ctx context.Context, name, description string) (string, error) {
	key := token.New(token.PrefixAPIKey)
	now := db.TS(s.Clock.Now())
	_, err := s.DB.ExecContext(ctx, `INSERT INTO api_keys (id, user_id, name, description, key_hash, key_prefix, scopes, is_active, is_system, created_at, updated_at)
		VALUES ($1, NULL, $2, $3, $4, $5, '["*:*"]', TRUE, TRUE, $6, $6)`,
		uuid.NewString(), name, description, token.Hash(key), token.KeyPrefix(key), now)
	if err != nil {
		return "", err
	}
	return key, nil
}
