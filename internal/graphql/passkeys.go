package graphql

import (
	"context"

	gql "github.com/graph-gophers/graphql-go"

	"hmid/internal/passkey"
)

// The passkey resolvers are the GraphQL twins of GET, PATCH and DELETE
// /v1/users/me/passkeys (issue 20): the caller's own passkeys, through the
// same passkey.Service.

type passkeyView struct {
	ID             gql.ID
	Name           string
	Aaguid         string
	CreatedAt      string
	LastUsedAt     *string
	BackupEligible bool
	BackupState    bool
	Transports     []string
}

func viewPasskey(p passkey.Passkey) passkeyView {
	return passkeyView{ID: gql.ID(p.ID), Name: p.Name, Aaguid: p.AAGUID, CreatedAt: timestamp(p.CreatedAt),
		LastUsedAt: optTimestamp(p.LastUsedAt), BackupEligible: p.BackupEligible, BackupState: p.BackupState, Transports: nonNil(p.Transports)}
}

// MyPasskeys resolves query myPasskeys (GET /v1/users/me/passkeys).
func (r *resolver) MyPasskeys(ctx context.Context) (*[]passkeyView, error) {
	return myList(ctx, r.d.Passkeys.List, viewPasskey)
}

// RenamePasskey resolves mutation renamePasskey (PATCH /v1/users/me/passkeys/{id}).
func (r *resolver) RenamePasskey(ctx context.Context, args struct {
	ID   gql.ID
	Name string
}) (*passkeyView, error) {
	p, err := userPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	k, err := r.d.Passkeys.Rename(ctx, p.UserID, string(args.ID), args.Name)
	if err != nil {
		return nil, err
	}
	v := viewPasskey(k)
	return &v, nil
}

// RemovePasskey resolves mutation removePasskey (DELETE /v1/users/me/passkeys/{id}).
func (r *resolver) RemovePasskey(ctx context.Context, args struct{ ID gql.ID }) (*mutationResult, error) {
	p, err := userPrincipal(ctx)
	if err != nil {
		return nil, err
	}
	return outcome(r.d.Passkeys.Remove(ctx, "", p.UserID, string(args.ID), passkey.ClientFrom(request(ctx))))
}
