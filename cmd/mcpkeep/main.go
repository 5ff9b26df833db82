// Command mcpkeep keeps MCP servers connected. It is built on cobra: each
// subcommand lives in its own file as a newXCmd constructor; main.go holds
// the root, its groups, and how errors become exit codes.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run executes the command line args and returns the exit code: 0
// success, 1 failure, 2 misuse. The tests call it in process.
//
// A command's RunE returns nil on success, an exitError once it has said
// on stderr why it failed, and any other error for misuse. Misuse, like
// cobra's own errors (an unknown command or flag, a bad flag value), is
// reported as "mcpkeep CMD: message" and the command's usage on stderr.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	if len(args) == 0 {
		fmt.Fprint(stderr, root.UsageString())
		return 2
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	var ex exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ex):
		return ex.code
	}
	if cmd == nil {
		cmd = root
	}
	fmt.Fprintf(stderr, "%s: %v%s\n\n%s", cmd.CommandPath(), err, singleDashHint(cmd, args), cmd.UsageString())
	return 2
}

// newRoot builds the command tree writing to stdout and stderr. The
// groups order the root's help.
func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "mcpkeep",
		Short: "mcpkeep keeps MCP servers connected",
		Long: "mcpkeep keeps MCP servers connected: it supervises them (reconnecting with\n" +
			"backoff) and serves them to MCP hosts as one resilient proxy.",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	// Before the completion command, which keeps the writer it is given.
	root.SetOut(stdout)
	root.SetErr(stderr)
	for _, g := range []struct {
		id, title string
		cmds      []*cobra.Command
	}{
		{"serving", "Serving:", []*cobra.Command{newProxyCmd(), newRunCmd(), newStatusCmd(), newAuthCmd()}},
		{"checking", "Checking:", []*cobra.Command{newCheckCmd(), newDiagramCmd(), newReplayCmd()}},
		{"trying", "Trying out:", []*cobra.Command{newDemoCmd(), newFixtureCmd()}},
		{"other", "Other:", []*cobra.Command{newVersionCmd()}},
	} {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, c := range g.cmds {
			c.GroupID = g.id
			root.AddCommand(c)
		}
	}
	root.SetHelpCommand(newHelpCmd())
	root.SetHelpCommandGroupID("other")
	root.SetCompletionCommandGroupID("other")
	// Execute adds these too; adding them now puts them in the usage
	// printed when no command is given.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	strictCompletion(root)
	return root
}

// strictCompletion makes `completion` without a known shell misuse (exit
// 2); cobra would print its help and exit 0.
func strictCompletion(root *cobra.Command) {
	comp, _, err := root.Find([]string{"completion"})
	if err != nil || comp == root {
		return
	}
	comp.Args = cobra.ArbitraryArgs
	comp.RunE = func(_ *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("unknown shell %q (want bash, zsh, fish or powershell)", args[0])
		}
		return errors.New("name a shell: bash, zsh, fish or powershell")
	}
}

// newHelpCmd replaces cobra's help command, which exits 0 on an unknown
// topic: `mcpkeep help NAME` of an unknown NAME is misuse (exit 2).
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "print a command's help, or this list",
		RunE: func(cmd *cobra.Command, args []string) error {
			target, _, err := cmd.Root().Find(args)
			if err != nil {
				return err
			}
			target.InitDefaultHelpFlag() // so the help lists -h, --help
			return target.Help()
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, c := range cmd.Root().Commands() {
				if c.IsAvailableCommand() {
					names = append(names, cobra.CompletionWithDesc(c.Name(), c.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
}

// singleDashHint gives the GNU spelling of the first argument that is
// one of cmd's long flags with one dash, as the flag package took it
// (-config): pflag reads it as shorthands and names a stray letter.
func singleDashHint(cmd *cobra.Command, args []string) string {
	for _, a := range args {
		if a == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(name) > 1 && cmd.Flags().Lookup(name) != nil {
			return fmt.Sprintf(" (a long flag takes two dashes: -%s)", a)
		}
	}
	return ""
}

// exitError ends a command with code after the command said why.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// exit turns an exit code into RunE's error: nil for 0.
func exit(code int) error {
	if code == 0 {
		return nil
	}
	return exitError{code}
}

// noArgs is the Args check of a command without operands.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q", args[0])
	}
	return nil
}
