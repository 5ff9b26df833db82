package mcpkeep

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMultiRoundTripReadOnlyNotReplayed: a readOnly tool (replayed after a
// loss) whose first round asked the person, lost in round 2 (refused:
// the connection had closed; or in flight when the server died), fails
// as lost and is never replayed: the person is asked once
// (docs/design.md §19, §21). Both ways a call goes out.
func TestMultiRoundTripReadOnlyNotReplayed(t *testing.T) {
	for _, c := range callers {
		for _, inFlight := range []bool{false, true} {
			name := c.name + "round 2 refused"
			if inFlight {
				name = c.name + "round 2 in flight"
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					proceed := make(chan struct{})
					var asked, round2 atomic.Int32
					r := newProtoRig(t, "", func(rec *hostRec) HostHandlers {
						hh := rec.handlers()
						hh.Elicit = func(context.Context, string, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
							asked.Add(1)
							<-proceed
							return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
						}
						return hh
					}, nil)
					serve := r.mem.Serve
					r.mem.Serve = func(gen uint64, s *mcp.Server) {
						serve(gen, s)
						s.AddTool(&mcp.Tool{Name: "lookask", InputSchema: objectSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
							func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
								if _, ok := req.Params.InputResponses["q"]; !ok {
									return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "a name?",
										RequestedSchema: map[string]any{"type": "object"}}}}, nil
								}
								round2.Add(1)
								<-ctx.Done() // round 2 hangs: the server dies under it
								return nil, ctx.Err()
							})
					}
					r.mustStart(t)
					out := c.call(r.harness, "lookask", &CallOptions{WaitForReady: true})
					synctest.Wait() // round 1 answered; the person is being asked
					if inFlight {
						close(proceed)
						synctest.Wait() // round 2 reached the server
						if round2.Load() != 1 {
							t.Fatal("round 2 never reached the server")
						}
						r.mem.Gen(1).Kill()
					} else {
						release := make(chan struct{})
						r.sup.send(message{kind: mInspect, probe: func() { <-release }}) // the loop does not notice yet
						r.mem.Gen(1).Kill()
						synctest.Wait() // the SDK has seen the end
						close(proceed)  // round 2 is refused: the connection closed
						synctest.Wait()
						close(release)
					}
					r.settle()
					r.reestablish()
					res := resultOf(t, out)
					if n := asked.Load(); n != 1 {
						t.Fatalf("the person was asked %d times, want 1 (the call was replayed); call = %v", n, res.err)
					}
					if !errors.Is(res.err, ErrConnectionLost) {
						t.Fatalf("call = %v, want ErrConnectionLost", res.err)
					}
					if n := r.sup.CallsReplayed(); n != 0 {
						t.Fatalf("%d calls replayed", n)
					}
					if err := r.dispose(); err != nil {
						t.Fatal(err)
					}
				})
			})
		}
	}
}

// TestMultiRoundTripLostWhileAskedNotReplayed: a readOnly tool whose
// server is lost while the host is asked for round 1's input (the host's
// handler ends with the call's context) fails as lost and is never
// replayed: no round, neither with the server's requestState nor from
// round 1, reaches the next generation, and the person is not asked
// again (docs/design.md §19, §25). Both ways a call goes out.
func TestMultiRoundTripLostWhileAskedNotReplayed(t *testing.T) {
	for _, c := range callers {
		t.Run(c.name+"lost while asked", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var asked, rounds atomic.Int32
				r := newProtoRig(t, "", func(rec *hostRec) HostHandlers {
					hh := rec.handlers()
					hh.Elicit = func(ctx context.Context, _ string, _ *mcp.ElicitParams) (*mcp.ElicitResult, error) {
						asked.Add(1)
						<-ctx.Done() // the person takes their time; the server dies
						return nil, ctx.Err()
					}
					return hh
				}, nil)
				serve := r.mem.Serve
				r.mem.Serve = func(gen uint64, s *mcp.Server) {
					serve(gen, s)
					s.AddTool(&mcp.Tool{Name: "lookask", InputSchema: objectSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
						func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
							rounds.Add(1)
							return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "a name?",
								RequestedSchema: map[string]any{"type": "object"}}}}, nil
						})
				}
				r.mustStart(t)
				out := c.call(r.harness, "lookask", &CallOptions{WaitForReady: true})
				synctest.Wait() // round 1 answered; the person is being asked
				if asked.Load() != 1 {
					t.Fatal("the person was never asked")
				}
				r.mem.Gen(1).Kill()
				r.settle()
				r.reestablish()
				res := resultOf(t, out)
				if !errors.Is(res.err, ErrConnectionLost) {
					t.Fatalf("call = %v, want ErrConnectionLost", res.err)
				}
				if n, m := asked.Load(), rounds.Load(); n != 1 || m != 1 {
					t.Fatalf("the person was asked %d times and the server got %d rounds, want 1 and 1 (the call was replayed)", n, m)
				}
				if n := r.sup.CallsReplayed(); n != 0 {
					t.Fatalf("%d calls replayed", n)
				}
				if err := r.dispose(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
