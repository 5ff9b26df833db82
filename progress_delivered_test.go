package mcpkeep

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call returns only once the progress its server sent before the reply
// was delivered (generation.removeProgress), however long the SDK's
// notification queue lags behind the reply: the connection counts what it
// read. Before, the call waited at most progressLinger (100 ms of real
// time) and the rest reached nobody's call: under load the proxy's
// HTTP host got 8 of 10 progress notifications (TestHostilePeers/listen).
// Here the SDK's handler of the first notification is held for a second.
func TestProgressReadBeforeTheReplyIsDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newProtoRig(t, "", nil, nil)
		r.mustStart(t)
		gate := make(chan struct{})
		var once sync.Once
		r.sup.live.Load().client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "notifications/progress" {
					once.Do(func() { <-gate })
				}
				return next(ctx, method, req)
			}
		})
		var mu sync.Mutex
		var got []float64
		type outcome struct {
			err  error
			seen int // progress delivered when Call returned
		}
		done := make(chan outcome, 1)
		go func() {
			_, err := r.sup.Call(context.Background(), "progress", nil, &CallOptions{Progress: func(p *mcp.ProgressNotificationParams) {
				mu.Lock()
				got = append(got, p.Progress)
				mu.Unlock()
			}})
			mu.Lock()
			n := len(got)
			mu.Unlock()
			done <- outcome{err, n}
		}()
		synctest.Wait()         // the reply is read; progress 1 is held in the SDK's queue
		time.Sleep(time.Second) // ten times progressLinger
		select {
		case o := <-done:
			t.Fatalf("Call returned (%v) with %d of 2 progress notifications delivered, the rest still queued", o.err, o.seen)
		default:
		}
		close(gate)
		o := <-done
		if o.err != nil || o.seen != 2 {
			t.Fatalf("Call = %v with %d of 2 progress notifications delivered", o.err, o.seen)
		}
		if err := r.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}
