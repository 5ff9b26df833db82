package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mcpkeep/mcpkeep"
	"github.com/mcpkeep/mcpkeep/tasks"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Input requests inside a task (docs/design.md §24, §25): a server's
// sampling, elicitation or roots request made while a task's call runs
// is carried by the task, not by a host request (the host may have hung
// up). It becomes an input request of the task (input_required, shown by
// tasks/get under a key of its own), and the host's tasks/update answer
// under that key is the server's reply.
//
// A 2026-07-28 server asks by answering the call with input requests (its
// input_required result, §24); the supervisor fulfils them one by one
// through the same host handlers (mcpkeep.InputRequestOf tells each its
// round). The task shows the round whole: the first handler opens every
// request of the round at once under keys mcpkeep-N-<the server's key>
// (N from the same counter as a legacy server's mcpkeep-N, so no two
// keys meet, and an answer meant for an earlier round cannot be taken
// for a later one that reuses the server's key), and each handler takes
// its own answer; the supervisor sends the answers back under the
// server's keys with its requestState unchanged. A round that asks for
// something the creating request did not declare opens nothing, and the
// task fails saying so.

// taskCarrier is a task's call's mark on its context (via.task).
type taskCarrier struct {
	hooks tasks.Hooks
	// caps are what the host declared on the request that made the task:
	// the server is asked only for those.
	caps *mcp.ClientCapabilities
	seq  atomic.Uint64

	// round holds the open inputs of a 2026-07-28 server's round not yet
	// taken by their handler, by the server's key. mu guards it and is
	// never held across a call into the engine.
	mu    sync.Mutex
	round map[string]*tasks.Input
}

// declares reports whether the task's host declared what a asks for.
func (tc *taskCarrier) declares(a hostAsk) bool {
	c := tc.caps
	if c == nil {
		return false
	}
	switch a {
	case askSampling:
		return c.Sampling != nil
	case askElicitation:
		return c.Elicitation != nil
	}
	return c.RootsV2 != nil || c.Roots.ListChanged
}

// ask holds the server's request as an input request of the task, in
// the wire's shape ({"method", "params"}), and decodes the host's answer
// into out.
func (tc *taskCarrier) ask(ctx context.Context, method string, params any, out any) error {
	var in *tasks.Input
	key, all, round := mcpkeep.InputRequestOf(ctx)
	if round = round && all[key] != nil; round {
		var err error
		if in, err = tc.ofRound(key, all); err != nil {
			return err
		}
	} else {
		key := tc.key("")
		req, err := json.Marshal(map[string]any{"method": method, "params": params})
		if err != nil {
			return err
		}
		ins, err := tc.hooks.Open(map[string]json.RawMessage{key: req})
		if err != nil {
			return err
		}
		in = ins[key]
	}
	ans, err := in.Wait(ctx)
	if err != nil {
		if round {
			tc.withdraw() // the round's call is over: none of it stays asked
		}
		return err
	}
	if err := json.Unmarshal(ans, out); err != nil {
		return fmt.Errorf("mcpkeep: the host's answer to %s in a task: %w", method, err)
	}
	return nil
}

// key is a new input key of the task: mcpkeep-N, or mcpkeep-N-<server's
// key> for a 2026-07-28 server's input request.
func (tc *taskCarrier) key(server string) string {
	k := "mcpkeep-" + strconv.FormatUint(tc.seq.Add(1), 10)
	if server != "" {
		k += "-" + server
	}
	return k
}

