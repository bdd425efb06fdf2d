// Command hmid runs the hmid identity provider and data API.
//
// Usage:
//
//	hmid [serve]                            start the service (the default)
//	hmid migrate                            apply database migrations and seed, then exit
//	hmid keys create --system [--name N]    create a system API key and print it alone on stdout
//	hmid keys rotate [--alg RS256|ES256]    rotate the ID-token signing keys
//	hmid admin create --email E [--password-stdin]
//	                                        create a super admin or make a user one
//	hmid healthcheck [--timeout D]          exit 0 when the local instance is ready (container probes)
//	hmid version                            print the version
//
// Every command takes --help. Configuration comes from HMID_* environment
// variables; see README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := runWithInput(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "hmid:", err)
	var ue usageError
	if errors.As(err, &ue) {
		os.Exit(2) // the conventional status of a command-line mistake
	}
	os.Exit(1)
}

// env is what a command may use of the process, so tests drive run without globals.
type env struct {
	getenv         func(string) string
	stdin          io.Reader
	stdout, stderr io.Writer
}

// command is one subcommand: its flags, its help and what it does with the
// arguments left after the flags.
type command struct {
	name    string
	args    string // the synopsis after the name, for the usage line
	summary string
	detail  string                 // paragraphs of help after the usage line
	flags   func(fs *flag.FlagSet) // registers the command's flags (nil: none)
	run     func(ctx context.Context, e env, fs *flag.FlagSet) error
}

// commands lists every subcommand; the first is the default.
func commands() []*command {
	return []*command{serveCommand(), migrateCommand(), keysCommand(), adminCommand(), healthcheckCommand(), versionCommand()}
}

// usageError is a mistake on the command line; main exits with status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// run is main without globals and with nothing on standard input, so tests
// can drive it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runWithInput(ctx, args, getenv, strings.NewReader(""), stdout, stderr)
}

// runWithInput is run with standard input (hmid admin create --password-stdin).
func runWithInput(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := env{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	cmds := commands()
	if len(args) > 0 {
		switch {
		case isHelp(args[0]): // "hmid --help" asks about hmid, "hmid serve --help" about serve
			printOverview(stdout, cmds)
			return nil
		case args[0] == "--version" || args[0] == "-v":
			args = append([]string{"version"}, args[1:]...)
		}
	}
	name := cmds[0].name
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if name == "help" {
		if len(args) > 0 {
			if c := find(cmds, args[0]); c != nil {
				return execute(ctx, e, c, []string{"--help"})
			}
		}
		printOverview(stdout, cmds)
		return nil
	}
	c := find(cmds, name)
	if c == nil {
		printOverview(stderr, cmds)
		return usageError{fmt.Sprintf("unknown command %q", name)}
	}
	return execute(ctx, e, c, args)
}

// find returns the command called name, or nil.
func find(cmds []*command, name string) *command {
	for _, c := range cmds {
		if c.name == name {
			return c
		}
	}
	return nil
}

func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

// execute parses c's flags from args and runs it. --help prints the help to
// stdout and runs nothing; a bad flag prints the help to stderr.
func execute(ctx context.Context, e env, c *command, args []string) error {
	fs := flag.NewFlagSet("hmid "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the errors are returned and printed once, by main
	if c.flags != nil {
		c.flags(fs)
	}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		printHelp(e.stdout, c, fs)
		return nil
	case err != nil:
		printHelp(e.stderr, c, fs)
		return usageError{err.Error()}
	}
	return c.run(ctx, e, fs)
}

// printHelp writes a command's usage line, help text and flags.
func printHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s\n\n%s\n", strings.TrimSpace("hmid "+c.name+" "+c.args), c.summary)
	if c.detail != "" {
		fmt.Fprintf(w, "\n%s\n", c.detail)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintln(w, "\nflags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}

// printOverview lists the commands.
func printOverview(w io.Writer, cmds []*command) {
	fmt.Fprintln(w, "usage: hmid <command> [flags]\n\ncommands:")
	for i, c := range cmds {
		def := ""
		if i == 0 {
			def = " (the default)"
		}
		fmt.Fprintf(w, "  %-12s %s%s\n", c.name, c.summary, def)
	}
	fmt.Fprintln(w, "\n\"hmid <command> --help\" describes a command. Configuration is read from HMID_* environment variables (see README.md).")
}

// withoutArgs is the run of a command that takes no positional arguments:
// it refuses them (noArgs), then calls run.
func withoutArgs(run func(ctx context.Context, e env) error) func(context.Context, env, *flag.FlagSet) error {
	return func(ctx context.Context, e env, fs *flag.FlagSet) error {
		if err := noArgs(fs); err != nil {
			return err
		}
		return run(ctx, e)
	}
}

// dispatch is the run of the command group named group: it executes the
// subcommand of subs that the first argument names; without one it prints
// usage to stderr and fails with a usage error.
func dispatch(group, usage string, subs []*command) func(context.Context, env, *flag.FlagSet) error {
	return func(ctx context.Context, e env, fs *flag.FlagSet) error {
		if fs.NArg() > 0 {
			if c := find(subs, group+" "+fs.Arg(0)); c != nil {
				return execute(ctx, e, c, fs.Args()[1:])
			}
		}
		fmt.Fprintln(e.stderr, usage)
		if fs.NArg() == 0 {
			return usageError{group + " needs a subcommand"}
		}
		return usageError{fmt.Sprintf("unknown %s subcommand %q", group, fs.Arg(0))}
	}
}

// noArgs refuses positional arguments for commands that take none.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("%s takes no arguments, got %q", strings.TrimPrefix(fs.Name(), "hmid "), fs.Args())}
	}
	return nil
}
