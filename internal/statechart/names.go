package statechart

import "strconv"

// Name is names[v], the name a declaration gives its state or event v, or
// "kind(v)" for a value it does not name (fsm and tasks spell their states
// and events this way, docs/design.md §3, §25).
func Name[T ~uint8](names []string, v T, kind string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return kind + "(" + strconv.Itoa(int(v)) + ")"
}

// Parse is the inverse of Name: the value names spells as name, and whether
// there is one.
func Parse[T ~uint8](names []string, name string) (T, bool) {
	for i, n := range names {
		if n == name {
			return T(i), true
		}
	}
	return 0, false
}
