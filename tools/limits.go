package tools

// Default limits. A server beyond them is almost certainly broken or
// hostile, and its list would flood the model's context anyway.
const (
	DefaultMaxTools       = 1000      // tools per server
	DefaultMaxSchemaBytes = 256 << 10 // 256 KiB per marshalled schema
	DefaultMaxPrompts     = 1000      // prompts per server
	DefaultMaxResources   = 10000     // listed resources per server
	DefaultMaxTemplates   = 1000      // resource templates per server
)

// Limits bound what one server may register. A zero (or negative) field
// takes its default (DefaultMaxTools, DefaultMaxSchemaBytes).
type Limits struct {
	MaxTools       int // tools per server
	MaxSchemaBytes int // bytes of each marshalled input or output schema
	MaxPrompts     int // prompts per server
	MaxResources   int // listed resources per server
	MaxTemplates   int // resource templates per server
}

// DefaultLimits returns every limit at its default.
func DefaultLimits() Limits { return Limits{}.resolve() }

// resolve fills zero or negative fields with their defaults.
func (l Limits) resolve() Limits {
	if l.MaxTools <= 0 {
		l.MaxTools = DefaultMaxTools
	}
	if l.MaxSchemaBytes <= 0 {
		l.MaxSchemaBytes = DefaultMaxSchemaBytes
	}
	if l.MaxPrompts <= 0 {
		l.MaxPrompts = DefaultMaxPrompts
	}
	if l.MaxResources <= 0 {
		l.MaxResources = DefaultMaxResources
	}
	if l.MaxTemplates <= 0 {
		l.MaxTemplates = DefaultMaxTemplates
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

// checkKind rejects a server listing more items of kind than its limit.
func (l Limits) checkKind(server string, kind ListKind, n int) error {
	limit, max := LimitMaxPrompts, l.MaxPrompts
	switch kind {
	case KindResources:
		limit, max = LimitMaxResources, l.MaxResources
	case KindTemplates:
		limit, max = LimitMaxTemplates, l.MaxTemplates
	}
	if n > max {
		return &LimitError{Server: server, Limit: limit, Max: max, Got: n}
	}
	return nil
}
