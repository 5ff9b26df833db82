// Command mcpkeep keeps MCP servers connected. Each subcommand lives in its
// own file and is listed in commands below; main only dispatches.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// command is one subcommand. run gets the arguments after the subcommand's
// name and returns the process exit code: 0 success, 1 failure, 2 misuse.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order usage prints them. To add
// one, write NAME.go with its run function and add a line here.
var commands = []command{
	{"proxy", "serve the configured servers over stdio (all of MCP), each server supervised", runProxy},
	{"run", "wrap one server (-- COMMAND, or --url) under its own names: a one-line host config change", runRun},
	{"demo", "watch a built-in server crash and recover (no setup, no network)", runDemo},
	{"status", "print each server's state from a running instance's /readyz", runStatus},
	{"check", "validate a config file and print each server's retry schedule", runCheck},
	{"diagram", "render the connection lifecycle (DOT, Mermaid)", runDiagram},
	{"replay", "check recorded event traces against the lifecycle", runReplay},
	{"fixture", "the built-in MCP test server with fault modes", runFixture},
	{"version", "print the version", runVersion},
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run dispatches args to a subcommand.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "help":
		if len(rest) == 0 {
			usage(stdout)
			return 0
		}
		name, rest = rest[0], []string{"--help"}
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(rest, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "mcpkeep: unknown command %q\n\n", name)
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, "mcpkeep keeps MCP servers connected.\n\nUsage:\n  mcpkeep <command> [flags]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\nRun 'mcpkeep <command> --help' for a command's flags.\n")
}

// newFlags returns a flag set whose usage starts with synopsis.
func newFlags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: mcpkeep %s\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs and accepts no positional arguments. When
// ok is false the caller returns code: 0 after --help (usage on stdout), 2
// after a usage error (message and usage on stderr).
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	var out bytes.Buffer
	fs.SetOutput(&out)
	err := fs.Parse(args)
	if err == nil && fs.NArg() > 0 {
		fmt.Fprintf(&out, "unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		err = errors.New("unexpected argument")
	}
	fs.SetOutput(stderr)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		io.Copy(stdout, &out)
		return 0, false
	default:
		io.Copy(stderr, &out)
		return 2, false
	}
}
