package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/mcpkeep/mcpkeep/tasks"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Input requests inside a task (docs/design.md §24, §25): a server's
// sampling, elicitation or roots request made while a task's call runs
// is carried by the task, not by a host request (the host may have hung
// up). It becomes an input request of the task (input_required, shown by
// tasks/get under a key of its own), and the host's tasks/update answer
// under that key is the server's reply.

// taskCarrier is a task's call's mark on its context (via.task).
type taskCarrier struct {
	hooks tasks.Hooks
	// caps are what the host declared on the request that made the task:
	// the server is asked only for those.
	caps *mcp.ClientCapabilities
	seq  atomic.Uint64
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
	key := "mcpkeep-" + strconv.FormatUint(tc.seq.Add(1), 10)
	req, err := json.Marshal(map[string]any{"method": method, "params": params})
	if err != nil {
		return err
	}
	ans, err := tc.hooks.Ask(ctx, key, req)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(ans, out); err != nil {
		return fmt.Errorf("mcpkeep: the host's answer to %s in a task: %w", method, err)
	}
	return nil
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
