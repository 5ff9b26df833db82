package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's task that mcpkeep did not ask for (docs/design.md §25): a
// server answers a tools/call with resultType "task" although the call
// did not declare the tasks extension to it (a host without it, mode
// never, a call that went the typed way). There is no result to give:
// relayed raw the host would get a task body it never asked for either,
// and decoded into the SDK's CallToolResult an empty success. Both are
// silent wrong results; the host gets an isError result naming the
// server instead, as for any other bad answer of a server (the model can
// act on it; one server's fault costs only that call: the connection
// stays, nothing else is cancelled). mcpkeep keeps no handle and no hold
// for such a task, and sends it no tasks/cancel (it never declared the
// extension to the server).

// ErrUnaskedTask: a server answered a call with a task it was not asked
// for.
var ErrUnaskedTask = errors.New("the server answered with a task it was not asked for")

// UnaskedTaskError names the server, the tool (its public name) and the
// server's task id; it matches ErrUnaskedTask.
type UnaskedTaskError struct {
	Server, Tool, TaskID string
}

func (e *UnaskedTaskError) Error() string {
	return fmt.Sprintf("mcpkeep: server %q answered the call of %q with a task it was not asked for (task id %q): "+
		"mcpkeep did not declare the tasks extension to it for this call, so there is no result; "+
		"the server may still be running the work (mcpkeep neither cancelled nor retried it)", e.Server, e.Tool, e.TaskID)
}

func (e *UnaskedTaskError) Unwrap() error { return ErrUnaskedTask }

// taskMark is in every task answer; a result without it is not one, and
// costs no decode.
var taskMark = []byte(`"task"`)

// unaskedRaw is an *UnaskedTaskError when raw, a server's answer to a
// call of tool that did not declare the extension, is a task; else nil.
func unaskedRaw(server, tool string, raw json.RawMessage) error {
	if !bytes.Contains(raw, taskMark) {
		return nil
	}
	var head struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
	}
	if json.Unmarshal(raw, &head) != nil || head.ResultType != "task" {
		return nil
	}
	return &UnaskedTaskError{Server: server, Tool: tool, TaskID: head.TaskID}
}

// unaskedTyped is (res, err) of the typed path, with a task the SDK
// decoded (its fields dropped but resultType kept, unexported) as
// UnaskedTaskError. Only a result with nothing else in it can be one.
func unaskedTyped(server, tool string, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	if err != nil || res == nil || len(res.Content) > 0 || res.StructuredContent != nil || res.IsError || len(res.InputRequests) > 0 {
		return res, err
	}
	raw, merr := json.Marshal(res)
	if merr != nil {
		return res, err
	}
	if uerr := unaskedRaw(server, tool, raw); uerr != nil {
		return nil, uerr
	}
	return res, err
}
