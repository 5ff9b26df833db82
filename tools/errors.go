package tools

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error this package returns wraps one of them
// (except Build's for a schema that does not marshal, which wraps the
// encoding/json error), so hosts test the kind with errors.Is and read the
// details (server, tool, limit) with errors.As on the typed errors below.
var (
	// ErrReserved: Reserve of a server name that is already reserved. Two
	// supervisors of one name would fight over one tool set (docs/design.md §9).
	ErrReserved = errors.New("server name already reserved")
	// ErrQuarantined: Reserve of a server name whose previous holder was
	// disposed without proving its process gone (an incomplete shutdown).
	// The name stays taken until that holder releases it, so a replacement
	// can never run beside a process that may still live. It also matches
	// ErrReserved.
	ErrQuarantined = errors.New("server name quarantined: its previous process may still be running")
	// ErrNotReserved: Replace for a server that was never reserved or was
	// released.
	ErrNotReserved = errors.New("server name not reserved")
	// ErrConflict: a Replace would register a public name that another
	// server already holds. See *ConflictError.
	ErrConflict = errors.New("public tool name conflict")
	// ErrLimit: a server exceeds MaxTools or a schema exceeds
	// MaxSchemaBytes. See *LimitError.
	ErrLimit = errors.New("tool limit exceeded")
	// ErrInvalidName: an empty server name, a duplicate original tool name,
	// or public names that are invalid or not unique (see *NameError); a
	// server name that CheckServerName refuses (see *ServerNameError).
	ErrInvalidName = errors.New("invalid tool name")
)

// A ConflictError is returned by Replace when a public name of Server is
// already registered by Holder. Nothing of the Replace was applied.
type ConflictError struct {
	Name   string // the public name both want
	Server string // the server whose Replace failed
	Holder string // the server that holds Name
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("tools: server %q: public name %q is already registered by server %q",
		e.Server, e.Name, e.Holder)
}

// Is makes errors.Is(err, ErrConflict) hold.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Names of the limits, as they appear in LimitError.Limit.
const (
	LimitMaxTools       = "MaxTools"
	LimitMaxSchemaBytes = "MaxSchemaBytes"
	LimitMaxPrompts     = "MaxPrompts"
	LimitMaxResources   = "MaxResources"
	LimitMaxTemplates   = "MaxTemplates"
)

// A LimitError says which server (and tool and schema, for a schema size)
// went over which limit, by how much.
type LimitError struct {
	Server string
	Tool   string // original tool name; empty for MaxTools
	Field  string // "inputSchema" or "outputSchema"; empty for MaxTools
	Limit  string // LimitMaxTools or LimitMaxSchemaBytes
	Max    int    // the configured limit
	Got    int    // the offending count or size in bytes
}

func (e *LimitError) Error() string {
	switch e.Limit {
	case LimitMaxTools, LimitMaxPrompts, LimitMaxResources, LimitMaxTemplates:
		what := map[string]string{LimitMaxTools: "tools", LimitMaxPrompts: "prompts",
			LimitMaxResources: "resources", LimitMaxTemplates: "resource templates"}[e.Limit]
		return fmt.Sprintf("tools: server %q offers %d %s, more than %s (%d)",
			e.Server, e.Got, what, e.Limit, e.Max)
	}
	return fmt.Sprintf("tools: server %q tool %q: %s is %d bytes, more than %s (%d)",
		e.Server, e.Tool, e.Field, e.Got, e.Limit, e.Max)
}

// Is makes errors.Is(err, ErrLimit) hold.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }

// A NameError reports a name that cannot be registered.
type NameError struct {
	Server string
	Tool   string // original tool name, when known
	Public string // the offending public name, when there is one
	Reason string
}

func (e *NameError) Error() string {
	msg := fmt.Sprintf("tools: server %q", e.Server)
	if e.Tool != "" {
		msg += fmt.Sprintf(" tool %q", e.Tool)
	}
	if e.Public != "" {
		msg += fmt.Sprintf(" public name %q", e.Public)
	}
	return msg + ": " + e.Reason
}

// Is makes errors.Is(err, ErrInvalidName) hold.
func (e *NameError) Is(target error) bool { return target == ErrInvalidName }

// reservationError names the server for ErrReserved and ErrNotReserved.
func reservationError(server string, err error) error {
	if err == ErrQuarantined {
		return fmt.Errorf("tools: server %q: %w (%w)", server, ErrQuarantined, ErrReserved)
	}
	return fmt.Errorf("tools: server %q: %w", server, err)
}
