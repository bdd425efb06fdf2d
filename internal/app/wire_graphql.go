package app

import (
	"context"

	"hmid/internal/graphql"
)

// graphqlArea holds the GraphQL endpoint (built by buildGraphQL).
type graphqlArea struct {
	graphqlHandler *graphql.Handler
}

// buildGraphQL binds the GraphQL schema to the services the REST handlers
// use; it runs after every area it reads from is built.
func (s *Server) buildGraphQL(ctx context.Context) error {
	h, err := graphql.New(graphql.Deps{
		OAuth:     s.OAuth,
		TwoFactor: s.twoFactorSvc,
		Platforms: s.PlatformService,
		Access:    s.Access,
		Passkeys:  s.Passkeys,
		Log:       s.Log,
	})
	if err != nil {
		return err
	}
	s.graphqlHandler = h
	return nil
}
