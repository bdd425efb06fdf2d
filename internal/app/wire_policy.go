package app

import (
	"context"
	"time"

	"hmid/internal/db"
	"hmid/internal/policy"
)

// Policy changes reach the other instances within these intervals: a
// version read in Redis each second, or with PostgreSQL alone a re-read of
// the policy rows every five seconds (docs/decisions.md, "Policies
// instead of constants").
const (
	policyTickShared = time.Second
	policyTickPoll   = 5 * time.Second
)

// startPolicy loads the policy snapshot and, when several instances may
// share the database, keeps it current in the background. It runs before
// the areas are built, which read it; rows not seeded yet are the defaults
// that buildSettings then seeds.
func (s *Server) startPolicy(ctx context.Context) error {
	s.Policy = &policy.Store{DB: s.DB}
	s.Guard.Resolver.Policy = s.Policy
	every := time.Duration(0)
	switch {
	case s.Config.RedisURL != "":
		s.Policy.Shared, every = s.Cache, policyTickShared
	case s.DB.Flavor == db.Postgres:
		s.Policy.Poll, every = true, policyTickPoll
	}
	if err := s.Policy.Load(ctx); err != nil {
		return err
	}
	if every == 0 {
		return nil // one instance on SQLite: a change reloads here at once
	}
	jobCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Policy.Run(jobCtx, every, func(err error) { s.Log.Warn("policy: reload failed; the last policy stays in force", "err", err) })
	}()
	s.onClose(func() error { stop(); <-done; return nil })
	return nil
}
