// Package tasks holds the tasks extension (io.modelcontextprotocol/tasks,
// docs/design.md §25) as mcpkeep offers it for every tool: the task
// lifecycle declared as data (Table, beside fsm.Table: states, events,
// guards and the invariants each row carries), an Engine that runs a call
// detached from the host's request and keeps its task by that table, and
// a Store for finished tasks (in memory, or on disk under the cache
// directory).
//
// The engine never calls a server itself: it is given a function that
// does (the proxy passes one over Pool.CallRaw, so safe replay, §21,
// applies to a task's call as to any other).
package tasks
