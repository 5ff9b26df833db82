package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpkeep/mcpkeep/proxy"
	"github.com/spf13/cobra"
)

// statusTimeout bounds status's one request.
const statusTimeout = 5 * time.Second

// statusBodyLimit bounds the /readyz answer status reads.
const statusBodyLimit = 4 << 20

// newStatusCmd is `mcpkeep status`: it asks a running instance's /readyz
// and prints each server's state. Exit 0 ready, 1 not ready, 2 unreachable
// or an answer that is not mcpkeep's /readyz (or a usage error).
func newStatusCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "status [flags]",
		Short: "print each server's state from a running instance's /readyz",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := fetchReadiness(addr)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "mcpkeep status: %v\n", err)
				return exitError{2}
			}
			printStatus(cmd.OutOrStdout(), rep)
			if !rep.Ready {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", defaultOpsAddr, "the instance's health address (--metrics-listen or --listen): `HOST:PORT` or an http(s):// URL")
	return cmd
}

// readyzURL is addr's /readyz: addr is HOST:PORT, or a URL whose path
// /readyz replaces.
func readyzURL(addr string) string {
	if strings.HasPrefix(addr, "http://") || strings.HasPrefix(addr, "https://") {
		return strings.TrimRight(addr, "/") + "/readyz"
	}
	return "http://" + addr + "/readyz"
}

// fetchReadiness GETs addr's /readyz and checks that the answer is what
// ops serves: 200 with ready true, or 503 with ready false, and a JSON
// body with ready and servers.
func fetchReadiness(addr string) (proxy.Readiness, error) {
	url := readyzURL(addr)
	client := &http.Client{Timeout: statusTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(url)
	if err != nil {
		return proxy.Readiness{}, fmt.Errorf("cannot reach the instance: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, statusBodyLimit))
	if err != nil {
		return proxy.Readiness{}, fmt.Errorf("%s: reading the answer: %w", url, err)
	}
	var raw struct {
		Ready   *bool                 `json:"ready"`
		Reason  string                `json:"reason"`
		Servers *[]proxy.ServerStatus `json:"servers"`
		Tasks   map[string]int        `json:"tasks"`
	}
	notOurs := func(why string) error {
		return fmt.Errorf("%s: %s (%s): not the answer of an mcpkeep /readyz", url, why, resp.Status)
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusServiceUnavailable {
		return proxy.Readiness{}, notOurs("unexpected status")
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return proxy.Readiness{}, notOurs("the body is not JSON")
	}
	if raw.Ready == nil || raw.Servers == nil {
		return proxy.Readiness{}, notOurs("the body lacks ready or servers")
	}
	if *raw.Ready != (resp.StatusCode == http.StatusOK) {
		return proxy.Readiness{}, notOurs("ready disagrees with the status")
	}
	return proxy.Readiness{Ready: *raw.Ready, Reason: raw.Reason, Servers: *raw.Servers, Tasks: raw.Tasks}, nil
}

// printStatus writes the table (SERVER STATE ATTEMPT NEXT-RETRY
// LAST-ERROR), then "ready", or "not ready: " and the reason.
func printStatus(w io.Writer, rep proxy.Readiness) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tATTEMPT\tNEXT-RETRY\tLAST-ERROR")
	for _, s := range rep.Servers {
		attempt := strconv.Itoa(s.Attempt)
		if s.MaxAttempts > 0 {
			attempt += "/" + strconv.Itoa(s.MaxAttempts)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", oneLine(s.Server), oneLine(s.State), attempt,
			orDash(s.NextRetry), orDash(s.LastError))
	}
	_ = tw.Flush()
	printTasks(w, rep.Tasks)
	if rep.Ready {
		fmt.Fprintln(w, "ready")
		return
	}
	fmt.Fprintf(w, "not ready: %s\n", orDash(rep.Reason))
}

// oneLine keeps a cell on its line (an error may span several).
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func orDash(s string) string {
	if s = oneLine(s); s == "" {
		return "-"
	}
	return s
}
