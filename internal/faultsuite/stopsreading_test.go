package faultsuite

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A stdio server that stops reading its stdin (docs/design.md §19): once
// the pipe is full, a 200 KiB call and a small call behind it used to stay
// blocked until Dispose. Now the generation ends when nothing was taken
// for the connect timeout. Neither call can have been acted on: the small
// one was never written, and the big one's last byte never reached the
// pipe (its first 64 KiB did). Both wait for the next generation, which
// answers them; the big one used to fail as "lost; may or may not have
// taken effect" (issue 33 item 24).
func TestFaultStdioServerStopsReading(t *testing.T) {
	const bound = 500 * time.Millisecond
	sup := startSupervisor(t, fixtureStdio(""), func(o *mcpkeep.Options) { o.ConnectTimeout = bound })
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	defer cancel()
	if _, err := sup.Call(ctx, "deaf", nil, nil); err != nil {
		t.Fatal(err)
	}

	text := strings.Repeat("x", 200<<10)
	big := make(chan error, 1)
	go func() {
		res, err := sup.Call(ctx, "echo", map[string]any{"text": text}, &mcpkeep.CallOptions{WaitForReady: true})
		if err == nil && res.Content[0].(*mcp.TextContent).Text != text {
			err = errors.New("wrong answer")
		}
		big <- err
	}()
	small := make(chan error, 1)
	go func() {
		// Behind the big write (the SDK writes one message at a time),
		// which blocks at once on the full pipe and trips after the
		// 500 ms bound: 200 ms leaves room both ways on a loaded machine.
		time.Sleep(200 * time.Millisecond)
		res, err := sup.Call(ctx, "echo", map[string]any{"text": "small"}, &mcpkeep.CallOptions{WaitForReady: true})
		if err == nil && res.Content[0].(*mcp.TextContent).Text != "small" {
			err = errors.New("wrong answer")
		}
		small <- err
	}()
	for range 2 {
		select {
		case err := <-big:
			if err != nil {
				t.Errorf("big call: %v; want it answered by the next generation (its last byte was never written)", err)
			}
		case err := <-small:
			if err != nil {
				t.Errorf("small call: %v; want it answered by the next generation", err)
			}
		case <-time.After(faultWait):
			t.Fatalf("calls still blocked after %v", faultWait)
		}
	}
}
