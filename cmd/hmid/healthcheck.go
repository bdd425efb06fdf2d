package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"hmid/internal/config"
)

// healthcheckCommand asks the instance on this machine whether it is ready,
// for container probes (Docker HEALTHCHECK, Kubernetes exec probes), which
// need an exit status and often have no curl.
func healthcheckCommand() *command {
	var timeout time.Duration
	return &command{
		name: "healthcheck", args: "[--timeout D]", summary: "exit 0 when the local instance answers /readyz with 200, else 1",
		detail: "GETs /readyz on the port of HMID_ADDR. An address without a host, or with 0.0.0.0 or ::,\n" +
			"is reached through 127.0.0.1; a specific host is used as it is.",
		flags: func(fs *flag.FlagSet) {
			fs.DurationVar(&timeout, "timeout", 5*time.Second, "give up after this long")
		},
		run: withoutArgs(func(ctx context.Context, e env) error {
			cfg, err := config.FromEnv(e.getenv)
			if err != nil {
				return err
			}
			url, err := readyURL(cfg.Addr)
			if err != nil {
				return err
			}
			return probe(ctx, url, timeout)
		}),
	}
}

// readyURL is the /readyz URL of the instance listening on addr.
func readyURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("HMID_ADDR %q: %w", addr, err)
	}
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/readyz", nil
}

// probe succeeds when url answers 200 within timeout. Redirects are not
// followed: a ready instance answers the probe itself.
func probe(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s", url, resp.Status)
	}
	return nil
}
