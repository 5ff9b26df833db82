package tools

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// def is a small definition with public name pub.
func def(pub string) Tool {
	return Tool{PublicName: pub, Name: pub, InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func defs(pubs ...string) []Tool {
	out := make([]Tool, len(pubs))
	for i, p := range pubs {
		out[i] = def(p)
	}
	return out
}

func publicNames(ts []Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.PublicName
	}
	return out
}

// recorder collects changes.
type recorder struct{ changes []Change }

func (r *recorder) add(c Change) { r.changes = append(r.changes, c) }

func newSet(t *testing.T, lim Limits, servers ...string) (*Set, *recorder) {
	t.Helper()
	s := NewSet(lim)
	for _, srv := range servers {
		if err := s.Reserve(srv); err != nil {
			t.Fatal(err)
		}
	}
	r := &recorder{}
	t.Cleanup(s.Subscribe(r.add))
	return s, r
}

func mustReplace(t *testing.T, s *Set, server string, gen uint64, d []Tool) {
	t.Helper()
	if err := s.Replace(server, gen, d); err != nil {
		t.Fatalf("Replace(%s, %d): %v", server, gen, err)
	}
}

func TestReserve(t *testing.T) {
	s, _ := newSet(t, Limits{}, "a")
	if err := s.Reserve("a"); !errors.Is(err, ErrReserved) || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("second Reserve: %v, want ErrReserved naming a", err)
	}
	if err := s.Reserve(""); !errors.Is(err, ErrInvalidName) {
		t.Errorf("Reserve empty: %v, want ErrInvalidName", err)
	}
	if err := s.Replace("b", 1, defs("b__x")); !errors.Is(err, ErrNotReserved) || !strings.Contains(err.Error(), `"b"`) {
		t.Errorf("Replace unreserved: %v, want ErrNotReserved naming b", err)
	}
	s.Release("a")
	if err := s.Replace("a", 1, defs("a__x")); !errors.Is(err, ErrNotReserved) {
		t.Errorf("Replace after Release: %v, want ErrNotReserved", err)
	}
	if err := s.Reserve("a"); err != nil {
		t.Errorf("Reserve after Release: %v", err)
	}
	if _, _, ok := s.Server("nope"); ok {
		t.Error("Server of unreserved reports ok")
	}
}

func TestReplaceListLookup(t *testing.T) {
	s, rec := newSet(t, Limits{}, "b", "a")
	mustReplace(t, s, "b", 1, defs("b__y", "b__x"))
	mustReplace(t, s, "a", 7, defs("a__z"))

	if got, want := publicNames(s.List()), []string{"a__z", "b__x", "b__y"}; !slices.Equal(got, want) {
		t.Errorf("List = %q, want %q", got, want)
	}
	srv, tool, ok := s.Lookup("b__x")
	if !ok || srv != "b" || !cmp.Equal(tool, def("b__x")) {
		t.Errorf("Lookup(b__x) = %q %+v %v", srv, tool, ok)
	}
	if _, _, ok := s.Lookup("b__nope"); ok {
		t.Error("Lookup of unknown name reports ok")
	}
	gen, got, ok := s.Server("b")
	if !ok || gen != 1 || !cmp.Equal(got, defs("b__x", "b__y")) {
		t.Errorf("Server(b) = %d %q %v", gen, publicNames(got), ok)
	}
	want := []Change{
		{Server: "b", Gen: 1, Kind: Replaced, Tools: defs("b__x", "b__y")},
		{Server: "a", Gen: 7, Kind: Replaced, Tools: defs("a__z")},
	}
	if diff := cmp.Diff(want, rec.changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}

	// A new set drops names no longer offered.
	mustReplace(t, s, "b", 2, defs("b__w"))
	if got := publicNames(s.List()); !slices.Equal(got, []string{"a__z", "b__w"}) {
		t.Errorf("List after swap = %q", got)
	}
	if _, _, ok := s.Lookup("b__x"); ok {
		t.Error("b__x still registered after swap")
	}
}

