package catalogcache

import (
	"os"
	"path/filepath"
	"testing"
)

// Warm is true only when every named server has an entry file.
func TestWarm(t *testing.T) {
	dir := t.TempDir()
	c := New(dir)
	if c.Warm([]string{"a"}) {
		t.Error("an empty directory is warm")
	}
	write := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.0123456789abcdef" + fileSuffix)
	write("b.c.0123456789abcdef" + fileSuffix) // a dotted name
	write("d.0123456789abcdef.json")           // format 1: not an entry read
	write("e.short" + fileSuffix)              // no tag
	if err := os.Mkdir(filepath.Join(dir, "f.0123456789abcdef"+fileSuffix), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		names []string
		want  bool
	}{
		{[]string{"a"}, true},
		{[]string{"a", "b.c"}, true},
		{[]string{"a", "d"}, false},
		{[]string{"e"}, false},
		{[]string{"f"}, false},
		{[]string{"b"}, false},
		{nil, false},
	} {
		if got := c.Warm(tc.names); got != tc.want {
			t.Errorf("Warm(%q) = %v, want %v", tc.names, got, tc.want)
		}
	}
	if New(filepath.Join(dir, "missing")).Warm([]string{"a"}) {
		t.Error("a missing directory is warm")
	}
}
