// Command bench is hmid's load generator. It starts hmid in process (SQLite
// in a temporary directory, or the PostgreSQL and Redis given by flags) or
// targets a running server, prepares the data a scenario needs through the
// API, and prints requests/s, p50, p99 and errors per scenario.
//
//	go run ./bench                                   # every scenario on SQLite
//	go run ./bench -scenario users-me,roles -c 64 -d 10s
//	go run ./bench -db 'postgres://…' -redis 'redis://…'
//	go run ./bench -target http://host:8080 -key hm_…   # a running server
//	go run ./bench -scenario oauth-refresh -alg ES256    # ID tokens of one algorithm
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"time"

	"hmid/bench/loadgen"
	"hmid/internal/app"
	"hmid/internal/config"

	"github.com/valyala/fasthttp"
)

// Env is what a scenario gets: the server's base URL, a system API key and a
// tuned HTTP client.
type Env struct {
	Server      *app.Server // the in-process server; nil with -target
	URL         string
	SystemKey   string
	Client      *fasthttp.Client
	Concurrency int
	WS          WSConfig   // the ws-fanout scenario's shape
	Slow        SlowConfig // the slow-bodies scenario's shape
	IDTokenAlg  string     // the OAuth scenarios' client's id_token_signed_response_alg; "" = the server's default
}

// Scenario is one benchmark: Setup prepares data and returns the operation
// each worker runs in a loop. A scenario that is not a loop of requests
// (the WebSocket fan-out) sets Measure instead, which runs it and prints
// its own figures.
type Scenario struct {
	Name    string
	About   string
	Setup   func(ctx context.Context, e *Env) (op func(ctx context.Context, worker int) error, err error)
	Measure func(ctx context.Context, e *Env, out io.Writer) error
}

var scenarios []Scenario

