package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Hostile and broken peers (docs/design.md §19): each test scripts a
// server that misbehaves in one way over transport.Memory, inside a
// synctest bubble with the harness's mock clock.

// A server's JSON-RPC error -32003 or -32004 (the codes the SDK maps to its
// own mcp.ErrConnectionClosed) is the server's answer: the call returns it
// at once, as a *jsonrpc.Error, and it is not sent again, even with
// WaitForReady. Protection: peerConn (peerconn.go) and settle.
func TestHostileClosingCodesAreSentFailures(t *testing.T) {
	for _, era := range eras {
		for _, code := range []int64{codeClientClosing, codeServerClosing} {
			t.Run(fmt.Sprintf("%s/%d", eraName(era), code), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					h := newHarness(t, func(o *Options) {
						if era != "" {
							o.Opener = pinnedMemory{o.Opener.(*transport.Memory), era}
						}
					})
					var served atomic.Int32
					h.mem.Serve = func(_ uint64, s *mcp.Server) {
						s.AddTool(&mcp.Tool{Name: "closing", InputSchema: objectSchema},
							func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
								served.Add(1)
								return nil, &jsonrpc.Error{Code: code, Message: "client is closing"}
							})
					}
					if err := h.start(); err != nil {
						t.Fatal(err)
					}
					errc := make(chan error, 1)
					go func() {
						_, err := h.sup.Call(context.Background(), "closing", nil, &CallOptions{WaitForReady: true})
						errc <- err
					}()
					h.settle()
					var err error
					select {
					case err = <-errc:
					default:
						t.Fatalf("the call still waits: the server's error %d was taken for a closed connection", code)
					}
					var je *jsonrpc.Error
					if !errors.As(err, &je) || je.Code != code {
						t.Fatalf("call = %v, want the server's *jsonrpc.Error with code %d", err, code)
					}
					if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, ErrConnectionLost) {
						t.Fatalf("call = %v: the server's answer reads as a transport failure", err)
					}
					if n := served.Load(); n != 1 {
						t.Fatalf("the tool ran %d times, want 1", n)
					}
					h.wantState(fsm.Established)
					if err := h.dispose(); err != nil {
						t.Fatal(err)
					}
				})
			})
		}
	}
}

// A multi-round-trip call (2026-07-28) whose second round cannot be sent,
// because the connection ended while the host answered round 1, fails as
// a lost call: replaying it from round 1 on the next generation would ask
// the person again. Protection: multiRoundTrip marks a later round's
// ErrConnectionClosed as ErrConnectionLost, and settle keeps it sent.
func TestHostileMultiRoundTripNotReplayed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		proceed := make(chan struct{})
		var asked atomic.Int32
		r := newProtoRig(t, "", func(rec *hostRec) HostHandlers {
			hh := rec.handlers()
			hh.Elicit = func(context.Context, string, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
				asked.Add(1)
				<-proceed
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
			}
			return hh
		}, nil)
		r.mustStart(t)
		errc := make(chan error, 1)
		go func() {
			_, err := r.sup.Call(context.Background(), "elicit", nil, &CallOptions{WaitForReady: true})
			errc <- err
		}()
		synctest.Wait() // round 1 answered; the person is being asked
		release := make(chan struct{})
		r.sup.send(message{kind: mInspect, probe: func() { <-release }}) // the loop does not notice yet
		r.mem.Gen(1).Kill()
		synctest.Wait() // the SDK has seen the end
		close(proceed)  // round 2 is refused: the connection closed
		synctest.Wait()
		close(release)
		r.settle()
		for range 5 {
			if r.state() == fsm.Established {
				break
			}
			r.advance(time.Second)
		}
		r.wantState(fsm.Established)
		var err error
		select {
		case err = <-errc:
		default:
			t.Fatal("the call has not returned after the loss")
		}
		if n := asked.Load(); n != 1 {
			t.Fatalf("the person was asked %d times, want 1 (the call was replayed from round 1); call = %v", n, err)
		}
		if !errors.Is(err, ErrConnectionLost) {
			t.Fatalf("call = %v, want ErrConnectionLost", err)
		}
		if err := r.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}