func TestReplaceUnchangedIsSilent(t *testing.T) {
	s, rec := newSet(t, Limits{}, "s")
	mustReplace(t, s, "s", 1, defs("s__a", "s__b"))
	mustReplace(t, s, "s", 2, defs("s__a", "s__b")) // equal, fresh copies
	mustReplace(t, s, "s", 3, defs("s__b", "s__a")) // equal, other order
	if len(rec.changes) != 1 {
		t.Fatalf("got %d changes, want 1: %+v", len(rec.changes), rec.changes)
	}
	if gen, _, _ := s.Server("s"); gen != 3 {
		t.Errorf("gen = %d, want 3 (updated silently)", gen)
	}

	// Any field that differs is a change.
	base := def("s__a")
	base.Annotations = &mcp.ToolAnnotations{OpenWorldHint: ptr(true), DestructiveHint: ptr(true)}
	ann := func(f func(a *mcp.ToolAnnotations)) func(*Tool) {
		return func(d *Tool) { d.Annotations = cloneAnnotations(d.Annotations); f(d.Annotations) }
	}
	variants := map[string]func(*Tool){
		"Name":                func(d *Tool) { d.Name = "other" },
		"Title":               func(d *Tool) { d.Title = "T" },
		"Description":         func(d *Tool) { d.Description = "D" },
		"InputSchema":         func(d *Tool) { d.InputSchema = json.RawMessage(`{"type":"object","x":1}`) },
		"OutputSchema":        func(d *Tool) { d.OutputSchema = json.RawMessage(`{}`) },
		"Annotations":         func(d *Tool) { d.Annotations = nil },
		"ReadOnlyHint":        ann(func(a *mcp.ToolAnnotations) { a.ReadOnlyHint = true }),
		"IdempotentHint":      ann(func(a *mcp.ToolAnnotations) { a.IdempotentHint = true }),
		"OpenWorldHint value": ann(func(a *mcp.ToolAnnotations) { *a.OpenWorldHint = false }),
		"DestructiveHint nil": ann(func(a *mcp.ToolAnnotations) { a.DestructiveHint = nil }),
		"annotation Title":    ann(func(a *mcp.ToolAnnotations) { a.Title = "t" }),
	}
	s2, rec2 := newSet(t, Limits{}, "s")
	gen := uint64(0)
	for field, mutate := range variants {
		gen++
		mustReplace(t, s2, "s", gen, []Tool{base})
		d := base
		mutate(&d)
		n := len(rec2.changes)
		mustReplace(t, s2, "s", gen, []Tool{d})
		if len(rec2.changes) != n+1 {
			t.Errorf("changing %s emitted %d changes, want 1", field, len(rec2.changes)-n)
		}
	}
}

func TestReplaceEmpty(t *testing.T) {
	s, rec := newSet(t, Limits{}, "s")
	mustReplace(t, s, "s", 1, nil) // nothing registered before: no change
	if len(rec.changes) != 0 {
		t.Fatalf("changes = %+v", rec.changes)
	}
	mustReplace(t, s, "s", 2, defs("s__a"))
	mustReplace(t, s, "s", 3, []Tool{})
	if len(rec.changes) != 2 || rec.changes[1].Kind != Replaced || len(rec.changes[1].Tools) != 0 {
		t.Errorf("changes = %+v, want a Replaced with no tools last", rec.changes)
	}
	if len(s.List()) != 0 {
		t.Errorf("List = %+v", s.List())
	}
}

