package statechart

import "strings"

// EdgeLabel is the label both tables put on a row: "event [guard]", then
// " (internal)" for an internal transition, then " · " and the invariants
// the row carries, comma-separated. An empty guard or no invariants leaves
// its part out.
func EdgeLabel[I ~string](event, guard string, internal bool, carries []I) string {
	l := event
	if guard != "" {
		l += " [" + guard + "]"
	}
	if internal {
		l += " (internal)"
	}
	if len(carries) > 0 {
		ids := make([]string, len(carries))
		for i, c := range carries {
			ids[i] = string(c)
		}
		l += " · " + strings.Join(ids, ",")
	}
	return l
}
