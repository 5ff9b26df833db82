package tools

// Default limits. A server beyond them is almost certainly broken or
// hostile, and its list would flood the model's context anyway.
const (
	DefaultMaxTools       = 1000      // tools per server
	DefaultMaxSchemaBytes = 256 << 10 // 256 KiB per marshalled schema
)

// Limits bound what one server may register. A zero (or negative) field
// takes its default (DefaultMaxTools, DefaultMaxSchemaBytes).
type Limits struct {
	MaxTools       int // tools per server
	MaxSchemaBytes int // bytes of each marshalled input or output schema
}

// DefaultLimits returns Limits{MaxTools: 1000, MaxSchemaBytes: 256 KiB}.
func DefaultLimits() Limits {
	return Limits{MaxTools: DefaultMaxTools, MaxSchemaBytes: DefaultMaxSchemaBytes}
}

// resolve fills zero or negative fields with their defaults.
func (l Limits) resolve() Limits {
	if l.MaxTools <= 0 {
		l.MaxTools = DefaultMaxTools
	}
	if l.MaxSchemaBytes <= 0 {
		l.MaxSchemaBytes = DefaultMaxSchemaBytes
	}
	return l
}

// checkCount rejects a server offering more than MaxTools tools.
func (l Limits) checkCount(server string, n int) error {
	if n > l.MaxTools {
		return &LimitError{Server: server, Limit: LimitMaxTools, Max: l.MaxTools, Got: n}
	}
	return nil
}

// checkSchemas rejects a tool whose input or output schema is larger than
// MaxSchemaBytes.
func (l Limits) checkSchemas(server string, t *Tool) error {
	for _, s := range [...]struct {
		field string
		size  int
	}{{"inputSchema", len(t.InputSchema)}, {"outputSchema", len(t.OutputSchema)}} {
		if s.size > l.MaxSchemaBytes {
			return &LimitError{Server: server, Tool: t.Name, Field: s.field,
				Limit: LimitMaxSchemaBytes, Max: l.MaxSchemaBytes, Got: s.size}
		}
	}
	return nil
}
