package statechart_test

import (
	"testing"

	"github.com/mcpkeep/mcpkeep/internal/statechart"
)

type colour uint8

var colourNames = []string{"red", "backing-off"}

// TestNameParse: every named value round-trips; an unnamed value gets
// "kind(n)", which Parse does not accept, and an unknown name parses to
// nothing.
func TestNameParse(t *testing.T) {
	for i, want := range colourNames {
		c := colour(i)
		if got := statechart.Name(colourNames, c, "colour"); got != want {
			t.Errorf("Name(%d) = %q, want %q", i, got, want)
		}
		if got, ok := statechart.Parse[colour](colourNames, want); !ok || got != c {
			t.Errorf("Parse(%q) = %d, %v, want %d, true", want, got, ok, c)
		}
	}
	if got := statechart.Name(colourNames, colour(7), "colour"); got != "colour(7)" {
		t.Errorf("Name(7) = %q, want colour(7)", got)
	}
	for _, name := range []string{"colour(7)", "", "Red"} {
		if got, ok := statechart.Parse[colour](colourNames, name); ok {
			t.Errorf("Parse(%q) = %d, true; want not found", name, got)
		}
	}
}
