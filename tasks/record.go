package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Record is one task as kept and as a host reads it (tasks/get): the
// extension's task fields plus what mcpkeep needs to route and bound it.
// It serializes to JSON (Encode, Decode), so any key-value store with
// TTLs can keep it under its ID until ExpiresAt (docs/design.md §25).
type Record struct {
	ID            string    `json:"taskId"`
	Status        State     `json:"status"`
	StatusMessage string    `json:"statusMessage,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"lastUpdatedAt"`
	TTLMs         int64     `json:"ttlMs"`
	// PollIntervalMs is the engine's hint to the host.
	PollIntervalMs int64 `json:"pollIntervalMs,omitempty"`
	// ExpiresAt is when the task is forgotten (failed first if still live).
	ExpiresAt time.Time `json:"expiresAt"`
	// Owner is the host identity that created the task; another host
	// does not find it. Empty: any host of this mcpkeep.
	Owner  string `json:"owner,omitempty"`
	Server string `json:"server,omitempty"`
	Tool   string `json:"tool,omitempty"`
	// Result is the tool result as the server sent it (completed).
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the task's JSON-RPC error (failed).
	Error *RPCError `json:"error,omitempty"`
	// InputRequests are the server's open requests (input_required),
	// keyed as the host answers them in tasks/update.
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
}

// RPCError is a failed task's error, in JSON-RPC's shape.
type RPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// MarshalText spells the state as the extension does.
func (s State) MarshalText() ([]byte, error) {
	if int(s) >= len(stateNames) {
		return nil, fmt.Errorf("tasks: no state %d", s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText is the inverse of MarshalText.
func (s *State) UnmarshalText(b []byte) error {
	st, ok := ParseState(string(b))
	if !ok {
		return fmt.Errorf("tasks: unknown status %q", b)
	}
	*s = st
	return nil
}

// ErrBadRecord: stored bytes that are not a task record (corrupt,
// truncated, hostile, or larger than the store accepts).
var ErrBadRecord = errors.New("not a task record")

// Encode serializes r for a store.
func Encode(r Record) ([]byte, error) { return json.Marshal(r) }

// Decode parses a stored record, refusing one over max bytes (0: no
// bound) or without the fields every record has. Errors match
// ErrBadRecord.
func Decode(data []byte, max int) (Record, error) {
	if max > 0 && len(data) > max {
		return Record{}, fmt.Errorf("%w: %d bytes, over the bound of %d", ErrBadRecord, len(data), max)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	switch {
	case r.ID == "":
		return Record{}, fmt.Errorf("%w: no taskId", ErrBadRecord)
	case r.ExpiresAt.IsZero():
		return Record{}, fmt.Errorf("%w: task %q: no expiresAt", ErrBadRecord, r.ID)
	}
	return r, nil
}
