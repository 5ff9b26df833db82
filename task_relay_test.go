package mcpkeep

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Relaying a server's own tasks, the library's part (docs/design.md §25):
// TaskRequest reaches the generation that made the task and no other, and
// HoldUse keeps that generation from an idle stop while the task works.

type relayTaskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type relayTaskResult struct {
	mcp.ResultBase
	TaskID string `json:"taskId"`
	Status string `json:"status"`
	Gen    uint64 `json:"gen"`
}

// relayTaskServer adds tasks/get to each generation's server: "block"
// never answers, "known" is working, anything else is -32602. seen
// records each request's declared extensions, by generation.
type relayTaskServer struct {
	mu   sync.Mutex
	seen map[uint64][]map[string]any
}

func (rs *relayTaskServer) serve(next func(uint64, *mcp.Server)) func(uint64, *mcp.Server) {
	return func(gen uint64, s *mcp.Server) {
		if next != nil {
			next(gen, s)
		}
		if err := mcp.AddReceivingCustomMethod(s, "tasks/get", func(ctx context.Context, _ *mcp.ServerSession, p *relayTaskParams) (*relayTaskResult, error) {
			caps, _ := p.Meta[mcp.MetaKeyClientCapabilities].(map[string]any)
			ext, _ := caps["extensions"].(map[string]any)
			rs.mu.Lock()
			rs.seen[gen] = append(rs.seen[gen], ext)
			rs.mu.Unlock()
			switch p.TaskID {
			case "block":
				<-ctx.Done()
				return nil, ctx.Err()
			case "known":
				return &relayTaskResult{TaskID: p.TaskID, Status: "working", Gen: gen}, nil
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no task " + p.TaskID}
		}); err != nil {
			panic(err)
		}
	}
}

func (rs *relayTaskServer) requests(gen uint64) []map[string]any {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.seen[gen]
}

func TestTaskRequestToItsGenerationOnly(t *testing.T) {
	for _, era := range eras {
		t.Run(eraName(era), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newProtoRig(t, era, nil, nil)
				rs := &relayTaskServer{seen: map[uint64][]map[string]any{}}
				r.mem.Serve = rs.serve(r.mem.Serve)
				r.mustStart(t)
				ctx := context.Background()
				const ext = "io.modelcontextprotocol/tasks"

				raw, err := r.sup.TaskRequest(ctx, 1, "tasks/get", json.RawMessage(`{"taskId":"known"}`), ext)
				var got relayTaskResult
				if err != nil || json.Unmarshal(raw, &got) != nil || got.Status != "working" || got.Gen != 1 {
					t.Fatalf("tasks/get of generation 1: %s, %v", raw, err)
				}
				if seen := rs.requests(1); len(seen) != 1 || seen[0][ext] == nil {
					t.Fatalf("the request did not declare %s: %v", ext, seen)
				}
				var wire *jsonrpc.Error
				if _, err := r.sup.TaskRequest(ctx, 1, "tasks/get", json.RawMessage(`{"taskId":"nope"}`), ext); !errors.As(err, &wire) || wire.Code != jsonrpc.CodeInvalidParams {
					t.Fatalf("the server's -32602: %v", err)
				}
				if _, err := r.sup.TaskRequest(ctx, 2, "tasks/get", json.RawMessage(`{"taskId":"known"}`), ext); !errors.Is(err, ErrGenerationGone) {
					t.Fatalf("a generation that is not the live one: %v, want ErrGenerationGone", err)
				}

				if !r.sup.GenerationLive(1) || r.sup.GenerationLive(2) {
					t.Fatal("GenerationLive: want generation 1 live, 2 not")
				}

				// Held while its task works; the hold ends with the generation.
				release := r.sup.HoldUse(1)
				defer release()
				if n := r.sup.State().InFlight; n != 1 {
					t.Fatalf("InFlight %d with a hold, want 1", n)
				}
				if noop := r.sup.HoldUse(7); r.sup.State().InFlight != 1 {
					t.Fatal("a hold on a generation that is not live counts")
				} else {
					noop()
				}

				// In flight when the generation dies: gone, not an error of the connection.
				errc := make(chan error, 1)
				go func() {
					_, err := r.sup.TaskRequest(ctx, 1, "tasks/get", json.RawMessage(`{"taskId":"block"}`), ext)
					errc <- err
				}()
				synctest.Wait()
				r.crash(t, 1)
				if err := <-errc; !errors.Is(err, ErrGenerationGone) {
					t.Fatalf("a request whose generation died under it: %v, want ErrGenerationGone", err)
				}
				if n := r.sup.State().InFlight; n != 0 {
					t.Fatalf("InFlight %d after the held generation ended, want 0", n)
				}
				if r.sup.GenerationLive(1) {
					t.Fatal("GenerationLive(1) after generation 1 died")
				}
				// Never sent to the next generation, which never heard of it.
				if _, err := r.sup.TaskRequest(ctx, 1, "tasks/get", json.RawMessage(`{"taskId":"known"}`), ext); !errors.Is(err, ErrGenerationGone) {
					t.Fatalf("generation 1 after the restart: %v", err)
				}
				if seen := rs.requests(2); len(seen) != 0 {
					t.Fatalf("generation 2 was asked: %v", seen)
				}
				if r.state() != fsm.Established {
					t.Fatalf("state %v", r.state())
				}
				if err := r.dispose(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// TestTaskRelayCallReportsItsGeneration: a relayed call reports the
// generation that answered it; one lost and replayed (readOnlyHint) went
// the typed way without the extension, so it reports none: its answer is
// a call's, never a task of a generation that is gone.
func TestTaskRelayCallReportsItsGeneration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, nil)
		r := &replayTools{}
		r.reset(1)
		h.mem.Serve = r.serve
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		tr := &TaskRelay{Extension: "io.modelcontextprotocol/tasks"}
		c := make(chan error, 1)
		var raw json.RawMessage
		go func() {
			var err error
			raw, err = h.sup.CallRaw(context.Background(), "look", nil, &CallOptions{TaskRelay: tr})
			c <- err
		}()
		h.settle()
		if n := rawSent(h); n != 1 {
			t.Fatalf("%d raw requests, want the relayed call", n)
		}
		h.mem.Gen(1).Kill()
		h.settle()
		h.advance(time.Second) // gen 2: the replay
		h.wantState(fsm.Established)
		if err := <-c; err != nil || !strings.Contains(string(raw), "look on gen 2") {
			t.Fatalf("replayed call: %s, %v", raw, err)
		}
		if tr.Generation != 0 {
			t.Fatalf("a replayed call reports generation %d, want 0 (sent without the extension)", tr.Generation)
		}
		tr = &TaskRelay{Extension: "io.modelcontextprotocol/tasks"}
		if _, err := h.sup.CallRaw(context.Background(), "look", nil, &CallOptions{TaskRelay: tr}); err != nil || tr.Generation != 2 {
			t.Fatalf("a relayed call on gen 2: generation %d, %v", tr.Generation, err)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}
