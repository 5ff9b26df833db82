package main

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// TestCompareEras: a column through mcpkeep fails on a scenario that
// passes in any of its references and fails (or is missing) in it; a
// scenario that passes in none of them is no regression unless
// mustpass.txt holds that column to it, and a column with no references
// (direct) is held to nothing.
func TestCompareEras(t *testing.T) {
	pass, fail := outcome{Passed: 1}, outcome{Passed: 1, Failed: 1, Failures: []string{"x: no"}}
	cols := []column{
		{Name: "stateful", Results: map[string]outcome{"a": pass, "b": fail, "c": fail, "d": fail, "e": fail}},
		{Name: "stateless", Results: map[string]outcome{"a": fail, "b": pass, "c": fail, "d": pass, "e": fail}},
		{Name: "run", Results: map[string]outcome{"a": pass, "b": fail, "c": fail, "e": pass}},
		{Name: "url stateful", Results: map[string]outcome{"a": pass, "b": fail, "c": fail, "d": fail, "e": fail}},
	}
	ecs := []eraColumn{{id: "stateful"}, {id: "stateless"}, {id: "stdio", refs: []int{0, 1}}, {id: "url-stateful", refs: []int{0}}}
	var got []string
	for _, r := range compareEras(cols, ecs, nil) {
		got = append(got, r.Column+"/"+r.Scenario)
	}
	if want := []string{"run/b", "run/d"}; !reflect.DeepEqual(got, want) {
		t.Errorf("regressions = %v, want %v", got, want)
	}
	// c and e fail directly; e passes through run (beyond), c nowhere.
	if b := beyond(cols, ecs, nil); len(b) != 1 || b[0].Column != "run" || b[0].Scenario != "e" {
		t.Errorf("beyond = %v, want e through run", b)
	}
	// Listed for every column: c fails through both (e passes through run
	// and fails through url stateful); listed for stdio only: url
	// stateful is not held to it.
	got = nil
	for _, r := range compareEras(cols, ecs, map[string][]string{"c": nil, "e": {"stdio"}}) {
		got = append(got, r.Column+"/"+r.Scenario)
	}
	want := []string{"run/b", "run (" + mustPassName + ")/c", "url stateful (" + mustPassName + ")/c", "run/d"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("regressions with mustpass = %v, want %v", got, want)
	}
	if b := beyond(cols, ecs, map[string][]string{"e": nil}); len(b) != 0 {
		t.Errorf("beyond a listed scenario = %v, want none", b)
	}
}

// TestMustPassFile: the committed list parses, and a bad line is refused
// with its line number and what is wrong.
func TestMustPassFile(t *testing.T) {
	if _, err := parseMustPass(mustPassFile); err != nil {
		t.Fatalf("%s: %v", mustPassName, err)
	}
	m, err := parseMustPass([]byte("# c\n\n2026-07-28 tasks-lifecycle\n2025-11-25 ping stdio proxy # why\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cols, ok := m.of("2026-07-28")["tasks-lifecycle"]; !ok || cols != nil {
		t.Errorf("tasks-lifecycle: %v %v, want every column", cols, ok)
	}
	if !mustPasses(m.of("2025-11-25"), "ping", "proxy") || mustPasses(m.of("2025-11-25"), "ping", "url-stateful") {
		t.Errorf("ping: want stdio and proxy only: %v", m.of("2025-11-25"))
	}
	cols := []column{{Results: map[string]outcome{"tasks-lifecycle": {}}}}
	if errs := m.unknown("2026-07-28", cols); len(errs) != 0 {
		t.Errorf("unknown = %v, want none", errs)
	}
	if errs := m.unknown("2025-11-25", cols); len(errs) != 1 || !strings.Contains(errs[0].Error(), "ping") {
		t.Errorf("unknown = %v, want ping", errs)
	}
	for line, want := range map[string]string{
		"2026-07-28\n":                 ":1: want a revision and a scenario",
		"\n2024-01-01 ping\n":          `:2: revision "2024-01-01" is none`,
		"2026-07-28 ping run\n":        `:1: column "run" is none of stdio`,
		"2026-07-28 a\n2026-07-28 a\n": ":2: 2026-07-28 a is listed twice",
	} {
		if _, err := parseMustPass([]byte(line)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", line, err, want)
		}
	}
}

// TestShimNameHeader: the shim prefixes a 2026-07-28 request's Mcp-Name
// where it prefixes the body's name (so header and body still agree, or
// still disagree as the suite meant), and leaves other methods and a
// missing header alone.
func TestShimNameHeader(t *testing.T) {
	checkNameHeader(t, &shim{prefix: "ev__"}, []nameHeaderCase{
		{"tools/call", "add", "ev__add"},
		{"prompts/get", " greet ", "ev__greet"},
		{"resources/read", "file:///x", "file:///x"},
		{"tools/call", "", ""},
	})
}

// nameHeaderCase is a request's Mcp-Method and Mcp-Name ("" for none),
// and the Mcp-Name the shim should send on.
type nameHeaderCase struct{ method, name, want string }

// checkNameHeader runs s.nameHeader on each case's headers.
func checkNameHeader(t *testing.T, s *shim, cases []nameHeaderCase) {
	t.Helper()
	for _, c := range cases {
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

// TestEarlierClientScenarios: the scenarios of the full client list that
// only versions before rev have, with the last of them; none with a later
// version or a tag that is not a version.
func TestEarlierClientScenarios(t *testing.T) {
	list := `Client scenarios (test against a client):
  - initialize [2025-06-18,2025-11-25]
  - auth/2025-03-26-oauth-metadata-backcompat [2025-03-26]
  - auth/old [2025-03-26,2025-06-18]
  - auth/dpop [extension]
  - request-metadata [2026-07-28]
`
	got := earlierClientScenarios([]byte(list), "2025-11-25")
	want := map[string]string{"auth/2025-03-26-oauth-metadata-backcompat": "2025-03-26", "auth/old": "2025-06-18"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("earlier = %v, want %v", got, want)
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

// TestPickColumns keeps the named columns and those they are held to, in
// order, their references renumbered, and names a column that is none.
func TestPickColumns(t *testing.T) {
	ecs := []eraColumn{{id: "stateful"}, {id: "stateless"}, {id: "stdio", refs: []int{0, 1}},
		{id: "url-stateless", refs: []int{1}}, {id: "proxy", refs: []int{0, 1}}}
	got, err := pickColumns(ecs, []string{"url-stateless"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].id != "stateless" || got[1].id != "url-stateless" || !reflect.DeepEqual(got[1].refs, []int{0}) {
		t.Errorf("pickColumns(url-stateless) = %+v", got)
	}
	if ecs[3].refs[0] != 1 {
		t.Errorf("pickColumns changed its argument's refs: %v", ecs[3].refs)
	}
	if _, err := pickColumns(ecs, []string{"proxy", "nope"}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("pickColumns(nope) = %v, want an error naming it", err)
	}
}
