package cache

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"hmid/internal/telemetry"
)

// traceHook is the go-redis hook that gives every command and pipeline a
// span (package telemetry), named by the command; keys and values are not
// recorded. It is added only when tracing is on at connect time. The
// handshake of a new connection (HELLO, AUTH, SELECT, CLIENT SETINFO) is
// not traced: it belongs to the pool, not to the request that happened to
// need a connection, and on servers older than Redis 7.2 its CLIENT SETINFO
// fails by design.
type traceHook struct{}

// DialHook leaves dialling as it is.
func (traceHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook traces one command.
func (traceHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if handshake(cmd) {
			return next(ctx, cmd)
		}
		end := telemetry.RedisCommand(ctx, cmd.Name())
		err := next(ctx, cmd)
		if end != nil {
			end(commandError(err))
		}
		return err
	}
}

// ProcessPipelineHook traces a pipeline or MULTI/EXEC transaction as one
// span.
func (traceHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && handshake(cmds[0]) {
			return next(ctx, cmds)
		}
		end := telemetry.RedisCommand(ctx, "pipeline")
		err := next(ctx, cmds)
		if end != nil {
			end(commandError(err))
		}
		return err
	}
}

// handshake reports whether cmd is one go-redis sends to set up a new
// connection; hmid itself never sends them.
func handshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "auth", "select", "client":
		return true
	}
	return false
}

// commandError is the error a span records: a missing key (redis.Nil) is an
// answer, not a failure.
func commandError(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}
