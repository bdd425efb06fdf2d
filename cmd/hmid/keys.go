package main

import (
	"context"
	"flag"
	"fmt"
)

// keysCommand groups the API-key subcommands; alone it only prints its usage,
// so a mistyped line never migrates a database or mints a key.
func keysCommand() *command {
	create := keysCreateCommand()
	return &command{
		name: "keys", args: "create --system [--name NAME]", summary: "manage API keys",
		detail: "subcommands:\n  create   " + create.summary + "\n\n\"hmid keys create --help\" describes it.",
		run: func(ctx context.Context, e env, fs *flag.FlagSet) error {
			if fs.NArg() == 0 || "keys "+fs.Arg(0) != create.name {
				fmt.Fprintf(e.stderr, "usage: hmid %s %s\n", create.name, create.args)
				if fs.NArg() == 0 {
					return usageError{"keys needs a subcommand"}
				}
				return usageError{fmt.Sprintf("unknown keys subcommand %q", fs.Arg(0))}
			}
			return execute(ctx, e, create, fs.Args()[1:])
		},
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
		run: func(ctx context.Context, e env, fs *flag.FlagSet) error {
			if err := noArgs(fs); err != nil {
				return err
			}
			if !system {
				return usageError{"keys create needs --system: only system keys can be created from the command line"}
			}
			srv, _, err := open(ctx, e, e.stderr)
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
		},
	}
}