func TestReplaceConflictLeavesEverythingIntact(t *testing.T) {
	s, rec := newSet(t, Limits{}, "a", "b")
	mustReplace(t, s, "a", 1, defs("shared", "a__1"))
	mustReplace(t, s, "b", 1, defs("b__1"))
	before := s.List()
	n := len(rec.changes)

	err := s.Replace("b", 2, defs("b__2", "shared"))
	var ce *ConflictError
	if !errors.Is(err, ErrConflict) || !errors.As(err, &ce) || ce.Name != "shared" || ce.Server != "b" || ce.Holder != "a" {
		t.Fatalf("err = %v (%+v), want ConflictError{shared, b, a}", err, ce)
	}
	for _, w := range []string{`"a"`, `"b"`, `"shared"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message %q lacks %s", err, w)
		}
	}
	if diff := cmp.Diff(before, s.List()); diff != "" {
		t.Errorf("registrations changed (-before +after):\n%s", diff)
	}
	if gen, _, _ := s.Server("b"); gen != 1 {
		t.Errorf("b gen = %d after a failed Replace, want 1", gen)
	}
	if len(rec.changes) != n {
		t.Errorf("a failed Replace emitted %+v", rec.changes[n:])
	}

	// Once a lets go of the name, b may take it; its own old names never
	// conflict with its new set.
	mustReplace(t, s, "a", 2, defs("a__1"))
	mustReplace(t, s, "b", 3, defs("b__1", "shared"))
	if srv, _, _ := s.Lookup("shared"); srv != "b" {
		t.Errorf("shared held by %q, want b", srv)
	}
}

func TestReplaceLimitsAndNames(t *testing.T) {
	s, rec := newSet(t, Limits{MaxTools: 2, MaxSchemaBytes: 20}, "s")
	mustReplace(t, s, "s", 1, defs("s__a"))
	before := s.List()

	fat := def("s__fat")
	fat.OutputSchema = json.RawMessage(`{"description":"far too long"}`)
	for _, tc := range []struct {
		name string
		defs []Tool
		is   error
	}{
		{"too many", defs("s__1", "s__2", "s__3"), ErrLimit},
		{"schema too big", []Tool{fat}, ErrLimit},
		{"invalid public name", defs("s__ok", "s.bad"), ErrInvalidName},
		{"empty public name", defs(""), ErrInvalidName},
		{"duplicate public name", defs("s__x", "s__x"), ErrInvalidName},
	} {
		err := s.Replace("s", 2, tc.defs)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), `"s"`) {
			t.Errorf("%s: err = %v, want %v naming the server", tc.name, err, tc.is)
		}
	}
	var le *LimitError
	if err := s.Replace("s", 2, []Tool{fat}); !errors.As(err, &le) || le.Field != "outputSchema" || le.Max != 20 {
		t.Errorf("schema err = %v", err)
	}
	if diff := cmp.Diff(before, s.List()); diff != "" || len(rec.changes) != 1 {
		t.Errorf("failed Replaces changed state (%s) or emitted %d changes", diff, len(rec.changes)-1)
	}
	if gen, _, _ := s.Server("s"); gen != 1 {
		t.Errorf("gen = %d, want 1", gen)
	}
}

func TestRemoveAndRelease(t *testing.T) {
	s, rec := newSet(t, Limits{}, "a", "b")
	s.Remove("a") // no tools: nothing
	s.Remove("unknown")
	s.Release("unknown")
	if len(rec.changes) != 0 {
		t.Fatalf("changes = %+v", rec.changes)
	}
	mustReplace(t, s, "a", 4, defs("a__x"))
	mustReplace(t, s, "a", 5, defs("a__x")) // silent gen update
	mustReplace(t, s, "b", 1, defs("b__x"))
	s.Remove("a")
	s.Remove("a") // already empty: nothing
	if got := publicNames(s.List()); !slices.Equal(got, []string{"b__x"}) {
		t.Errorf("List = %q", got)
	}
	if err := s.Reserve("a"); !errors.Is(err, ErrReserved) {
		t.Errorf("Remove dropped the reservation: %v", err)
	}
	if gen, d, ok := s.Server("a"); !ok || gen != 5 || len(d) != 0 {
		t.Errorf("Server(a) = %d %v %v", gen, d, ok)
	}
	s.Release("b")
	if len(s.List()) != 0 {
		t.Errorf("List = %+v", s.List())
	}
	want := []Change{
		{Server: "a", Gen: 4, Kind: Replaced, Tools: defs("a__x")},
		{Server: "b", Gen: 1, Kind: Replaced, Tools: defs("b__x")},
		{Server: "a", Gen: 5, Kind: Removed},
		{Server: "b", Gen: 1, Kind: Removed},
	}
	if diff := cmp.Diff(want, rec.changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	// The released name is free again, and so are its public names.
	if err := s.Reserve("b"); err != nil {
		t.Fatal(err)
	}
	mustReplace(t, s, "a", 6, defs("b__x"))
}

func TestSetCopiesDefinitions(t *testing.T) {
	s, _ := newSet(t, Limits{}, "s")
	s.Subscribe(func(c Change) { c.Tools[0].Description = "scribbled by a subscriber" })
	in := defs("s__a")
	in[0].Annotations = &mcp.ToolAnnotations{OpenWorldHint: ptr(true)}
	mustReplace(t, s, "s", 1, in)
	in[0].InputSchema[2] = 'X'
	*in[0].Annotations.OpenWorldHint = false
	in[0].Description = "changed"

	_, got, _ := s.Lookup("s__a")
	if string(got.InputSchema) != `{"type":"object"}` || !*got.Annotations.OpenWorldHint || got.Description != "" {
		t.Errorf("Set shares memory with the caller: %+v", got)
	}
	l := s.List()
	l[0].Description = "scribbled"
	_, d, _ := s.Server("s")
	d[0].Name = "scribbled"
	if _, got, _ := s.Lookup("s__a"); got.Description != "" || got.Name != "s__a" {
		t.Errorf("returned slices alias the Set: %+v", got)
	}
}

func TestChangeKindString(t *testing.T) {
	for k, want := range map[ChangeKind]string{Replaced: "replaced", Removed: "removed", 0: "ChangeKind(0)"} {
		if k.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(k), k.String(), want)
		}
	}
}
