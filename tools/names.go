package tools

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
)

// MaxNameLen is the longest public name. 64 is what the strictest MCP hosts
// and model APIs accept for a tool (function) name.
const MaxNameLen = 64

const (
	separator  = "__" // between server and tool in a public name
	hashDigits = 8    // hex digits of the disambiguating suffix
	// prefixLen is what remains of the normalized name when a suffix
	// "_" + 8 hex digits is appended.
	prefixLen = MaxNameLen - 1 - hashDigits
)

// A Namer maps a server's original tool names (any order) to public names,
// in the same index order. A host may replace the default, PublicNames;
// Build checks that whatever it returns is valid and unique.
type Namer func(server string, names []string) []string

// ValidName reports whether s is a valid public name: 1 to 64 characters
// from [A-Za-z0-9_-].
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !validByte(s[i]) {
			return false
		}
	}
	return true
}

func validByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// PublicNames is the default Namer. The public name of tool t of server s
// is "s__t" when that is already valid (a clean name). Otherwise — a
// character outside [A-Za-z0-9_-] (each such character, by rune, becomes
// "_"), or longer than 64 — it is the normalized name cut to 55 characters
// plus "_" and 8 hex digits: the first 4 bytes of sha256(s + "\x00" + t).
// Since every name that normalization changes carries the hash of its own
// original, two tools that normalize alike ("a.b", "a b") stay apart, and
// neither takes the clean name of a third ("a_b").
//
// Names are deterministic, valid, unique among the given names, and
// independent of their order, so they survive restarts and reordered lists:
//
//   - A clean name always stays clean: it never depends on the other tools.
//   - A hashed name that collides with another candidate (another tool's
//     clean name that happens to look like it, or a 32-bit hash collision)
//     loses to the clean name, or among hashed names to the smallest
//     original name; the loser is hashed again with a round number mixed in,
//     sha256(s + "\x00" + t + "\x00" + round in decimal), until it is
//     unique. Every step depends only on the set of names, never on their
//     order.
//
// Equal input names get equal public names; Build rejects such lists
// before naming.
func PublicNames(server string, names []string) []string {
	assigned := assign(names, func(tool string, round int) (string, bool) {
		return candidate(server, tool, round)
	})
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = assigned[n]
	}
	return out
}

// candidate is the public name tool would get in the given collision round,
// and whether it carries a hash suffix.
func candidate(server, tool string, round int) (string, bool) {
	full := server + separator + tool
	norm, changed := normalize(full)
	if round == 0 && !changed && len(full) <= MaxNameLen {
		return full, false
	}
	if len(norm) > prefixLen {
		norm = norm[:prefixLen] // all ASCII after normalize: cutting bytes is safe
	}
	return norm + "_" + nameHash(server, tool, round), true
}

// normalize replaces each rune outside [A-Za-z0-9_-] (and each byte of
// invalid UTF-8) with "_".
func normalize(s string) (string, bool) {
	clean := true
	for i := 0; i < len(s); i++ {
		if !validByte(s[i]) {
			clean = false
			break
		}
	}
	if clean {
		return s, false
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r < 0x80 && validByte(byte(r)) {
			b.WriteByte(byte(r))
		} else {
			b.WriteByte('_')
		}
	}
	return b.String(), true
}

// nameHash is 8 hex digits of sha256 of the original server and tool (and
// the collision round, from round 1 on). The NUL separator keeps ("a", "b_c")
// and ("a_b", "c") apart.
func nameHash(server, tool string, round int) string {
	in := server + "\x00" + tool
	if round > 0 {
		in += "\x00" + strconv.Itoa(round)
	}
	sum := sha256.Sum256([]byte(in))
	return hex.EncodeToString(sum[:hashDigits/2])
}

// assign gives each distinct name a unique public name. In round r every
// pending name proposes cand(name, r). A proposal already taken in an
// earlier round loses outright. Among rival proposals of one round an
// unhashed one (a clean name) wins over hashed ones, and ties go to the
// smallest name; the losers move on to round r+1. Each round sorts the
// proposals, so the outcome depends only on the set of names, never on
// their order.
//
// With sha256 candidates each round gives a loser a fresh 32-bit suffix, so
// even a second round is rare and the loop ends.
func assign(names []string, cand func(name string, round int) (public string, hashed bool)) map[string]string {
	pending := slices.Clone(names)
	slices.Sort(pending)
	pending = slices.Compact(pending)

	result := make(map[string]string, len(pending)) // name → public
	taken := make(map[string]bool, len(pending))    // public names given out
	props := make([]proposal, 0, len(pending))
	for round := 0; len(pending) > 0; round++ {
		props = props[:0]
		for _, n := range pending {
			c, hashed := cand(n, round)
			props = append(props, proposal{public: c, hashed: hashed, name: n})
		}
		// Rivals become neighbours, the winner first.
		slices.SortFunc(props, func(a, b proposal) int {
			return cmp.Or(strings.Compare(a.public, b.public), boolCompare(a.hashed, b.hashed),
				strings.Compare(a.name, b.name))
		})
		next := pending[:0] // props holds the names now
		for _, p := range props {
			if taken[p.public] { // by an earlier round, or by the winner just before
				next = append(next, p.name)
				continue
			}
			taken[p.public] = true
			result[p.name] = p.public
		}
		slices.Sort(next)
		pending = next
	}
	return result
}

type proposal struct {
	public string
	hashed bool
	name   string
}

// boolCompare orders false before true.
func boolCompare(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// OwnNames is the Namer of a server that is exposed alone, under its own
// names (mcpkeep run): a name is kept as it is wherever it is a valid
// public name, and otherwise normalized and hashed as PublicNames does,
// without the server prefix. Its names are deterministic and order-free
// like PublicNames'; they are unique only among one server's names.
func OwnNames(server string, names []string) []string {
	assigned := assign(names, func(name string, round int) (string, bool) {
		norm, changed := normalize(name)
		if round == 0 && !changed && name != "" && len(name) <= MaxNameLen {
			return name, false
		}
		if len(norm) > prefixLen {
			norm = norm[:prefixLen]
		}
		return norm + "_" + nameHash(server, name, round), true
	})
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = assigned[n]
	}
	return out
}
