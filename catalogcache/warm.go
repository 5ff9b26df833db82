package catalogcache

import (
	"os"
	"strings"
)

// Warm reports whether the directory holds an entry (of any identity) for
// every one of names: a start that will register cached catalogs in one
// burst rather than one server at a time as each connects. It reads the
// directory once and opens no entry; an unreadable directory is cold.
func (c *Cache) Warm(names []string) bool {
	if len(names) == 0 {
		return false
	}
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return false
	}
	have := make(map[string]bool, len(ents))
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(n, fileSuffix) {
			continue
		}
		// <server>.<tag>.v2.json: the server's name is what precedes
		// the tag (a name may itself hold dots).
		mid := strings.TrimSuffix(n, fileSuffix)
		if i := strings.LastIndexByte(mid, '.'); i > 0 && len(mid)-i-1 == tagLen {
			have[mid[:i]] = true
		}
	}
	for _, n := range names {
		if !have[n] {
			return false
		}
	}
	return true
}
