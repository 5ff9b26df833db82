package config

import (
	"maps"
	"slices"
	"strings"

	"github.com/mcpkeep/mcpkeep/tools"
)

// What a host sees of a server (docs/design.md §21): the "tools" and
// "prompts" filters (per server, or top-level as a default, field by
// field as "reconnect" is), the host keys that mean the same
// ("disabledTools", "excludeTools": deny; "includeTools": allow; exact
// names), and "toolOverrides".

// filterFields is one "tools" or "prompts" block: each list and where.
type filterFields struct {
	allow, deny setting[[]string]
}

func (p *parser) filter(m member) (filterFields, error) {
	var f filterFields
	members, err := objectMembers(m.path, m.raw)
	if err != nil {
		return f, err
	}
	for _, e := range members {
		if e.null() {
			continue
		}
		var dst *setting[[]string]
		switch e.key {
		case "allow":
			dst = &f.allow
		case "deny":
			dst = &f.deny
		default:
			p.fail(ruleError(e.path, "unknown key (filter keys: allow, deny)"))
			continue
		}
		v, err := p.patterns(e)
		if err != nil {
			p.fail(err)
			continue
		}
		if len(v) == 0 && e.key == "allow" {
			p.warn(e.path, "empty: an allow list with no pattern admits everything (hide items with deny)")
		}
		*dst = setting[[]string]{v, e.path}
	}
	return f, nil
}

// patterns reads a list of globs, refusing a malformed one (tools.CheckPattern).
func (p *parser) patterns(m member) ([]string, error) {
	v, err := decodeStrings(m)
	if err != nil {
		return nil, err
	}
	for i, s := range v {
		if err := tools.CheckPattern(s); err != nil {
			p.fail(&Error{Path: string(m.path.index(i)), Rule: err.Error(), Err: err})
		}
	}
	return v, nil
}

// hostFilter is what a host's own keys add to a server's tool filter.
type hostFilter struct {
	allow, deny []string
	paths       []jsonPath
}

// add reads one host key: a list of exact tool names.
func (h *hostFilter) add(m member, allow bool) error {
	v, err := decodeStrings(m)
	if err != nil {
		return err
	}
	lit := make([]string, len(v))
	for i, s := range v {
		lit[i] = literal(s)
	}
	if allow {
		h.allow = append(h.allow, lit...)
	} else {
		h.deny = append(h.deny, lit...)
	}
	h.paths = append(h.paths, m.path)
	return nil
}

// literal escapes s so tools.MatchName matches it exactly: the host keys name
// tools, they hold no globs.
func literal(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`).Replace(s)
}

// effective merges the server's block over the top level's, field by
// field, and adds the host keys' names.
func effectiveFilter(own, top filterFields, h hostFilter) tools.Filter {
	return tools.Filter{
		Allow: union(own.allow.or(top.allow).v, h.allow),
		Deny:  union(own.deny.or(top.deny).v, h.deny),
	}
}

func union(a, b []string) []string {
	var out []string
	for _, s := range slices.Concat(a, b) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// overrideField is one "toolOverrides" entry and where its name was set.
type overrideField struct {
	tool     string
	o        tools.Override
	path     jsonPath
	namePath jsonPath
}

func (p *parser) overrides(m member) []overrideField {
	members, err := objectMembers(m.path, m.raw)
	if err != nil {
		p.fail(err)
		return nil
	}
	var out []overrideField
	for _, e := range members {
		fields, err := objectMembers(e.path, e.raw)
		if err != nil {
			p.fail(err)
			continue
		}
		of := overrideField{tool: e.key, path: e.path}
		for _, f := range fields {
			if f.null() {
				continue
			}
			var dst *string
			switch f.key {
			case "name":
				dst, of.namePath = &of.o.Name, f.path
			case "title":
				dst = &of.o.Title
			case "description":
				dst = &of.o.Description
			default:
				p.fail(ruleError(f.path, "unknown key (override keys: name, title, description)"))
				continue
			}
			v, err := decodeString(f)
			if err != nil {
				p.fail(err)
				continue
			}
			*dst = v
		}
		out = append(out, of)
	}
	return out
}

// checkOverrides applies the name rules to the renames: a new name makes a
// valid public name, and no two tools of the server end up with one name.
// An override of a tool the filter hides is a warning: it does nothing.
func (p *parser) checkOverrides(server string, ofs []overrideField, f tools.Filter) map[string]tools.Override {
	if len(ofs) == 0 {
		return nil
	}
	out := make(map[string]tools.Override, len(ofs))
	given := map[string]overrideField{} // new name → the override giving it
	renamed := map[string]bool{}
	for _, of := range ofs {
		if of.o.Name != "" && of.o.Name != of.tool {
			renamed[of.tool] = true
		}
	}
	for _, of := range ofs {
		out[of.tool] = of.o
		if !f.Admits(of.tool) {
			p.warn(of.path, "tool %q is hidden by the server's tool filter: this override does nothing", of.tool)
		}
		n := of.o.Name
		switch {
		case of.namePath == "":
			continue
		case n == "":
			p.fail(ruleError(of.namePath, "must not be empty (leave name out to keep the server's)"))
			continue
		case !tools.ValidName(n):
			p.fail(ruleError(of.namePath, "%q is not a valid tool name (1 to %d characters of A-Z a-z 0-9 _ -)", n, tools.MaxNameLen))
			continue
		case !tools.ValidName(server + "__" + n):
			p.fail(ruleError(of.namePath, "%q makes the public name %q, longer than %d characters", n, server+"__"+n, tools.MaxNameLen))
			continue
		}
		if n == of.tool {
			continue
		}
		if prev, ok := given[n]; ok {
			p.fail(ruleError(of.namePath, "%q is also given to tool %q at %s: two tools, one name", n, prev.tool, prev.namePath))
			continue
		}
		if o, ok := findOverride(ofs, n); ok && !renamed[n] {
			p.fail(ruleError(of.namePath, "%q is the name of the server's tool %q, which keeps it (%s): two tools, one name", n, n, o.path))
			continue
		}
		given[n] = of
	}
	return out
}

// findOverride returns the override of tool.
func findOverride(ofs []overrideField, tool string) (overrideField, bool) {
	for _, o := range ofs {
		if o.tool == tool {
			return o, true
		}
	}
	return overrideField{}, false
}

func equalOverrides(a, b map[string]tools.Override) bool { return maps.Equal(a, b) }