// register adds scenarios; each scenario file calls it from init.
func register(s ...Scenario) { scenarios = append(scenarios, s...) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if wsClientMode() {
		os.Exit(runWSClients(ctx, os.Stdout))
	}
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var (
		names  = fs.String("scenario", "", "comma-separated scenarios (default: all); -list shows them")
		list   = fs.Bool("list", false, "list scenarios and exit")
		conc   = fs.Int("c", 64, "concurrent clients")
		dur    = fs.Duration("d", 10*time.Second, "duration of each scenario")
		warm   = fs.Duration("warmup", 2*time.Second, "warm-up before measuring")
		target = fs.String("target", "", "base URL of a running hmid (default: start one in process)")
		key    = fs.String("key", "", "system API key of the target server")
		dbURL  = fs.String("db", "", "database URL for the in-process server (default: SQLite in a temp dir)")
		redis  = fs.String("redis", "", "Redis URL for the in-process server")
		prof   = fs.String("cpuprofile", "", "write a CPU profile of the load phase to this file (FILE.scenario when several run)")
		wsConn = fs.Int("ws-conns", 10_000, "ws-fanout: WebSocket connections")
		wsDevs = fs.Int("ws-devices", 1, "ws-fanout: devices the connections watch, round-robin")
		wsPts  = fs.Int("ws-points", 20, "ws-fanout: GPS points posted per device")
		wsGap  = fs.Duration("ws-interval", time.Second, "ws-fanout: time between two points of one device")
		alg    = fs.String("alg", "", "oauth-*: ID-token algorithm of the client (HS256, RS256, ES256; default: the server's)")
		slowN  = fs.Int("slow-conns", 600, "slow-bodies: connections dripping a request body")
		slowG  = fs.Duration("slow-gap", 2*time.Second, "slow-bodies: time between two bytes of a dripped body")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	sort.SliceStable(scenarios, func(i, j int) bool { return scenarios[i].Name < scenarios[j].Name })
	if *list {
		for _, s := range scenarios {
			fmt.Fprintf(out, "%-24s %s\n", s.Name, s.About)
		}
		return nil
	}
	chosen, err := choose(*names)
	if err != nil {
		return err
	}

	// The in-process server runs with the service's own runtime settings.
	app.TuneRuntime(os.Getenv)
	env := &Env{URL: *target, SystemKey: *key, Client: loadgen.NewClient(*conc), Concurrency: *conc,
		WS:   WSConfig{Connections: *wsConn, Devices: *wsDevs, Points: *wsPts, Interval: *wsGap},
		Slow: SlowConfig{Connections: *slowN, Gap: *slowG, Duration: *dur}, IDTokenAlg: strings.ToUpper(*alg)}
	engine := "target " + *target
	if *target == "" {
		srv, base, sysKey, closeFn, err := startServer(ctx, *dbURL, *redis)
		if err != nil {
			return err
		}
		defer closeFn()
		env.Server, env.URL, env.SystemKey = srv, base, sysKey
		engine = "sqlite"
		if *dbURL != "" {
			engine = "postgres"
		}
		if *redis != "" {
			engine += "+redis"
		}
	} else if *key == "" {
		return fmt.Errorf("-target needs -key (a system API key of that server)")
	}
	if env.IDTokenAlg != "" {
		engine += ", ID tokens " + env.IDTokenAlg
	}
	fmt.Fprintf(out, "hmid bench: %s, %d clients, %s per scenario\n", engine, *conc, *dur)
	for _, s := range chosen {
		if s.Measure != nil {
			if err := s.Measure(ctx, env, out); err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
			continue
		}
		op, err := s.Setup(ctx, env)
		if err != nil {
			return fmt.Errorf("%s: setup: %w", s.Name, err)
		}
		stop, err := startProfile(*prof, s.Name, len(chosen) > 1)
		if err != nil {
			return err
		}
		res := loadgen.Run(ctx, loadgen.Config{Concurrency: *conc, Duration: *dur, Warmup: *warm}, op)
		stop()
		res.Name = s.Name
		fmt.Fprintln(out, res.String())
		for _, e := range res.ErrorSamples {
			fmt.Fprintln(out, "    error:", e)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// choose returns the scenarios named in the comma-separated list, or all
// of them for an empty list.
func choose(names string) ([]Scenario, error) {
	if names == "" {
		return scenarios, nil
	}
	var chosen []Scenario
	for _, n := range strings.Split(names, ",") {
		found := false
		for _, s := range scenarios {
			if s.Name == strings.TrimSpace(n) {
				chosen, found = append(chosen, s), true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown scenario %q (see -list)", n)
		}
	}
	return chosen, nil
}

// startProfile starts a CPU profile of one scenario's load phase, leaving out
// its setup (creating thousands of keys or a million points would otherwise
// dominate). path "" profiles nothing; with several scenarios each gets its
// own file, path.name.
func startProfile(path, name string, several bool) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	if several {
		path += "." + name
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// freshSchema creates an empty schema for one run on the PostgreSQL database
// at dbURL and returns a URL whose search_path names it, and a function that
// drops it: each run starts from an empty database, as it does on SQLite,
// instead of measuring what earlier runs left behind.
func freshSchema(ctx context.Context, dbURL string) (string, func(), error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", nil, fmt.Errorf("-db: %w", err)
	}
	schema := fmt.Sprintf("hmid_bench_%d", time.Now().UnixNano())
	admin, err := sql.Open("pgx", dbURL)
	if err != nil {
		return "", nil, err
	}
	if _, err := admin.ExecContext(ctx, `CREATE SCHEMA `+schema); err != nil {
		admin.Close()
		return "", nil, fmt.Errorf("create schema for the run: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), func() {
		_, _ = admin.ExecContext(context.Background(), `DROP SCHEMA `+schema+` CASCADE`)
		admin.Close()
	}, nil
}

// startServer runs hmid in process on a loopback port.
func startServer(ctx context.Context, dbURL, redisURL string) (srv *app.Server, base, sysKey string, closeFn func(), err error) {
	dir, err := os.MkdirTemp("", "hmid-bench-")
	if err != nil {
		return nil, "", "", nil, err
	}
	dropSchema := func() {}
	if dbURL == "" {
		dbURL = "sqlite:" + dir + "/hmid.db"
	} else if dbURL, dropSchema, err = freshSchema(ctx, dbURL); err != nil {
		return nil, "", "", nil, err
	}
	defer func() {
		if err != nil {
			dropSchema()
		}
	}()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", "", nil, err
	}
	// localhost, not 127.0.0.1: a passkey's relying-party id is a domain
	// (the passkey-login scenario); the client dials it over IPv4.
	base = "http://localhost:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	// provider-login signs in at a fake Discord the server is configured for.
	discord, err := startFakeDiscord(base + "/login/discord/callback")
	if err != nil {
		ln.Close()
		return nil, "", "", nil, err
	}
	defer func() {
		if err != nil {
			discord.Close()
		}
	}()
	cfg := config.Config{
		Addr: ln.Addr().String(), PublicURL: base, DatabaseURL: dbURL, RedisURL: redisURL,
		SecretKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", MailFrom: "bench@localhost",
		LogLevel: "error", DisableAccessLog: true,
		SystemAPIKey: "hm_benchSystemKey0123456789abcdefghijklmnopqrstuv",
		// The load generator is the proxy in front of its clients: scenarios
		// that spread load over client addresses send X-Forwarded-For.
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		LoginEnv:       discord.env,
	}
	// A Redis namespace of its own per run: rate-limit windows of an earlier
	// run (registrations from this address, say) must not fail this one.
	srv, err = app.New(ctx, cfg, app.Options{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		CachePrefix: fmt.Sprintf("hmid-bench-%d:", time.Now().UnixNano())})
	if err != nil {
		ln.Close()
		return nil, "", "", nil, err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	return srv, base, cfg.SystemAPIKey, func() {
		hs.Close()
		srv.Close()
		discord.Close()
		dropSchema()
		os.RemoveAll(dir)
	}, nil
}
