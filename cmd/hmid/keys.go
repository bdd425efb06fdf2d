package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"hmid/internal/oauth/signing"
)

// keysCommand groups the key subcommands: system API keys and the signing
// keys of ID tokens. Alone it only prints its usage, so a mistyped line
// never migrates a database, mints a key or rotates one.
func keysCommand() *command {
	subs := []*command{keysCreateCommand(), keysRotateCommand()}
	var usage, detail []string
	for _, c := range subs {
		usage = append(usage, fmt.Sprintf("usage: hmid %s %s", c.name, c.args))
		detail = append(detail, fmt.Sprintf("  %-8s %s", strings.TrimPrefix(c.name, "keys "), c.summary))
	}
	return &command{
		name: "keys", args: "create --system [--name NAME] | rotate [--alg ALG]", summary: "manage API keys and ID-token signing keys",
		detail: "subcommands:\n" + strings.Join(detail, "\n") + "\n\n\"hmid keys create --help\" and \"hmid keys rotate --help\" describe them.",
		run:    dispatch("keys", strings.Join(usage, "\n"), subs),
	}
}

// keysRotateCommand adds a new signing key per algorithm (or for --alg),
// which signs ID tokens from now on; the previous key stays in the JWKS until
// the tokens it signed have expired. Running instances pick the new key up
// within seconds. It prints the keys, one a line, on stdout.
func keysRotateCommand() *command {
	var alg string
	return &command{
		name: "keys rotate", args: "[--alg RS256|ES256]", summary: "rotate the ID-token signing keys (RS256 and ES256)",
		detail: "The new key signs at once, on every instance within seconds; the previous key stays published at\n" +
			"/v1/oauth/jwks until the ID tokens it signed have expired (" + signing.KeyGrace.String() + "), then it is deleted.\n" +
			"HMID_SIGNING_KEY_ROTATION rotates automatically by age.",
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&alg, "alg", "", "rotate only this algorithm's key: RS256 or ES256 (default: both)")
		},
		run: withoutArgs(func(ctx context.Context, e env) error {
			var algs []string
			if alg != "" {
				a := strings.ToUpper(alg)
				if a != signing.AlgRS256 && a != signing.AlgES256 {
					return usageError{fmt.Sprintf("--alg must be RS256 or ES256, got %q", alg)}
				}
				algs = []string{a}
			}
			srv, _, err := open(ctx, e, e.stderr, false)
			if err != nil {
				return err
			}
			defer srv.Close()
			keys, err := srv.OAuth.Keys.Rotate(ctx, algs...)
			if err != nil {
				return err
			}
			printSigningKeys(e.stdout, keys)
			return nil
		}),
	}
}

// printSigningKeys writes one line per key: algorithm, kid, generation and
// state.
func printSigningKeys(w io.Writer, keys []signing.KeyInfo) {
	for _, k := range keys {
		state := "signing since " + k.ActivatedAt.Format(time.RFC3339)
		switch {
		case k.RetiredAt != nil && k.Published:
			state = "retired " + k.RetiredAt.Format(time.RFC3339) + ", in the JWKS until " + k.RetiredAt.Add(signing.KeyGrace).Format(time.RFC3339)
		case k.RetiredAt != nil:
			state = "retired " + k.RetiredAt.Format(time.RFC3339) + ", no longer published"
		}
		fmt.Fprintf(w, "%s\t%s\tgeneration %d\t%s\n", k.Alg, k.Kid, k.Generation, state)
	}
}

// keysCreateCommand creates a system API key. The key is the only thing on
// stdout, so KEY=$(hmid keys create --system) works; everything else, the
// first-start banner included, goes to stderr.
func keysCreateCommand() *command {
	var system bool
	var name string
	return &command{
		name: "keys create", args: "--system [--name NAME]", summary: "create a system API key and print it alone on stdout",
		detail: "Only system keys can be created here; user keys are created through the API (POST /v1/api-keys).\n" +
			"Example: KEY=$(hmid keys create --system --name ci)",
		flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&system, "system", false, "create a system key (required)")
			fs.StringVar(&name, "name", "System", "the key's name, shown in key listings")
		},
		run: withoutArgs(func(ctx context.Context, e env) error {
			if !system {
				return usageError{"keys create needs --system: only system keys can be created from the command line"}
			}
			srv, _, err := open(ctx, e, e.stderr, false)
			if err != nil {
				return err
			}
			defer srv.Close()
			key, err := srv.Access.CreateSystemKey(ctx, name, "created with hmid keys create --system")
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, key)
			return nil
		}),
	}
}