// ofRound is the open input of the server's key in its round: taken if
// the round is open, else the round is opened whole (what is left of an
// earlier round, whose call ended or was sent again, is withdrawn).
func (tc *taskCarrier) ofRound(key string, all mcp.InputRequestMap) (*tasks.Input, error) {
	tc.mu.Lock()
	in, ok := tc.round[key]
	delete(tc.round, key)
	stale := tc.round
	if !ok {
		tc.round = nil
	}
	tc.mu.Unlock()
	if ok {
		return in, nil
	}
	for _, in := range stale {
		in.Withdraw()
	}
	for k, r := range all {
		switch a, known := askOf(r); {
		case !known:
			return nil, fmt.Errorf("mcpkeep: the server's input request %q is of an unknown kind (%T)", k, r)
		case !tc.declares(a):
			return nil, fmt.Errorf("%w: the server's input request %q asks for %s; a task asks the host only for what the request that created it declared",
				errCarrierCannot, k, a)
		}
	}
	// The SDK's encoding of a round: {"method", "params"} per key.
	raw, err := json.Marshal(all)
	if err != nil {
		return nil, fmt.Errorf("mcpkeep: the server's input requests: %w", err)
	}
	var byKey map[string]json.RawMessage
	if err := json.Unmarshal(raw, &byKey); err != nil {
		return nil, fmt.Errorf("mcpkeep: the server's input requests: %w", err)
	}
	reqs := make(map[string]json.RawMessage, len(byKey))
	ours := make(map[string]string, len(byKey))         // the server's key → the task's
	for _, k := range slices.Sorted(maps.Keys(byKey)) { // numbered in the server's order of keys
		ours[k] = tc.key(k)
		reqs[ours[k]] = byKey[k]
	}
	ins, err := tc.hooks.Open(reqs)
	if err != nil {
		return nil, err
	}
	round := make(map[string]*tasks.Input, len(ins))
	for k, tk := range ours {
		round[k] = ins[tk]
	}
	in = round[key]
	delete(round, key)
	tc.mu.Lock()
	tc.round = round
	tc.mu.Unlock()
	return in, nil
}

// withdraw closes what is left open of the current round.
func (tc *taskCarrier) withdraw() {
	tc.mu.Lock()
	stale := tc.round
	tc.round = nil
	tc.mu.Unlock()
	for _, in := range stale {
		in.Withdraw()
	}
}

// inputFailed reports whether a task's call ended because a 2026-07-28
// server's input requests could not be carried: one asks for what the
// creating request did not declare (or the host does not offer), or the
// rounds went past the supervisor's bound (mcpkeep.ErrInputRounds). Then
// the call has no tool result, and the task fails with that error rather
// than completing with it as an isError result (docs/design.md §25).
func inputFailed(err error) bool { return inputReason(err) != "" }

// inputReason is the machine-readable reason of such a failure, or "".
func inputReason(err error) string {
	switch {
	case errors.Is(err, mcpkeep.ErrInputRounds):
		return "input_rounds_exceeded"
	case errors.Is(err, errCarrierCannot), errors.Is(err, mcpkeep.ErrNotOffered):
		return "input_not_declared"
	}
	return ""
}

// askOf is the capability an input request needs.
func askOf(r mcp.InputRequest) (hostAsk, bool) {
	switch r.(type) {
	case *mcp.ElicitParams:
		return askElicitation, true
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return askSampling, true
	case *mcp.ListRootsParams:
		return askRoots, true
	}
	return 0, false
}

// routeTask picks a task among the carriers of a server's request: the
// only one, if it is the only carrier at all.
func routeTask(cands []via, a hostAsk) (via, bool, error) {
	var task *via
	for i, v := range cands {
		if v.task == nil {
			continue
		}
		if task != nil || len(cands) > 1 {
			return via{}, true, errManyCarriers
		}
		task = &cands[i]
	}
	switch {
	case task == nil:
		return via{}, false, nil
	case !task.task.declares(a):
		return via{}, true, fmt.Errorf("%w: %s", errCarrierCannot, a)
	}
	return *task, true, nil
}

// askTask is a server's request carried by a task.
func askTask[R any](ctx context.Context, v via, method string, params any) (*R, error) {
	var res R
	if err := v.task.ask(ctx, method, params, &res); err != nil {
		return nil, err
	}
	return &res, nil
}
