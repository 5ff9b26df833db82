package transport

import "strings"

// expandVars expands the variable references of one env or header value
// (docs/design.md §11), as docker compose does:
//
//   - "$$" is a literal "$" (so a password "pa$$w0rd" is written as it is
//     meant: "pa$$$$w0rd" in the file gives "pa$$w0rd");
//   - "${NAME}" and "$NAME" (NAME a shell name: a letter or "_", then
//     letters, digits and "_") expand with get;
//   - a "$" followed by anything else ("$1", "$-", a "$" at the end) stays
//     literal: os.Expand would drop it and the character after it;
//   - a malformed "${..." (no closing brace, or not a name inside) stays
//     literal, and EnvSyntax names it so that the config can warn.
func expandVars(s string, get func(string) string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	scanVars(s, func(lit string) { b.WriteString(lit) }, func(name string) { b.WriteString(get(name)) }, nil)
	return b.String()
}

// EnvRefs returns the names a value's references would look up, each
// once, in order, and what is malformed in it (an unterminated "${" or a
// "${...}" that holds no name), for the config's warnings.
func EnvRefs(s string) (names, problems []string) {
	seen := map[string]bool{}
	scanVars(s, func(string) {}, func(name string) {
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}, func(p string) { problems = append(problems, p) })
	return names, problems
}

// scanVars walks s once, handing literal text to lit, each reference's
// name to ref, and each malformed reference to bad (when not nil).
func scanVars(s string, lit, ref func(string), bad func(string)) {
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 || i == len(s)-1 {
			lit(s)
			return
		}
		lit(s[:i])
		rest := s[i+1:]
		switch c := rest[0]; {
		case c == '$':
			lit("$")
			s = rest[1:]
		case c == '{':
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				if bad != nil {
					bad(`"${" has no closing "}": kept as written (write "$$" for a literal "$")`)
				}
				lit(s[i:])
				return
			}
			name := rest[1:end]
			if n := nameLen(name); n == 0 || n != len(name) {
				if bad != nil {
					bad(`"${` + name + `}" is not a variable name: kept as written (write "$$" for a literal "$")`)
				}
				lit(s[i : i+1+end+1])
			} else {
				ref(name)
			}
			s = rest[end+1:]
		default:
			n := nameLen(rest)
			if n == 0 {
				lit("$")
				s = rest
				continue
			}
			ref(rest[:n])
			s = rest[n:]
		}
	}
}

// nameLen is the length of the shell name that s starts with (0 if none).
func nameLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return i
		}
	}
	return len(s)
}
