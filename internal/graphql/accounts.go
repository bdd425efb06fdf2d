package graphql

import (
	"context"
	"encoding/json"

	gql "github.com/graph-gophers/graphql-go"

	"hmid/internal/access"
	"hmid/internal/authn"
	"hmid/internal/platforms"
	"hmid/internal/twofactor"
)

// The two-factor resolvers pass the principal to twofactor.Service, whose
// Authorize applies the one access rule of the REST endpoints; an anonymous
// caller is UNAUTHENTICATED there.

func userArg(id *string) string {
	if id == nil {
		return ""
	}
	return *id
}

type twoFactorStatus struct {
	Enabled              bool
	EnabledAt            *string
	SetupPlatform        *string
	BackupCodesRemaining int32
}

// TwoFactorStatus resolves query twoFactorStatus (GET /v1/users/me/2fa/status).
func (r *resolver) TwoFactorStatus(ctx context.Context, args struct{ UserID *string }) (*twoFactorStatus, error) {
	st, err := r.d.TwoFactor.Status(ctx, authn.From(ctx), userArg(args.UserID))
	if err != nil {
		return nil, err
	}
	return &twoFactorStatus{
		Enabled: st.Enabled, EnabledAt: optTimestamp(st.EnabledAt), SetupPlatform: st.SetupPlatform,
		BackupCodesRemaining: int32(st.BackupCodesRemaining),
	}, nil
}

type twoFactorRequirement struct {
	Required        bool
	RequiredByRoles []string
	Enabled         bool
	CanEnable       bool
}

// UserRequiresTwoFactor resolves query userRequiresTwoFactor (GET /v1/users/me/2fa/requirement).
func (r *resolver) UserRequiresTwoFactor(ctx context.Context, args struct{ UserID *string }) (*twoFactorRequirement, error) {
	req, err := r.d.TwoFactor.Requirement(ctx, authn.From(ctx), userArg(args.UserID))
	if err != nil {
		return nil, err
	}
	return &twoFactorRequirement{Required: req.Required, RequiredByRoles: nonNil(req.RequiredByRoles), Enabled: req.Enabled, CanEnable: req.CanEnable}, nil
}

type setupInput struct {
	PlatformID *string
	UserID     *string
}

type twoFactorSetup struct {
	Secret       string
	QrCodeURL    string
	QrCodeImage  string
	ExpiresAt    string
	PlatformSlug string
}

// SetupTwoFactor resolves mutation setupTwoFactor (POST /v1/users/me/2fa/setup).
func (r *resolver) SetupTwoFactor(ctx context.Context, args struct{ Input *setupInput }) (*twoFactorSetup, error) {
	var in twofactor.SetupInput
	if args.Input != nil {
		in = twofactor.SetupInput{PlatformID: userArg(args.Input.PlatformID), UserID: userArg(args.Input.UserID)}
	}
	res, err := r.d.TwoFactor.Setup(ctx, authn.From(ctx), in)
	if err != nil {
		return nil, err
	}
	return &twoFactorSetup{Secret: res.Secret, QrCodeURL: res.QRCodeURL, QrCodeImage: res.QRCodeImage, ExpiresAt: timestamp(res.ExpiresAt), PlatformSlug: res.PlatformSlug}, nil
}

type codeInput struct {
	Code   string
	UserID *string
}

type twoFactorCodes struct {
	BackupCodes  []string
	Message      string
	PlatformSlug string
}

func codesView(c twofactor.CodesResult) *twoFactorCodes {
	return &twoFactorCodes{BackupCodes: nonNil(c.BackupCodes), Message: c.Message, PlatformSlug: c.PlatformSlug}
}

// VerifyTwoFactor resolves mutation verifyTwoFactor (POST /v1/users/me/2fa/verify).
func (r *resolver) VerifyTwoFactor(ctx context.Context, args struct{ Input codeInput }) (*twoFactorCodes, error) {
	res, err := r.d.TwoFactor.Verify(ctx, authn.From(ctx), userArg(args.Input.UserID), args.Input.Code, twofactor.ClientFrom(request(ctx)))
	if err != nil {
		return nil, err
	}
	return codesView(res), nil
}

// RegenerateBackupCodes resolves mutation regenerateBackupCodes
// (POST /v1/users/me/2fa/backup-codes/regenerate).
func (r *resolver) RegenerateBackupCodes(ctx context.Context, args struct{ Input codeInput }) (*twoFactorCodes, error) {
	res, err := r.d.TwoFactor.RegenerateBackupCodes(ctx, authn.From(ctx), userArg(args.Input.UserID), args.Input.Code, twofactor.ClientFrom(request(ctx)))
	if err != nil {
		return nil, err
	}
	return codesView(res), nil
}

// JSON is the JSON scalar: any JSON value, passed through unchanged.
type JSON struct{ Value any }

// ImplementsGraphQLType binds JSON to the schema's scalar JSON.
func (JSON) ImplementsGraphQLType(name string) bool { return name == "JSON" }

// UnmarshalGraphQL accepts any input value.
func (j *JSON) UnmarshalGraphQL(input any) error {
	j.Value = input
	return nil
}

// MarshalJSON writes the value.
func (j JSON) MarshalJSON() ([]byte, error) { return json.Marshal(j.Value) }

// DisableTwoFactor resolves mutation disableTwoFactor (DELETE
// /v1/users/me/2fa). The spec gives it no selection set, so it returns the
// JSON scalar holding the REST body {success, message}.
func (r *resolver) DisableTwoFactor(ctx context.Context, args struct{ Input codeInput }) (*JSON, error) {
	res, err := r.d.TwoFactor.Disable(ctx, authn.From(ctx), userArg(args.Input.UserID), args.Input.Code, twofactor.ClientFrom(request(ctx)))
	if err != nil {
		return nil, err
	}
	return &JSON{Value: res}, nil
}

type platformView struct {
	ID                 gql.ID
	Name               string
	Slug               string
	TwoFactorSupported bool
	TwoFactorRequired  bool
}

// Platforms resolves query platforms (GET /v1/platforms, public).
func (r *resolver) Platforms(ctx context.Context) (*[]platformView, error) {
	list, err := r.d.Platforms.List(ctx, false)
	return views(list, err, func(p platforms.Platform) platformView {
		return platformView{ID: gql.ID(p.ID), Name: p.Name, Slug: p.Slug, TwoFactorSupported: p.TwoFactorSupported, TwoFactorRequired: p.TwoFactorRequired}
	})
}

type roleView struct {
	ID                gql.ID
	Name              string
	RequiresTwoFactor bool
}

// RolesPermission is what query roles needs, as GET /v1/roles does (routes.go).
const RolesPermission = "roles:read"

// Roles resolves query roles (GET /v1/roles, roles:read).
func (r *resolver) Roles(ctx context.Context, args struct{ Page, Limit *int32 }) (*[]roleView, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if !p.Can(RolesPermission) {
		return nil, forbidden(RolesPermission)
	}
	list, _, err := r.d.Access.ListRoles(ctx, page(args.Page, args.Limit, 100))
	return views(list, err, func(role access.Role) roleView {
		return roleView{ID: gql.ID(role.ID), Name: role.Name, RequiresTwoFactor: role.RequiresTwoFactor}
	})
}
