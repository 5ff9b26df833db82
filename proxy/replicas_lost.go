package proxy

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/mcpkeep/mcpkeep/tasks"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A task whose replica left the membership set while it ran
// (docs/design.md §25, §26): its call died with that replica's server
// process, and no store holds a result. It is not unknown to the host,
// which was given its id: tasks/get answers it failed, saying the
// outcome is unknown (the work may or may not have taken effect), never
// a silent success; tasks/cancel acknowledges (nothing runs); tasks/update
// is served here and refused as for any unknown task. A finished task of
// a gone replica is in the store and served from it as usual.

// lostTaskReason is the failed task's error data.
const lostTaskReason = "replica_gone"

// lostTask answers ft's tasks/* request when its owner's task is lost;
// false leaves the request to be served here.
func (rt *router) lostTask(w http.ResponseWriter, r *http.Request, ft forwardTo) bool {
	if rt.tasks == nil || ft.body == nil {
		return false
	}
	var req struct {
		Method string `json:"method"`
		Params struct {
			TaskID string   `json:"taskId"`
			Meta   mcp.Meta `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(ft.body, &req) != nil || req.Params.TaskID == "" || !declared(nil, req.Params.Meta) {
		return false // a host that did not declare the extension: the gate answers it here
	}
	if _, err := rt.tasks.e.Get(r.Context(), "", req.Params.TaskID); !errors.Is(err, tasks.ErrNotFound) {
		return false // in the store (a finished result), or the store's error: served here
	}
	var result any
	switch req.Method {
	case "tasks/get":
		msg := "mcpkeep: the replica " + ft.owner + " that ran this task is gone; the call died with it and its outcome is unknown (the work may or may not have taken effect)"
		data, _ := json.Marshal(map[string]string{"replica": ft.owner, "reason": lostTaskReason})
		now := time.Now().UTC().Format(time.RFC3339Nano)
		result = &detailedTask{ResultType: "complete",
			taskFields: taskFields{TaskID: req.Params.TaskID, Status: tasks.Failed.String(), StatusMessage: msg,
				CreatedAt: now, LastUpdatedAt: now},
			Error: &tasks.RPCError{Code: jsonrpc.CodeInternalError, Message: msg, Data: data}}
	case "tasks/cancel":
		result = &taskAck{ResultType: "complete"}
	default:
		return false
	}
	raw, err := json.Marshal(result)
	if err != nil {
		return false
	}
	out, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: ft.id, Result: raw})
	if err != nil {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
	return true
}
