//go:build replicas

package replicase2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// counts are one era's outcomes in one phase (before or after the kill).
type counts struct {
	ok, failed, wrong, hung atomic.Int64
	// reinit: legacy sessions initialized again after a failure;
	// reinit404 those after a 404 (their replica gone, or forwarding
	// off).
	reinit, reinit404 atomic.Int64
	mu                sync.Mutex
	errs              map[string]int // failure messages, shortened
	wrongs            []string
}

func (c *counts) fail(msg string) {
	c.failed.Add(1)
	msg = sessionIDPattern.ReplaceAllString(msg, "(session ID: …)")
	if len(msg) > 300 {
		msg = msg[:300]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.errs == nil {
		c.errs = map[string]int{}
	}
	c.errs[msg]++
}

func (c *counts) String() string {
	return fmt.Sprintf("answered correctly %d, failed with an error %d, answered wrongly %d, hung %d, sessions re-initialized %d (after a 404: %d)",
		c.ok.Load(), c.failed.Load(), c.wrong.Load(), c.hung.Load(), c.reinit.Load(), c.reinit404.Load())
}

// sessionIDPattern finds a session id in an SDK error, so that the
// report groups errors by kind.
var sessionIDPattern = regexp.MustCompile(`\(session ID: [^)]*\)`)

// run is one run's hosts and their counts by era and phase.
type run struct {
	front  string
	client *http.Client
	killed atomic.Bool           // set at the kill: later outcomes count in phase 1
	c      map[string]*[2]counts // era → phase
	tasks  taskCounts            // the task hosts' (tasks_test.go)
}

func newRun(front string) *run {
	return &run{front: front, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}},
		c: map[string]*[2]counts{legacyEra: {}, modernEra: {}}}
}

const (
	legacyEra = "2025-11-25"
	modernEra = "2026-07-28"
)

func (r *run) counts(era string, started bool) *counts {
	ph := 0
	if started {
		ph = 1
	}
	return &r.c[era][ph]
}

// sampler answers a server's sampling with "re:" and the prompt, and
// its elicitation with the answer "re:" and the message.
var sampler = &mcp.ClientOptions{CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	text := ""
	if len(req.Params.Messages) > 0 {
		if t, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
			text = t.Text
		}
	}
	return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "re:" + text}}, nil
}, ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "re:" + req.Params.Message}}, nil
}}

func (r *run) connect(ctx context.Context, era string) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return mcp.NewClient(&mcp.Implementation{Name: "host-" + era, Version: "0"}, sampler).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.front, HTTPClient: r.client},
			&mcp.ClientSessionOptions{ProtocolVersion: era})
}

// host calls through the balancer until ctx ends: short records, a
// sampling and an elicitation round trip (server to host), and long
// records, one at a
// time, each checked against what it must answer. A legacy host whose
// session fails initializes a new one.
func (r *run) host(ctx context.Context, era string, w int) {
	server := fmt.Sprintf("led%d", w)
	var cs *mcp.ClientSession
	defer func() {
		if cs != nil {
			_ = cs.Close()
		}
	}()
	lost, lost404 := false, false
	for n := 0; ctx.Err() == nil; n++ {
		if cs == nil {
			killed := r.killed.Load()
			var err error
			if cs, err = r.connect(ctx, era); err != nil {
				if ctx.Err() == nil {
					r.counts(era, killed).fail("connect: " + err.Error())
				}
				cs = nil
				select { // pace the retries: not a wait for anything
				case <-time.After(50 * time.Millisecond):
				case <-ctx.Done():
				}
				continue
			}
			if lost {
				r.counts(era, killed).reinit.Add(1)
			}
			if lost404 {
				r.counts(era, killed).reinit404.Add(1)
			}
			lost, lost404 = false, false
		}
		id := fmt.Sprintf("%s.%d.%d", era, w, n)
		tool, args, want := server+"__record", map[string]any{"id": id, "ms": 5}, "rec:"+id
		switch n % 6 {
		case 2:
			tool, args, want = server+"__confirm", map[string]any{"id": id}, "confirmed:accept:re:"+id
		case 4:
			tool, args, want = server+"__ask", map[string]any{"id": id}, "asked:re:"+id
		case 5:
			args["ms"] = 1200 // a long call
		}
		killed := r.killed.Load()
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		cancel()
		if ctx.Err() != nil {
			return // the run ended under the call: not counted
		}
		c := r.counts(era, killed || r.killed.Load())
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			c.hung.Add(1)
		case err != nil:
			c.fail(err.Error())
			if era == legacyEra {
				lost, lost404 = true, is404(err)
				_ = cs.Close()
				cs = nil
			}
		case res.IsError:
			c.fail(resultText(res))
		case resultText(res) == want:
			c.ok.Add(1)
		default:
			c.wrong.Add(1)
			c.mu.Lock()
			c.wrongs = append(c.wrongs, fmt.Sprintf("%s: got %q, want %q", tool, resultText(res), want))
			c.mu.Unlock()
		}
	}
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// hosts runs legacy and modern hosts (half each) for d, calling kill
// (when not nil) at killAt.
func (r *run) hosts(d, killAt time.Duration, kill func()) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for w := range servers {
		era := legacyEra
		if w%2 == 1 {
			era = modernEra
		}
		wg.Go(func() { r.host(ctx, era, w) })
	}
	for w := range 2 {
		wg.Go(func() { r.taskHost(ctx, w) })
	}
	if kill != nil {
		select {
		case <-time.After(killAt):
			r.killed.Store(true)
			kill()
		case <-ctx.Done():
		}
	}
	wg.Wait()
	r.client.CloseIdleConnections()
}

func (r *run) report(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:\n", name)
	for _, era := range []string{legacyEra, modernEra} {
		for ph, label := range []string{"before the kill", "after the kill"} {
			c := &r.c[era][ph]
			if !r.killed.Load() {
				if ph == 1 {
					continue
				}
				label = "no replica lost"
			}
			fmt.Fprintf(&b, "  %s hosts, %s: %v\n", era, label, c)
			c.mu.Lock()
			for msg, n := range c.errs {
				fmt.Fprintf(&b, "      %dx %s\n", n, msg)
			}
			for _, w := range c.wrongs {
				fmt.Fprintf(&b, "      WRONG %s\n", w)
			}
			c.mu.Unlock()
		}
	}
	fmt.Fprintf(&b, "  2026-07-28 task hosts: %v\n", &r.tasks)
	return b.String()
}

// is404 reports whether a legacy host's call failed because its session
// is unknown where the request landed (the SDK's "session not found").
func is404(err error) bool {
	return strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "404")
}

// ownedBy connects legacy hosts through the balancer until one's
// session is owned by replica id (its session id names it), closing the
// others, and returns it (nil after 12 tries).
func (r *run) ownedBy(ctx context.Context, id string) *mcp.ClientSession {
	for range 12 {
		cs, err := r.connect(ctx, legacyEra)
		if err != nil {
			continue
		}
		if strings.HasPrefix(cs.ID(), id+"~") {
			return cs
		}
		_ = cs.Close()
	}
	return nil
}
