package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/mcpkeep/mcpkeep/config"
	"github.com/mcpkeep/mcpkeep/oauth"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/spf13/cobra"
)

// loginBound is how long `auth login` waits for the person.
const loginBound = 10 * time.Minute

// newAuthCmd is `mcpkeep auth login|status|logout` (docs/design.md §22):
// signing in to remote servers that need OAuth. Tokens live in the user's
// config directory and are never printed.
func newAuthCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "sign in to remote servers that need OAuth (login, status, logout)",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("give a subcommand: login, status or logout")
		},
	}
	cmd.AddCommand(newAuthLoginCmd(), newAuthStatusCmd(), newAuthLogoutCmd())
	return cmd
}

// authTargets are the flags that name what to sign in to: a server of a
// config file, or a URL (for `mcpkeep run --url`).
type authTargets struct{ config, url string }

func (a *authTargets) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&a.config, "config", "", "the config `FILE` naming the servers")
	cmd.Flags().StringVar(&a.url, "url", "", "a server's `URL`, as given to mcpkeep run --url")
}

// targets returns the OAuth servers meant: name's (or every one when name
// is ""), or the --url one.
func (a *authTargets) targets(name string) ([]oauth.Target, error) {
	switch {
	case a.url != "" && a.config != "":
		return nil, errors.New("give --config FILE or --url URL, not both")
	case a.url != "":
		return []oauth.Target{{URL: a.url}}, nil
	case a.config == "":
		return nil, errors.New("--config FILE (or --url URL) is required")
	}
	cfg, _, err := config.Load(a.config)
	if err != nil {
		return nil, err
	}
	var out []oauth.Target
	for _, sc := range cfg.Servers {
		if name != "" && sc.Name != name {
			continue
		}
		t, ok := sc.Target()
		if !ok {
			if name != "" {
				return nil, fmt.Errorf("server %q has no \"oauth\" in %s", name, a.config)
			}
			continue
		}
		out = append(out, t)
	}
	if name != "" && len(out) == 0 {
		return nil, fmt.Errorf("no server %q in %s", name, a.config)
	}
	return out, nil
}

// one is the one server an operand (NAME) or --url names.
func (a *authTargets) one(args []string) (oauth.Target, error) {
	if len(args) == 0 && a.url == "" {
		return oauth.Target{}, errors.New("give the server's NAME (with --config FILE), or --url URL")
	}
	name := ""
	if len(args) == 1 {
		name = args[0]
	}
	ts, err := a.targets(name)
	if err != nil {
		return oauth.Target{}, err
	}
	return ts[0], nil
}

func newAuthLoginCmd() *cobra.Command {
	var a authTargets
	cmd := &cobra.Command{
		Use:   "login NAME --config FILE | --url URL",
		Short: "sign in to a server: opens the authorization page (or prints it) and keeps the token",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.one(args)
			if err != nil {
				return err
			}
			st, err := oauth.DefaultStore()
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "mcpkeep auth login: %v\n", err)
				return exitError{1}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ctx, cancel := context.WithTimeout(ctx, loginBound)
			defer cancel()
			status, err := oauth.Login(ctx, oauth.LoginOptions{Target: t, Store: st, Out: cmd.OutOrStdout(),
				In: cmd.InOrStdin(), OpenBrowser: openBrowser})
			if errors.Is(err, oauth.ErrNoSignInAsked) {
				fmt.Fprintf(cmd.OutOrStdout(), "%s did not ask to sign in: nothing to do\n", transport.RedactURL(t.URL))
				return nil
			}
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "mcpkeep auth login: %v\n", err)
				return exitError{1}
			}
			_ = oauth.WriteStatus(cmd.OutOrStdout(), []oauth.TokenStatus{status}, time.Now())
			return nil
		},
	}
	a.register(cmd)
	return cmd
}

func newAuthStatusCmd() *cobra.Command {
	var a authTargets
	cmd := &cobra.Command{
		Use:   "status --config FILE | --url URL",
		Short: "print each OAuth server's sign-in and token expiry",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ts, err := a.targets("")
			if err != nil {
				return err
			}
			st, err := oauth.DefaultStore()
			if err == nil {
				var sts []oauth.TokenStatus
				if sts, err = oauth.Status(st, ts); err == nil {
					err = oauth.WriteStatus(cmd.OutOrStdout(), sts, time.Now())
				}
				if err == nil && slices.ContainsFunc(sts, func(s oauth.TokenStatus) bool { return !s.SignedIn }) {
					return exitError{1}
				}
			}
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "mcpkeep auth status: %v\n", err)
				return exitError{1}
			}
			return nil
		},
	}
	a.register(cmd)
	return cmd
}

func newAuthLogoutCmd() *cobra.Command {
	var a authTargets
	cmd := &cobra.Command{
		Use:   "logout NAME --config FILE | --url URL",
		Short: "forget a server's token",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := a.one(args)
			if err != nil {
				return err
			}
			st, err := oauth.DefaultStore()
			if err == nil {
				err = oauth.Logout(st, t)
			}
			switch {
			case errors.Is(err, oauth.ErrNotSignedIn):
				fmt.Fprintf(cmd.OutOrStdout(), "%s was not signed in\n", transport.RedactURL(t.URL))
			case err != nil:
				fmt.Fprintf(cmd.ErrOrStderr(), "mcpkeep auth logout: %v\n", err)
				return exitError{1}
			default:
				fmt.Fprintf(cmd.OutOrStdout(), "%s: signed out\n", transport.RedactURL(t.URL))
			}
			return nil
		},
	}
	a.register(cmd)
	return cmd
}

// openBrowser opens the authorization page; tests replace it.
var openBrowser = oauth.OpenBrowser
