package tools

import (
	"fmt"
	"path"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Filter chooses which of a server's items (tools or prompts) a host
// sees, by shell globs (MatchName: path.Match's syntax, '/' an ordinary
// character) on the server's own names: with Allow
// set only names matching one of its patterns pass; a name matching a Deny
// pattern never does. The zero Filter passes everything.
type Filter struct {
	Allow []string
	Deny  []string
}

// CheckPattern reports a glob path.Match cannot use.
func CheckPattern(p string) error {
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("invalid glob %q: %w", p, err)
	}
	return nil
}

// Admits reports whether name passes f. A malformed pattern matches
// nothing (config.Parse refuses them).
func (f Filter) Admits(name string) bool {
	if len(f.Allow) > 0 && !matchAny(f.Allow, name) {
		return false
	}
	return !matchAny(f.Deny, name)
}

// Empty reports whether f passes everything.
func (f Filter) Empty() bool { return len(f.Allow) == 0 && len(f.Deny) == 0 }

// Equal reports whether a and b have the same patterns in the same order.
func (a Filter) Equal(b Filter) bool {
	return slices.Equal(a.Allow, b.Allow) && slices.Equal(a.Deny, b.Deny)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if MatchName(p, name) {
			return true
		}
	}
	return false
}

// unmatched returns the Allow patterns no name matches: an allow list that
// admits nothing of what the server offers is likely a typo.
func (f Filter) unmatched(names []string) []string {
	var out []string
	for _, p := range f.Allow {
		if !slices.ContainsFunc(names, func(n string) bool { return MatchName(p, n) }) {
			out = append(out, p)
		}
	}
	return out
}

// An Override changes what a host sees of one tool: the name its public
// name is made from (in place of the server's own; calls still reach the
// server under its own name), its title and its description. Empty fields
// keep the server's.
type Override struct {
	Name        string
	Title       string
	Description string
}

// A Policy is what a host may see of one server (docs/design.md §21): the
// filters of its tools and prompts and the overrides of its tools, keyed
// by the server's own tool names. A nil *Policy passes everything as the
// server lists it.
type Policy struct {
	Tools     Filter
	Prompts   Filter
	Overrides map[string]Override
}

// Selection is what SelectTools kept of a server's tool list.
type Selection struct {
	// Tools are the tools the filter passes, in list order; an overridden
	// one is a copy carrying the override's title and description.
	Tools []*mcp.Tool
	// Namer names the kept tools: the renamed ones by their new names,
	// through the namer given to SelectTools.
	Namer Namer
	// Refused are renamed tools left out because the new name is one the
	// server's own tools (or another rename) already take.
	Refused []Refusal
	// Unmatched are the Allow patterns that match none of the server's
	// tools.
	Unmatched []string
}

// SelectTools applies p to a server's tool list before BuildTools: the
// filter on the server's own names, then the overrides. namer nil is
// PublicNames.
func (p *Policy) SelectTools(list []*mcp.Tool, namer Namer) Selection {
	if namer == nil {
		namer = PublicNames
	}
	if p == nil || (p.Tools.Empty() && len(p.Overrides) == 0) {
		return Selection{Tools: list, Namer: namer}
	}
	sel := Selection{Tools: make([]*mcp.Tool, 0, len(list))}
	all := make([]string, 0, len(list))
	for _, t := range list {
		if t == nil {
			sel.Tools = append(sel.Tools, t) // BuildTools names the fault
			continue
		}
		all = append(all, t.Name)
		if p.Tools.Admits(t.Name) {
			sel.Tools = append(sel.Tools, t)
		}
	}
	sel.Unmatched = p.Tools.unmatched(all)
	// The name each kept tool is exposed by; a rename onto a name that is
	// taken leaves the renamed tool out, never the other one.
	taken := make(map[string]bool, len(sel.Tools))
	for _, t := range sel.Tools {
		if t != nil && p.Overrides[t.Name].Name == "" {
			taken[t.Name] = true
		}
	}
	renames := map[string]string{}
	kept := sel.Tools[:0]
	for _, t := range sel.Tools {
		o, ok := Override{}, false
		if t != nil {
			o, ok = p.Overrides[t.Name]
		}
		if !ok {
			kept = append(kept, t)
			continue
		}
		if o.Name != "" && o.Name != t.Name {
			if taken[o.Name] {
				sel.Refused = append(sel.Refused, Refusal{Kind: KindTools, Key: t.Name,
					Reason: fmt.Sprintf("toolOverrides renames it to %q, a name another of the server's tools has", o.Name)})
				continue
			}
			taken[o.Name] = true
			renames[t.Name] = o.Name
		}
		c := *t
		if o.Title != "" {
			c.Title = o.Title
		}
		if o.Description != "" {
			c.Description = o.Description
		}
		kept = append(kept, &c)
	}
	sel.Tools = kept
	sel.Namer = namer
	if len(renames) > 0 {
		sel.Namer = func(server string, names []string) []string {
			for i, n := range names {
				if r, ok := renames[n]; ok {
					names[i] = r
				}
			}
			return namer(server, names)
		}
	}
	return sel
}

// SelectPrompts applies p's prompt filter to a server's prompt list; it
// also returns the Allow patterns that match none of the server's prompts.
func (p *Policy) SelectPrompts(list []*mcp.Prompt) (kept []*mcp.Prompt, unmatched []string) {
	if p == nil || p.Prompts.Empty() {
		return list, nil
	}
	all := make([]string, 0, len(list))
	for _, pr := range list {
		if pr == nil {
			kept = append(kept, pr)
			continue
		}
		all = append(all, pr.Name)
		if p.Prompts.Admits(pr.Name) {
			kept = append(kept, pr)
		}
	}
	return kept, p.Prompts.unmatched(all)
}

// AdmitsTool reports whether the tool of the server's own name is one a
// host may call.
func (p *Policy) AdmitsTool(name string) bool { return p == nil || p.Tools.Admits(name) }
