package main

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestReadResults: a scenario's verdict is its checks.json under the
// suite's directory name (auth/x in a subdirectory); a FAILURE fails it,
// a WARNING does not (strict counts it, for client scenarios), and a
// scenario with no check passing has not passed.
func TestReadResults(t *testing.T) {
	dir := t.TempDir()
	write := func(name, checks string) {
		t.Helper()
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "checks.json"), []byte(checks), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("server-ping-2026-12-01T22-26-19-503Z", `[{"id":"ping","status":"SUCCESS"},{"id":"x","status":"INFO"}]`)
	write("server-elicitation-sep1330-enums-2026-12-01T22-26-20-424Z",
		`[{"id":"a","status":"SUCCESS"},{"id":"general","status":"FAILURE","errorMessage":"Server did not request elicitation"}]`)
	write("sse-retry-2026-12-01T22-27-24-257Z", `[{"id":"t","status":"SUCCESS"},{"id":"w","status":"WARNING","description":"should"}]`)
	write("auth/basic-cimd-2026-12-01T22-27-25-257Z", `[{"id":"t","status":"SUCCESS"}]`)
	write("server-empty-2026-12-01T22-27-24-257Z", `[{"id":"i","status":"INFO"}]`)
	write("server-tasks-status-notifications-2026-12-01T22-27-24-257Z", `[{"id":"s","status":"SKIPPED","errorMessage":"Skipped: rewrite"}]`)
	write("server-half-2026-12-01T22-27-24-257Z", `[{"id":"s","status":"SKIPPED"},{"id":"f","status":"FAILURE","errorMessage":"no"}]`)
	if err := os.Mkdir(filepath.Join(dir, "not-a-result"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := readResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]outcome{
		"ping":                       {Passed: 1},
		"elicitation-sep1330-enums":  {Passed: 1, Failed: 1, Failures: []string{"general: Server did not request elicitation"}},
		"sse-retry":                  {Passed: 1, Warnings: []string{"w: warning: should"}},
		"empty":                      {},
		"auth/basic-cimd":            {Passed: 1},
		"tasks-status-notifications": {Skipped: 1},
		"half":                       {Failed: 1, Skipped: 1, Failures: []string{"f: no"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("readResults = %#v\nwant %#v", got, want)
	}
	for sc, ok := range map[string]bool{"ping": true, "elicitation-sep1330-enums": false, "sse-retry": true, "empty": false} {
		if got[sc].ok() != ok {
			t.Errorf("%s: ok() = %v, want %v", sc, !ok, ok)
		}
	}
	for sc, skipped := range map[string]bool{"tasks-status-notifications": true, "half": false, "empty": false, "ping": false} {
		if got[sc].skipped() != skipped || (skipped && got[sc].ok()) {
			t.Errorf("%s: skipped() = %v, ok() = %v; want skipped %v", sc, got[sc].skipped(), got[sc].ok(), skipped)
		}
	}
	if s := strict(got["sse-retry"]); s.ok() || !reflect.DeepEqual(s.Failures, []string{"w: warning: should"}) {
		t.Errorf("strict(sse-retry) = %#v, want a failure", s)
	}
}

// TestReadResultsBadJSON names the scenario whose checks cannot be read.
func TestReadResultsBadJSON(t *testing.T) {
	dir := t.TempDir()
	d := filepath.Join(dir, "server-ping-2026-12-01T22-26-19-503Z")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "checks.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readResults(dir); err == nil || !strings.Contains(err.Error(), "scenario ping") {
		t.Fatalf("readResults = %v, want an error naming scenario ping", err)
	}
}

var sampleCols = []column{
	{Name: "direct", Results: map[string]outcome{"a": {Passed: 1}, "b": {Passed: 2}, "c": {Failed: 1}}},
	{Name: "run", Results: map[string]outcome{"a": {Passed: 1}, "b": {Passed: 1, Failed: 1, Failures: []string{"x: no"}}, "c": {Passed: 1}}},
	{Name: "proxy", Results: map[string]outcome{"b": {Passed: 2}}},
}

// TestCompare: a regression is a direct pass that fails, or has no
// result, through mcpkeep; a direct failure is never one.
func TestCompare(t *testing.T) {
	got := compare(sampleCols)
	want := []regression{
		{Scenario: "a", Column: "proxy"},
		{Scenario: "b", Column: "run", Failures: []string{"x: no"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("compare = %#v\nwant %#v", got, want)
	}
	if s := got[1].String(); s != "b: fails through run: x: no" {
		t.Errorf("String = %q", s)
	}
}

func TestTable(t *testing.T) {
	want := "| scenario | direct | run | proxy |\n" +
		"|---|:-:|:-:|:-:|\n" +
		"| `a` | ✓ | ✓ | – |\n" +
		"| `b` | ✓ | ✗ | ✓ |\n" +
		"| `c` | ✗ | ✓ | – |\n" +
		"| passed | 2 / 3 | 2 / 3 | 1 / 3 |\n"
	if got := table("scenario", sampleCols); got != want {
		t.Fatalf("table:\n%s\nwant:\n%s", got, want)
	}
}

// TestTableSkipped: a scenario whose every check the suite SKIPPED is –¹
// in every column and counts apart in the total, with a footnote; a
// SKIPPED beside a FAILURE or a WARNING is ✗.
func TestTableSkipped(t *testing.T) {
	skip := outcome{Skipped: 1}
	cols := []column{
		{Name: "direct", Results: map[string]outcome{"a": {Passed: 1}, "n": skip, "x": {Skipped: 1, Failed: 1, Failures: []string{"f: no"}}}},
		{Name: "proxy", Results: map[string]outcome{"a": {Passed: 1}, "n": skip, "x": {Skipped: 1, Warnings: []string{"w: warning: should"}}}},
	}
	want := "| scenario | direct | proxy |\n" +
		"|---|:-:|:-:|\n" +
		"| `a` | ✓ | ✓ |\n" +
		"| `n` | –¹ | –¹ |\n" +
		"| `x` | ✗ | ✗ |\n" +
		"| passed | 1 / 2 (1 skipped by the suite) | 1 / 2 (1 skipped by the suite) |\n" +
		"\n–¹ skipped by the suite: it reported every check of the scenario SKIPPED, so the scenario neither passes nor fails and counts apart.\n"
	if got := table("scenario", cols); got != want {
		t.Fatalf("table:\n%s\nwant:\n%s", got, want)
	}
	if regs := compare(cols); len(regs) != 0 {
		t.Errorf("a skip is no regression: %v", regs)
	}
	if m := merge([]map[string]outcome{{"n": skip}, {"n": skip}}); !m["n"].skipped() || len(m["n"].Failures) != 0 {
		t.Errorf("merged skips: %#v, want a skip", m["n"])
	}
}

// TestSplice replaces only what lies between the markers, and refuses a
// document without them.
func TestSplice(t *testing.T) {
	doc := "intro\n" + beginMarker + "old\n" + endMarker + "rest\n"
	got, err := splice([]byte(doc), "new\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "intro\n" + beginMarker + "new\n" + endMarker + "rest\n"; string(got) != want {
		t.Fatalf("splice = %q, want %q", got, want)
	}
	for _, bad := range []string{"none\n", endMarker + beginMarker} {
		if _, err := splice([]byte(bad), "x"); !errors.Is(err, errNoMarkers) {
			t.Errorf("splice(%q) = %v, want errNoMarkers", bad, err)
		}
	}
}

// TestReadmeMarkers: the README has the markers the target writes
// between.
func TestReadmeMarkers(t *testing.T) {
	doc, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := splice(doc, ""); err != nil {
		t.Fatal(err)
	}
}

func TestListeningURL(t *testing.T) {
	u, ok := listeningURL(`{"time":"x","level":"INFO","msg":"listening","addr":"127.0.0.1:4000","mcp":"http://127.0.0.1:4000/mcp","auth":false}`)
	if !ok || u != "http://127.0.0.1:4000/mcp" {
		t.Fatalf("listeningURL = %q, %v", u, ok)
	}
	for _, l := range []string{`{"msg":"recovered"}`, `level=INFO msg=listening`, `{"msg":"listening"}`} {
		if _, ok := listeningURL(l); ok {
			t.Errorf("listeningURL(%q) found a URL", l)
		}
	}
}

// TestMergeRepetitions: a scenario that fails in any repetition fails the
// column, its failures marked with the repetition; one missing from a
// repetition failed in it; one that passes in all passes.
func TestMergeRepetitions(t *testing.T) {
	pass := outcome{Passed: 2}
	fail := outcome{Passed: 1, Failed: 1, Failures: []string{"x: Server did not request elicitation from client"}}
	got := merge([]map[string]outcome{
		{"ping": pass, "tools-call-elicitation": pass, "tools-call-sampling": pass},
		{"ping": pass, "tools-call-elicitation": fail},
		{"ping": pass, "tools-call-elicitation": pass, "tools-call-sampling": pass},
	})
	if !got["ping"].ok() {
		t.Errorf("ping passed every time: %#v", got["ping"])
	}
	if o := got["tools-call-elicitation"]; o.ok() || !reflect.DeepEqual(o.Failures,
		[]string{"repetition 2 of 3: x: Server did not request elicitation from client"}) {
		t.Errorf("tools-call-elicitation failed in repetition 2: %#v", o)
	}
	if o := got["tools-call-sampling"]; o.ok() || !reflect.DeepEqual(o.Failures, []string{"repetition 2 of 3: no result"}) {
		t.Errorf("tools-call-sampling had no result in repetition 2: %#v", o)
	}
	cols := []column{{Name: "direct", Results: map[string]outcome{"ping": pass, "tools-call-elicitation": pass, "tools-call-sampling": pass}},
		{Name: "run --url", Results: got}}
	if regs := compare(cols); len(regs) != 2 {
		t.Errorf("compare found %d regressions, want 2: %v", len(regs), regs)
	}
	if one := merge([]map[string]outcome{{"ping": fail}}); !reflect.DeepEqual(one["ping"].Failures, fail.Failures) {
		t.Errorf("one repetition: failures %q, want them unmarked", one["ping"].Failures)
	}
}
