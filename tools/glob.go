package tools

import (
	"path"
	"unicode/utf8"
)

// Filters match names as names (docs/design.md §21): a tool called
// "admin/reset" is a name, not a path, so "admin*" must match it, where
// path.Match's '*' and '?' stop at a '/'. MatchName has path.Match's
// syntax ('*', '?', '[...]' classes with ranges and '^', '\' escapes) with
// '/' an ordinary character.

// MatchName reports whether name matches the shell glob pattern, '/'
// being an ordinary character. A malformed pattern (CheckPattern) matches
// nothing.
func MatchName(pattern, name string) bool {
	if _, err := path.Match(pattern, ""); err != nil {
		return false
	}
	return matchName(pattern, name)
}

// matchName matches a well-formed pattern: one pass, going back only to
// the last '*' (enough for globs: a later star can match all an earlier
// one could).
func matchName(p, s string) bool {
	px, sx := 0, 0
	starP, starS := -1, -1 // where to go back to: after the last '*', and the name there
	for px < len(p) || sx < len(s) {
		if px < len(p) {
			switch p[px] {
			case '*':
				starP, starS = px+1, sx
				px++
				continue
			case '?':
				if sx < len(s) {
					_, w := utf8.DecodeRuneInString(s[sx:])
					px, sx = px+1, sx+w
					continue
				}
			case '[':
				if sx < len(s) {
					r, w := utf8.DecodeRuneInString(s[sx:])
					if ok, n := matchClass(p[px:], r); ok {
						px, sx = px+n, sx+w
						continue
					}
				}
			default:
				lit, n := p[px], 1
				if lit == '\\' {
					lit = p[px+1] // well-formed: an escape is never last
					n = 2
				}
				if sx < len(s) && s[sx] == lit {
					px, sx = px+n, sx+1
					continue
				}
			}
		}
		// Mismatch: the last star takes one more rune, if it can.
		if starP >= 0 && starS < len(s) {
			_, w := utf8.DecodeRuneInString(s[starS:])
			starS += w
			px, sx = starP, starS
			continue
		}
		return false
	}
	return true
}

// matchClass matches r against the class p starts with ('[' ... ']'),
// well-formed; n is the class's length in bytes.
func matchClass(p string, r rune) (matched bool, n int) {
	i := 1
	negated := i < len(p) && p[i] == '^'
	if negated {
		i++
	}
	for first := true; ; first = false {
		if p[i] == ']' && !first {
			i++
			break
		}
		lo, w := classChar(p[i:])
		i += w
		hi := lo
		if p[i] == '-' {
			hi, w = classChar(p[i+1:])
			i += 1 + w
		}
		if lo <= r && r <= hi {
			matched = true
		}
	}
	return matched != negated, i
}

// classChar is one character of a class, escaped or not.
func classChar(p string) (rune, int) {
	if p[0] == '\\' {
		r, w := utf8.DecodeRuneInString(p[1:])
		return r, 1 + w
	}
	return utf8.DecodeRuneInString(p)
}
