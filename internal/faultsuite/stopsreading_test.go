package faultsuite

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A stdio server that stops reading its stdin (docs/design.md §19): once
// the pipe is full, a 200 KiB call with a 2 s deadline and a small call
// behind it used to stay blocked until Dispose. Now the generation ends
// when nothing was taken for the connect timeout: the big call fails as
// lost, the small one, never written, is answered by the next generation.
func TestFaultStdioServerStopsReading(t *testing.T) {
	const bound = 500 * time.Millisecond
	sup := startSupervisor(t, fixtureStdio(""), func(o *mcpkeep.Options) { o.ConnectTimeout = bound })
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	defer cancel()
	if _, err := sup.Call(ctx, "deaf", nil, nil); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	bigCtx, bigCancel := context.WithTimeout(ctx, 2*time.Second)
	defer bigCancel()
	big := make(chan error, 1)
	go func() {
		_, err := sup.Call(bigCtx, "echo", map[string]any{"text": strings.Repeat("x", 200<<10)}, nil)
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
			if !errors.Is(err, mcpkeep.ErrConnectionLost) && !errors.Is(err, transport.ErrStalled) {
				t.Errorf("big call: %v; want lost to the stall", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("big call returned after %v, past its 2 s deadline", d)
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
