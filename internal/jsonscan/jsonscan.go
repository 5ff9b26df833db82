// Package jsonscan reads JSON text once, without decoding it, for what
// mcpkeep checks before it decodes or passes a value on (docs/design.md
// §24).
package jsonscan

// Scan reads data once, skipping the contents of strings as the go-sdk's
// own depth check does: depth is the deepest nesting of objects and
// arrays (unbalanced closers ignored), and spaced reports white space
// outside strings, which a compaction would remove. data need not be
// valid JSON.
func Scan(data []byte) (depth int, spaced bool) {
	d := 0
	inString, escaped := false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			d++
			depth = max(depth, d)
		case '}', ']':
			if d > 0 {
				d--
			}
		case ' ', '\t', '\n', '\r':
			spaced = true
		}
	}
	return depth, spaced
}
