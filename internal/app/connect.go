package app

import (
	"context"

	"hmid/internal/apperr"
	"hmid/internal/authn"
	"hmid/internal/export/archive"
	"hmid/internal/httpx"
	"hmid/internal/oauth"
	"hmid/internal/tracking"
	"hmid/internal/twofactor"
)

// connectAreas plugs the areas into each other's consumer interfaces once all
// are built: bans revoke OAuth tokens, the export reads OAuth apps and the
// two-factor state, the water-level lookup reads the latest GPS point, and
// the users area takes its locales from the system config.
func (s *Server) connectAreas() {
	s.BanService.Tokens = s.OAuth
	s.exportHandler.Apps = exportApps{s.OAuth}
	s.exportHandler.TwoFactor = exportTwoFactor{s.twoFactorSvc}
	s.pegelHandler.S.Position = latestPoint{s.tracking.S}
	s.users.S.Locales = s.Settings.SupportedLocales
}

// selfPrincipal is the user acting on their own data, for reads the export makes on their behalf.
func selfPrincipal(userID string) *authn.Principal {
	return authn.NewPrincipal(authn.Principal{Kind: authn.KindSession, UserID: userID}, nil)
}

// exportApps feeds the export's connectedApps and ownedApps from the OAuth provider.
type exportApps struct{ o *oauth.Service }

func (a exportApps) ConnectedApps(ctx context.Context, userID string) ([]archive.ConnectedApp, error) {
	consents, err := a.o.ListUserConsents(ctx, userID)
	if err != nil {
		return nil, err
	}
	out := make([]archive.ConnectedApp, 0, len(consents))
	for _, c := range consents {
		out = append(out, archive.ConnectedApp{Name: c.ClientName, Scopes: c.Scopes, IsFirstParty: c.IsFirstParty, ConsentedAt: c.GrantedAt})
	}
	return out, nil
}

func (a exportApps) OwnedApps(ctx context.Context, userID string) ([]archive.OwnedApp, error) {
	out := []archive.OwnedApp{}
	p := selfPrincipal(userID)
	for page := 1; ; page++ {
		clients, total, err := a.o.ListClients(ctx, p, false, httpx.Page{Page: page, Limit: 100})
		if err != nil {
			return nil, err
		}
		for _, c := range clients {
			out = append(out, archive.OwnedApp{ID: c.ID, Name: c.Name, ClientType: c.ClientType, RedirectURIs: c.RedirectURIs,
				AllowedScopes: c.AllowedScopes, IsActive: c.IsActive, CreatedAt: c.CreatedAt})
		}
		if len(clients) == 0 || page*100 >= total {
			return out, nil
		}
	}
}

// exportTwoFactor feeds the export's twoFactorAuth from the two-factor area.
type exportTwoFactor struct{ t *twofactor.Service }

func (x exportTwoFactor) TwoFactorState(ctx context.Context, userID string) (archive.TwoFactorAuth, error) {
	st, err := x.t.Status(ctx, selfPrincipal(userID), userID)
	if err != nil {
		return archive.TwoFactorAuth{}, err
	}
	return archive.TwoFactorAuth{Enabled: st.Enabled, EnabledAt: st.EnabledAt, BackupCodesRemaining: st.BackupCodesRemaining}, nil
}

// latestPoint is the current position for the water-level lookup: the latest GPS point.
type latestPoint struct{ t *tracking.Service }

func (l latestPoint) CurrentPosition(ctx context.Context) (float64, float64, bool, error) {
	p, err := l.t.Current(ctx, nil)
	if err == nil {
		return p.Latitude, p.Longitude, true, nil
	}
	if apperr.Is(err, apperr.NotFound) {
		return 0, 0, false, nil
	}
	return 0, 0, false, err
}
