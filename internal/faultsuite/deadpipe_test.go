package faultsuite

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/mcpkeep/mcpkeep"
)

// A server killed under load (docs/design.md §8): requests written after
// its death but before its loss is seen fail on the dead pipe. They
// reached no server, so they take the outage path like any call made
// during the outage; none may surface "write |1: broken pipe".
func TestFaultStdioWriteToDeadServer(t *testing.T) {
	sup := startSupervisor(t, fixtureStdio(""), nil)
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	defer cancel()
	const callers, crashes = 16, 3
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs = map[string]int{}
	)
	stop := make(chan struct{})
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := sup.Call(ctx, "echo", map[string]any{"text": strings.Repeat("y", 4096)}, &mcpkeep.CallOptions{WaitForReady: true})
				if err != nil && !errors.Is(err, mcpkeep.ErrConnectionLost) {
					mu.Lock()
					errs[err.Error()]++
					mu.Unlock()
				}
			}
		}()
	}
	for i := range crashes {
		// crash answers, then exits: the callers' next writes race its loss.
		if _, err := sup.Call(ctx, "crash", nil, &mcpkeep.CallOptions{WaitForReady: true}); err != nil && !errors.Is(err, mcpkeep.ErrConnectionLost) {
			t.Fatalf("crash %d: %v", i, err)
		}
		// Until the next generation answers (a call still on the dead one is lost).
		for {
			_, err := sup.Call(ctx, "echo", map[string]any{"text": "up"}, &mcpkeep.CallOptions{WaitForReady: true})
			if err == nil {
				break
			}
			if !errors.Is(err, mcpkeep.ErrConnectionLost) {
				t.Fatalf("after crash %d: %v", i, err)
			}
		}
	}
	close(stop)
	wg.Wait()
	for e, n := range errs {
		t.Errorf("%d× %s", n, e)
	}
}
