package catalogcache

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// formatVersion is the file format; a file of another version is foreign.
const formatVersion = 2

// Entry is what the cache holds of one server.
type Entry struct {
	Version int    `json:"version"`
	Server  string `json:"server"`
	Key     string `json:"key"`
	// Saved is when the entry was written (informational).
	Saved time.Time `json:"saved"`
	// Listed: the catalog below was listed by a live generation at some
	// point (an entry may remember only that the server did not come).
	Listed bool `json:"listed,omitempty"`
	// NotComing: in the run that wrote the entry the server was never
	// established (its first attempts failed or timed out).
	NotComing bool `json:"notComing,omitempty"`
	// Declared is what the client that listed the catalog declared; a
	// client that declares otherwise is not served it.
	Declared *Declared `json:"declared,omitempty"`

	Init      *mcp.InitializeResult   `json:"init,omitempty"`
	Tools     []*mcp.Tool             `json:"tools,omitempty"`
	Prompts   []*mcp.Prompt           `json:"prompts,omitempty"`
	Resources []*mcp.Resource         `json:"resources,omitempty"`
	Templates []*mcp.ResourceTemplate `json:"templates,omitempty"`
}
