package main

import (
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCompareEras: a column through mcpkeep fails on a scenario that
// passes in any of its references and fails (or is missing) in it; a
// scenario that passes in none of them is no regression, and a column
// with no references (direct) is held to nothing.
func TestCompareEras(t *testing.T) {
	pass, fail := outcome{Passed: 1}, outcome{Passed: 1, Failed: 1, Failures: []string{"x: no"}}
	cols := []column{
		{Name: "stateful", Results: map[string]outcome{"a": pass, "b": fail, "c": fail, "d": fail}},
		{Name: "stateless", Results: map[string]outcome{"a": fail, "b": pass, "c": fail, "d": pass}},
		{Name: "run", Results: map[string]outcome{"a": pass, "b": fail, "c": fail}},
		{Name: "url stateful", Results: map[string]outcome{"a": pass, "b": fail, "c": fail, "d": fail}},
	}
	ecs := []eraColumn{{name: "stateful"}, {name: "stateless"}, {name: "run", refs: []int{0, 1}}, {name: "url stateful", refs: []int{0}}}
	var got []string
	for _, r := range compareEras(cols, ecs) {
		got = append(got, r.Column+"/"+r.Scenario)
	}
	want := []string{"run/b", "run/d"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("regressions = %v, want %v", got, want)
	}
}

// TestShimNameHeader: the shim prefixes a 2026-07-28 request's Mcp-Name
// where it prefixes the body's name (so header and body still agree, or
// still disagree as the suite meant), and leaves other methods and a
// missing header alone.
func TestShimNameHeader(t *testing.T) {
	s := &shim{prefix: "ev__"}
	for _, c := range []struct{ method, name, want string }{
		{"tools/call", "add", "ev__add"},
		{"prompts/get", " greet ", "ev__greet"},
		{"resources/read", "file:///x", "file:///x"},
		{"tools/call", "", ""},
	} {
		h := http.Header{}
		h.Set("Mcp-Method", c.method)
		if c.name != "" {
			h.Set("Mcp-Name", c.name)
		}
		s.nameHeader(h)
		if got := h.Get("Mcp-Name"); got != c.want {
			t.Errorf("%s %q: Mcp-Name = %q, want %q", c.method, c.name, got, c.want)
		}
	}
}

// TestWriteEraTables: the era tables go between their own markers and
// leave the rest (the 0.1.x suite's tables) as it was.
func TestWriteEraTables(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	doc := "a\n" + beginMarker + "old\n" + endMarker + eraBeginMarker + "older\n" + eraEndMarker + "z\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeEraTables(path, "new\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if want := strings.Replace(doc, "older\n", "new\n", 1); string(b) != want {
		t.Errorf("README = %q, want %q", b, want)
	}
	if err := os.WriteFile(path, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeEraTables(path, "new\n"); err == nil {
		t.Error("no markers: no error")
	}
}

// TestRequiredClientScenarios: the client scenarios of a requirement
// set's list, and none of the extensions listed after it.
func TestRequiredClientScenarios(t *testing.T) {
	list := `Required for 2026-07-28 (69 scenarios, frozen; run at the 2026-07-28 wire):

Server scenarios (test against a server):
  - server-stateless
  - caching

Client scenarios (test against a client):
  - tools_call
  - auth/iss-supported
  - http-standard-headers

Run and reported, but never scored:
  extension (16):
    - auth/client-credentials-jwt [client]
`
	got := requiredClientScenarios([]byte(list))
	want := []string{"tools_call", "auth/iss-supported", "http-standard-headers"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("scenarios = %v, want %v", got, want)
	}
	if r := (requirementSet{Args: []string{"--requirements", "2026-07-28"}}).revision(); r != "2026-07-28" {
		t.Errorf("revision = %q", r)
	}
	if r := (requirementSet{}).revision(); r != "2025-11-25" {
		t.Errorf("revision of the active suite = %q", r)
	}
}
