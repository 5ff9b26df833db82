package tools

import (
	"path"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestFilterMatchesNamesAsNames: a deny glob hides a tool whose name has a
// '/' (before, "admin*" missed "admin/reset": path.Match's '*' stops at
// '/'), and an allow glob admits one.
func TestFilterMatchesNamesAsNames(t *testing.T) {
	deny := Filter{Deny: []string{"admin*"}}
	for _, name := range []string{"admin", "admin_reset", "admin/reset", "admin/users/delete"} {
		if deny.Admits(name) {
			t.Errorf("deny admin*: %q admitted", name)
		}
	}
	if !deny.Admits("read/admin") {
		t.Error(`deny admin*: "read/admin" refused`)
	}
	allow := Filter{Allow: []string{"fs?read*"}}
	if !allow.Admits("fs/read/file") || allow.Admits("fs/write") {
		t.Error("allow fs?read*: wrong")
	}
}

func TestMatchName(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"admin*", "admin/reset", true},
		{"*reset", "admin/reset", true},
		{"*/*", "a/b/c", true},
		{"a?c", "a/c", true},
		{"a[^b]c", "a/c", true},
		{"a[/-0]c", "a/c", true},
		{"[a/]x", "/x", true},
		{`admin\*`, "admin*", true},
		{`admin\*`, "admin/x", false},
		{"a*b*c", "a/b/b/c", true},
		{"a*b*c", "a/b/b/d", false},
		{"é*", "é/ü", true},
		{"?", "é", true},
		{"[", "[", false}, // malformed: matches nothing
		{`a\`, `a\`, false},
	} {
		if got := MatchName(c.pattern, c.name); got != c.want {
			t.Errorf("MatchName(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

// TestMatchNameIsPathMatchWithoutSlashes: on names without '/', MatchName
// is path.Match, for any well-formed pattern.
func TestMatchNameIsPathMatchWithoutSlashes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pattern := rapid.StringOfN(rapid.SampledFrom([]rune(`ab*?[]^-\é`)), 0, 8, -1).Draw(t, "pattern")
		name := rapid.StringOfN(rapid.SampledFrom([]rune(`ab*?[]^-\é`)), 0, 8, -1).Draw(t, "name")
		want, err := path.Match(pattern, name)
		if err != nil {
			want = false
		}
		if got := MatchName(pattern, name); got != want {
			t.Fatalf("MatchName(%q, %q) = %v, path.Match %v", pattern, name, got, want)
		}
		// And '/' is just another character: the same with 'b' read as '/'
		// (outside classes, whose ranges it would change).
		if strings.Contains(pattern, "[") {
			return
		}
		slashed := strings.ReplaceAll(name, "b", "/")
		if got := MatchName(strings.ReplaceAll(pattern, "b", "/"), slashed); got != want {
			t.Fatalf("MatchName(%q, %q) = %v, want %v (as without '/')", strings.ReplaceAll(pattern, "b", "/"), slashed, got, want)
		}
	})
}
