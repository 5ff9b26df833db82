package tools

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"pgregory.net/rapid"
)

// catPrompts builds a server's prompt registrations from original names,
// as a supervisor does (BuildPrompts with the tools rule).
func catPrompts(t testing.TB, server string, names ...string) []Prompt {
	t.Helper()
	list := make([]*mcp.Prompt, len(names))
	for i, n := range names {
		list[i] = &mcp.Prompt{Name: n, Description: "prompt " + n}
	}
	ps, err := BuildPrompts(server, list, nil, Limits{})
	if err != nil {
		t.Fatalf("BuildPrompts(%s, %q): %v", server, names, err)
	}
	return ps
}

// catPublic is a prompt registered under public name pub (built by hand,
// as a host's own namer could produce it).
func catPublic(server, pub string) Prompt {
	return Prompt{Server: server, PublicName: pub, Name: pub, Def: &mcp.Prompt{Name: pub}}
}

func catResources(t testing.TB, server string, uris ...string) []Resource {
	t.Helper()
	list := make([]*mcp.Resource, len(uris))
	for i, u := range uris {
		list[i] = &mcp.Resource{URI: u, Name: u}
	}
	rs, refused, err := BuildResources(server, list, Limits{})
	if err != nil || refused != nil {
		t.Fatalf("BuildResources(%s, %q): %v %v", server, uris, refused, err)
	}
	return rs
}

func catTemplates(t testing.TB, server string, tmpls ...string) []Template {
	t.Helper()
	list := make([]*mcp.ResourceTemplate, len(tmpls))
	for i, u := range tmpls {
		list[i] = &mcp.ResourceTemplate{URITemplate: u, Name: u}
	}
	ts, refused, err := BuildTemplates(server, list, Limits{})
	if err != nil || refused != nil {
		t.Fatalf("BuildTemplates(%s, %q): %v %v", server, tmpls, refused, err)
	}
	return ts
}

// catKeys renders a list's keys.
func catKeys[T item](list []T) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = key(v)
	}
	return out
}

// catEvent renders a change as "server/list/kind/gen: keys".
func catEvent(c CatalogChange) string {
	var keys []string
	switch c.List {
	case KindPrompts:
		keys = catKeys(c.Prompts)
	case KindResources:
		keys = catKeys(c.Resources)
	case KindTemplates:
		keys = catKeys(c.Templates)
	}
	return fmt.Sprintf("%s/%s/%s/%d: %s", c.Server, c.List, c.Kind, c.Gen, strings.Join(keys, ","))
}

// catFeed records the rendered changes of a Catalog.
type catFeed struct {
	mu     sync.Mutex
	events []string
}

func newCatFeed(t testing.TB, c *Catalog) *catFeed {
	f := &catFeed{}
	t.Cleanup(c.Subscribe(func(ch CatalogChange) {
		f.mu.Lock()
		f.events = append(f.events, catEvent(ch))
		f.mu.Unlock()
	}))
	return f
}

// take returns the events since the last take.
func (f *catFeed) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.events
	f.events = nil
	return out
}

func wantEvents(t *testing.T, f *catFeed, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, f.take(), cmpEmpty); diff != "" {
		t.Fatalf("changes (-want +got):\n%s", diff)
	}
}

var cmpEmpty = cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })

func TestBuildPrompts(t *testing.T) {
	names := []string{"summarize", "a.b", "Zeta", "review"}
	list := make([]*mcp.Prompt, len(names))
	for i, n := range names {
		list[i] = &mcp.Prompt{Name: n}
	}
	got, err := BuildPrompts("srv", list, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// Public names are the tools rule's, sorted by public name, and each
	// keeps its original name and definition.
	rule := PublicNames("srv", names)
	want := map[string]string{} // public → original
	for i, n := range names {
		want[rule[i]] = n
	}
	var pubs []string
	for _, p := range got {
		pubs = append(pubs, p.PublicName)
		if want[p.PublicName] != p.Name || p.Def == nil || p.Def.Name != p.Name || p.Server != "srv" {
			t.Errorf("prompt %+v: want original %q, a definition with that name and server srv", p, want[p.PublicName])
		}
	}
	if !slices.IsSorted(pubs) {
		t.Errorf("public names not sorted: %q", pubs)
	}
	if !slices.Contains(pubs, "srv__summarize") || !slices.Contains(pubs, "srv__a_b_"+hash8("srv\x00a.b")) {
		t.Errorf("public names %q do not follow the tools rule", pubs)
	}
	// Deterministic and independent of list order.
	rev := slices.Clone(list)
	slices.Reverse(rev)
	again, err := BuildPrompts("srv", rev, nil, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(catKeys(again), pubs) {
		t.Errorf("reversed input gives %q, want %q", catKeys(again), pubs)
	}
	// Empty is fine.
	if ps, err := BuildPrompts("srv", nil, nil, Limits{}); err != nil || len(ps) != 0 {
		t.Errorf("BuildPrompts(nil) = %v, %v", ps, err)
	}
}

func TestBuildPromptsRejects(t *testing.T) {
	p := func(n string) *mcp.Prompt { return &mcp.Prompt{Name: n} }
	for _, tc := range []struct {
		name  string
		list  []*mcp.Prompt
		namer Namer
		want  error
	}{
		{"nil prompt", []*mcp.Prompt{p("a"), nil}, nil, ErrInvalidName},
		{"listed twice", []*mcp.Prompt{p("a"), p("b"), p("a")}, nil, ErrInvalidName},
		{"namer returns too few", []*mcp.Prompt{p("a"), p("b")},
			func(string, []string) []string { return []string{"x"} }, ErrInvalidName},
		{"namer returns an invalid name", []*mcp.Prompt{p("a")},
			func(string, []string) []string { return []string{"not valid"} }, ErrInvalidName},
		{"namer returns one name twice", []*mcp.Prompt{p("a"), p("b")},
			func(string, []string) []string { return []string{"same", "same"} }, ErrInvalidName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := BuildPrompts("srv", tc.list, tc.namer, Limits{})
			if !errors.Is(err, tc.want) || got != nil {
				t.Fatalf("BuildPrompts = %v, %v; want %v", got, err, tc.want)
			}
			var ne *NameError
			if !errors.As(err, &ne) || ne.Server != "srv" {
				t.Fatalf("error %v does not name the server", err)
			}
		})
	}
}

func TestBuildCatalogLimits(t *testing.T) {
	lim := Limits{MaxPrompts: 2, MaxResources: 1, MaxTemplates: 3}
	three := []*mcp.Prompt{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	if _, err := BuildPrompts("srv", three[:2], nil, lim); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	_, err := BuildPrompts("srv", three, nil, lim)
	wantLimit(t, err, LimitMaxPrompts, 2, 3)

	res := []*mcp.Resource{{URI: "x://1"}, {URI: "x://2"}}
	_, _, err = BuildResources("srv", res, lim)
	wantLimit(t, err, LimitMaxResources, 1, 2)

	tmpl := []*mcp.ResourceTemplate{{URITemplate: "a/{x}"}, {URITemplate: "b/{x}"}, {URITemplate: "c/{x}"}, {URITemplate: "d/{x}"}}
	if _, _, err := BuildTemplates("srv", tmpl[:3], lim); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	_, _, err = BuildTemplates("srv", tmpl, lim)
	wantLimit(t, err, LimitMaxTemplates, 3, 4)

	// The defaults apply to zero Limits.
	d := DefaultLimits()
	many := make([]*mcp.Resource, d.MaxResources+1)
	for i := range many {
		many[i] = &mcp.Resource{URI: fmt.Sprintf("x://%d", i)}
	}
	_, _, err = BuildResources("srv", many, Limits{})
	wantLimit(t, err, LimitMaxResources, d.MaxResources, d.MaxResources+1)
}

func wantLimit(t *testing.T, err error, limit string, max, got int) {
	t.Helper()
	var le *LimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrLimit) {
		t.Fatalf("err = %v, want a *LimitError", err)
	}
	if le.Server != "srv" || le.Limit != limit || le.Max != max || le.Got != got {
		t.Fatalf("LimitError %+v, want server srv, %s, max %d, got %d", le, limit, max, got)
	}
	if !strings.Contains(err.Error(), `"srv"`) {
		t.Fatalf("%q does not name the server", err)
	}
}

func TestBuildResourcesAndTemplates(t *testing.T) {
	rs, _, err := BuildResources("srv", []*mcp.Resource{{URI: "z://c"}, {URI: "a://b"}, {URI: "m://x"}}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := catKeys(rs); !slices.Equal(got, []string{"a://b", "m://x", "z://c"}) {
		t.Errorf("resources %q, want sorted by URI", got)
	}
	for _, r := range rs {
		if r.Server != "srv" || r.Def == nil || r.Def.URI != r.URI {
			t.Errorf("resource %+v", r)
		}
	}
	ts, _, err := BuildTemplates("srv", []*mcp.ResourceTemplate{{URITemplate: "z://{x}"}, {URITemplate: "a://{y}"}}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := catKeys(ts); !slices.Equal(got, []string{"a://{y}", "z://{x}"}) {
		t.Errorf("templates %q, want sorted", got)
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"nil resource", third(BuildResources("srv", []*mcp.Resource{{URI: "a://"}, nil}, Limits{}))},
		{"empty URI", third(BuildResources("srv", []*mcp.Resource{{URI: ""}}, Limits{}))},
		{"URI twice", third(BuildResources("srv", []*mcp.Resource{{URI: "a://"}, {URI: "b://"}, {URI: "a://", Name: "other"}}, Limits{}))},
		{"nil template", third(BuildTemplates("srv", []*mcp.ResourceTemplate{nil}, Limits{}))},
		{"empty template", third(BuildTemplates("srv", []*mcp.ResourceTemplate{{URITemplate: ""}}, Limits{}))},
		{"template twice", third(BuildTemplates("srv", []*mcp.ResourceTemplate{{URITemplate: "a/{x}"}, {URITemplate: "a/{x}"}}, Limits{}))},
	} {
		var ne *NameError
		if !errors.Is(tc.err, ErrInvalidName) || !errors.As(tc.err, &ne) || ne.Server != "srv" {
			t.Errorf("%s: err = %v, want a *NameError naming srv", tc.name, tc.err)
		}
	}
}

func third[A, B any](_ A, _ B, err error) error { return err }

// Each Replace that changes a kind emits one change, in apply order; an
// unchanged list (also in another order) emits nothing but moves gen.
func TestCatalogReplaceEmitsOncePerSwap(t *testing.T) {
	c := NewCatalog(Limits{})
	f := newCatFeed(t, c)
	must(t, c.ReplacePrompts("srv", 1, catPrompts(t, "srv", "b", "a")))
	must(t, c.ReplaceResources("srv", 1, catResources(t, "srv", "x://2", "x://1")))
	must(t, c.ReplaceTemplates("srv", 1, catTemplates(t, "srv", "x://{id}")))
	wantEvents(t, f,
		"srv/prompts/replaced/1: srv__a,srv__b",
		"srv/resources/replaced/1: x://1,x://2",
		"srv/resource templates/replaced/1: x://{id}")

	// Unchanged, given in another order, by a later generation.
	ps := catPrompts(t, "srv", "a", "b")
	slices.Reverse(ps)
	rs := catResources(t, "srv", "x://1", "x://2")
	slices.Reverse(rs)
	must(t, c.ReplacePrompts("srv", 2, ps))
	must(t, c.ReplaceResources("srv", 2, rs))
	must(t, c.ReplaceTemplates("srv", 2, catTemplates(t, "srv", "x://{id}")))
	wantEvents(t, f)
	if gen, _, _, _, ok := c.Server("srv"); !ok || gen != 2 {
		t.Fatalf("Server gen = %d (ok %v), want 2: an unchanged replace still moves gen", gen, ok)
	}

	// A changed definition under the same key is a change.
	changed := []*mcp.Resource{{URI: "x://1", Name: "x://1"}, {URI: "x://2", Name: "x://2", Description: "new"}}
	rs2, _, err := BuildResources("srv", changed, Limits{})
	must(t, err)
	must(t, c.ReplaceResources("srv", 3, rs2))
	must(t, c.ReplacePrompts("srv", 3, catPrompts(t, "srv", "a")))
	must(t, c.ReplaceTemplates("srv", 3, nil))
	wantEvents(t, f,
		"srv/resources/replaced/3: x://1,x://2",
		"srv/prompts/replaced/3: srv__a",
		"srv/resource templates/replaced/3: ")
	// Empty to empty is unchanged.
	must(t, c.ReplaceTemplates("srv", 4, []Template{}))
	wantEvents(t, f)

	// The change carries a copy: the catalog's state is not the caller's.
	ps = catPrompts(t, "srv", "a", "c")
	must(t, c.ReplacePrompts("srv", 5, ps))
	ps[0].PublicName = "mutated"
	if _, ok := c.Prompt("srv__a"); !ok {
		t.Fatal("mutating the caller's slice changed the catalog")
	}
	wantEvents(t, f, "srv/prompts/replaced/5: srv__a,srv__c")
}

// A Replace that fails changes nothing and emits nothing.
func TestCatalogReplaceRejects(t *testing.T) {
	c := NewCatalog(Limits{MaxPrompts: 2, MaxResources: 2, MaxTemplates: 2})
	f := newCatFeed(t, c)
	three := func(mk func(string) Prompt) []Prompt { return []Prompt{mk("srv__b"), mk("srv__c"), mk("srv__d")} }
	must(t, c.ReplacePrompts("srv", 1, []Prompt{catPublic("srv", "srv__a")}))
	f.take()
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"prompts over the limit", c.ReplacePrompts("srv", 2, three(func(p string) Prompt { return catPublic("srv", p) })), ErrLimit},
		{"prompt public name twice", c.ReplacePrompts("srv", 2, []Prompt{catPublic("srv", "srv__b"), catPublic("srv", "srv__b")}), ErrInvalidName},
		{"resources over the limit", c.ReplaceResources("srv", 2, []Resource{{URI: "a://"}, {URI: "b://"}, {URI: "c://"}}), ErrLimit},
		{"resource twice", c.ReplaceResources("srv", 2, []Resource{{URI: "a://"}, {URI: "a://"}}), ErrInvalidName},
		{"templates over the limit", c.ReplaceTemplates("srv", 2, []Template{{URITemplate: "a"}, {URITemplate: "b"}, {URITemplate: "c"}}), ErrLimit},
		{"template twice", c.ReplaceTemplates("srv", 2, []Template{{URITemplate: "a"}, {URITemplate: "a"}}), ErrInvalidName},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, tc.err, tc.want)
		}
	}
	wantEvents(t, f)
	gen, ps, rs, ts, ok := c.Server("srv")
	if !ok || gen != 1 || !slices.Equal(catKeys(ps), []string{"srv__a"}) || len(rs) != 0 || len(ts) != 0 {
		t.Fatalf("after failed replaces: gen %d %q %q %q", gen, catKeys(ps), catKeys(rs), catKeys(ts))
	}
	// A limit error names the server.
	var le *LimitError
	if err := c.ReplaceResources("other", 1, []Resource{{URI: "a://"}, {URI: "b://"}, {URI: "c://"}}); !errors.As(err, &le) || le.Server != "other" || le.Limit != LimitMaxResources {
		t.Fatalf("limit error %v", err)
	}
	if _, _, _, _, ok := c.Server("other"); ok {
		t.Fatal("a server whose only Replace failed is registered")
	}
}

// Two servers want one public prompt name: the second's Replace fails
// with ErrConflict naming the holder, and both keep what they had.
func TestCatalogPromptConflictLeavesEverythingIntact(t *testing.T) {
	c := NewCatalog(Limits{})
	must(t, c.ReplacePrompts("a", 1, []Prompt{catPublic("a", "shared"), catPublic("a", "a__x")}))
	must(t, c.ReplacePrompts("b", 1, []Prompt{catPublic("b", "b__y")}))
	must(t, c.ReplaceResources("b", 1, catResources(t, "b", "r://1")))
	f := newCatFeed(t, c)

	err := c.ReplacePrompts("b", 2, []Prompt{catPublic("b", "b__y"), catPublic("b", "shared"), catPublic("b", "b__z")})
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) {
		t.Fatalf("err = %v, want a *ConflictError", err)
	}
	if ce.Name != "shared" || ce.Server != "b" || ce.Holder != "a" {
		t.Fatalf("ConflictError %+v, want name shared, server b, holder a", ce)
	}
	if !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("%q does not name the holder", err)
	}
	wantEvents(t, f)
	if p, ok := c.Prompt("shared"); !ok || p.Server != "a" {
		t.Fatalf("shared = %+v %v, want a's", p, ok)
	}
	if p, ok := c.Prompt("b__y"); !ok || p.Server != "b" {
		t.Fatalf("b__y = %+v %v, want b's", p, ok)
	}
	if _, ok := c.Prompt("b__z"); ok {
		t.Fatal("b__z of the failed replace is registered")
	}
	if got := catKeys(c.Prompts()); !slices.Equal(got, []string{"a__x", "b__y", "shared"}) {
		t.Fatalf("Prompts = %q", got)
	}
	if got := c.ResourceOwners("r://1"); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("b's resources changed: owners %q", got)
	}

	// Once a gives the name up, b can take it.
	must(t, c.ReplacePrompts("a", 2, []Prompt{catPublic("a", "a__x")}))
	must(t, c.ReplacePrompts("b", 3, []Prompt{catPublic("b", "shared")}))
	if p, _ := c.Prompt("shared"); p.Server != "b" {
		t.Fatalf("shared held by %q after the hand-over, want b", p.Server)
	}
	wantEvents(t, f, "a/prompts/replaced/2: a__x", "b/prompts/replaced/3: shared")
	if _, ok := c.Prompt("b__y"); ok {
		t.Fatal("b__y outlived b's replace")
	}
}

// A Replace that fails with ErrConflict changes nothing: not the server's
// generation, and it registers no server that never had anything (as a
// Set's conflicting Replace).
func TestCatalogConflictDoesNotMoveGen(t *testing.T) {
	c := NewCatalog(Limits{})
	must(t, c.ReplacePrompts("a", 1, []Prompt{catPublic("a", "shared")}))
	must(t, c.ReplacePrompts("b", 1, []Prompt{catPublic("b", "b__y")}))
	if err := c.ReplacePrompts("b", 7, []Prompt{catPublic("b", "shared")}); !errors.Is(err, ErrConflict) {
		t.Fatal(err)
	}
	if gen, _, _, _, _ := c.Server("b"); gen != 1 {
		t.Errorf("b's gen = %d after a failed replace, want 1", gen)
	}
	if err := c.ReplacePrompts("c", 3, []Prompt{catPublic("c", "shared")}); !errors.Is(err, ErrConflict) {
		t.Fatal(err)
	}
	if _, _, _, _, ok := c.Server("c"); ok {
		t.Error("c is registered although its only Replace failed")
	}
}

func TestCatalogRemove(t *testing.T) {
	c := NewCatalog(Limits{})
	must(t, c.ReplacePrompts("a", 1, catPrompts(t, "a", "p")))
	must(t, c.ReplaceResources("a", 1, catResources(t, "a", "r://1")))
	must(t, c.ReplaceTemplates("a", 1, nil))
	must(t, c.ReplaceResources("b", 1, catResources(t, "b", "r://1")))
	must(t, c.ReplacePrompts("a", 2, catPrompts(t, "a", "p"))) // unchanged: gen 2
	f := newCatFeed(t, c)

	// One Removed per non-empty kind, carrying the last gen; templates
	// were empty: nothing to remove there.
	c.RemoveCatalog("a")
	wantEvents(t, f, "a/prompts/removed/2: ", "a/resources/removed/2: ")
	if _, _, _, _, ok := c.Server("a"); ok {
		t.Fatal("a still registered")
	}
	if _, ok := c.Prompt("a__p"); ok {
		t.Fatal("a's prompt still found")
	}
	if got := c.ResourceOwners("r://1"); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("owners of r://1 = %q, want [b]", got)
	}
	// Removing again, or a server never seen, emits nothing.
	c.RemoveCatalog("a")
	c.RemoveCatalog("nobody")
	wantEvents(t, f)
	// A server with only empty lists is removed silently.
	must(t, c.ReplacePrompts("e", 1, nil))
	c.RemoveCatalog("e")
	wantEvents(t, f)
	// Removed names are free again, and a re-registration is a change.
	must(t, c.ReplacePrompts("a", 3, catPrompts(t, "a", "p")))
	wantEvents(t, f, "a/prompts/replaced/3: a__p")
	// Removed changes carry no lists.
	var got []CatalogChange
	unsub := c.Subscribe(func(ch CatalogChange) { got = append(got, ch) })
	c.RemoveCatalog("a")
	unsub()
	if len(got) != 1 || got[0].Kind != Removed || got[0].Prompts != nil || got[0].Resources != nil || got[0].Templates != nil {
		t.Fatalf("Removed change %+v", got)
	}
}

func TestCatalogLookups(t *testing.T) {
	c := NewCatalog(Limits{})
	must(t, c.ReplacePrompts("b", 1, catPrompts(t, "b", "z", "a")))
	must(t, c.ReplacePrompts("a", 4, catPrompts(t, "a", "m")))
	must(t, c.ReplaceResources("b", 1, catResources(t, "b", "r://2", "r://shared")))
	must(t, c.ReplaceResources("a", 4, catResources(t, "a", "r://shared", "r://1")))
	must(t, c.ReplaceTemplates("b", 1, catTemplates(t, "b", "t://{x}", "s://{y}")))
	must(t, c.ReplaceTemplates("a", 4, catTemplates(t, "a", "t://{x}")))

	p, ok := c.Prompt("b__z")
	if !ok || p.Server != "b" || p.Name != "z" || p.Def.Name != "z" {
		t.Fatalf("Prompt(b__z) = %+v %v", p, ok)
	}
	if _, ok := c.Prompt("z"); ok {
		t.Fatal("Prompt finds an original name")
	}
	if got := catKeys(c.Prompts()); !slices.Equal(got, []string{"a__m", "b__a", "b__z"}) {
		t.Fatalf("Prompts = %q", got)
	}
	res := c.Resources()
	var rk []string
	for _, r := range res {
		rk = append(rk, r.URI+"@"+r.Server)
	}
	if !slices.Equal(rk, []string{"r://1@a", "r://2@b", "r://shared@a", "r://shared@b"}) {
		t.Fatalf("Resources = %q, want by URI then server", rk)
	}
	var tk []string
	for _, tm := range c.Templates() {
		tk = append(tk, tm.URITemplate+"@"+tm.Server)
	}
	if !slices.Equal(tk, []string{"s://{y}@b", "t://{x}@a", "t://{x}@b"}) {
		t.Fatalf("Templates = %q, want by template then server", tk)
	}
	if got := c.ResourceOwners("r://shared"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("ResourceOwners(shared) = %q", got)
	}
	if got := c.ResourceOwners("r://none"); len(got) != 0 {
		t.Fatalf("ResourceOwners(none) = %q", got)
	}
	gen, ps, rs, ts, ok := c.Server("a")
	if !ok || gen != 4 || !slices.Equal(catKeys(ps), []string{"a__m"}) ||
		!slices.Equal(catKeys(rs), []string{"r://1", "r://shared"}) || !slices.Equal(catKeys(ts), []string{"t://{x}"}) {
		t.Fatalf("Server(a) = %d %q %q %q %v", gen, catKeys(ps), catKeys(rs), catKeys(ts), ok)
	}
	// What the lookups return are copies.
	ps[0].PublicName = "x"
	all := c.Prompts()
	all[0].PublicName = "y"
	if _, ok := c.Prompt("a__m"); !ok {
		t.Fatal("mutating a returned slice changed the catalog")
	}
	if _, _, _, _, ok := c.Server("nobody"); ok {
		t.Fatal("Server(nobody) ok")
	}
	var _ CatalogLookuper = c
}

// Subscribers are called outside the lock: they may read the Catalog and
// even replace from inside fn; a change they cause is delivered after fn
// returns, in order.
func TestCatalogSubscriberReenters(t *testing.T) {
	c := NewCatalog(Limits{})
	var seen []string
	var prompts [][]string
	c.Subscribe(func(ch CatalogChange) {
		seen = append(seen, catEvent(ch))
		prompts = append(prompts, catKeys(c.Prompts()))
		_, _, _, _, _ = c.Server(ch.Server)
		_ = c.ResourceOwners("r://1")
		_ = c.Templates()
		_ = c.Resources()
		if ch.Server == "a" && ch.List == KindPrompts {
			// Mirror a's prompts' resources under another server.
			if err := c.ReplaceResources("mirror", ch.Gen, []Resource{{URI: "r://1", Def: &mcp.Resource{URI: "r://1"}}}); err != nil {
				t.Error(err)
			}
			if len(seen) != 1 {
				t.Error("a reentrant change was delivered before fn returned")
			}
		}
	})
	ps := catPrompts(t, "a", "p")
	done := make(chan error, 1)
	go func() { done <- c.ReplacePrompts("a", 1, ps) }()
	if err := <-done; err != nil { // a deadlock would hang here (and the test time out)
		t.Fatal(err)
	}
	want := []string{"a/prompts/replaced/1: a__p", "mirror/resources/replaced/1: r://1"}
	if !slices.Equal(seen, want) {
		t.Fatalf("seen %q, want %q", seen, want)
	}
	if !slices.Equal(prompts[0], []string{"a__p"}) {
		t.Fatalf("the subscriber read %q", prompts[0])
	}
}

// Many supervisors (one writer per server) replace every kind, re-sync
// unchanged, remove and fight over a shared public prompt name, while
// readers look up. Afterwards the feed, replayed, equals the catalog;
// each server saw exactly one change per swap its writer observed, in
// its gen order; no public name is ever held twice.
func TestCatalogConcurrentUse(t *testing.T) {
	const (
		writers = 6
		steps   = 250
		readers = 3
	)
	c := NewCatalog(Limits{})
	type kindState map[ListKind][]string
	var inside atomic.Int32
	var mu sync.Mutex // guards model, events, lastGen, feedErr (the feed is serialized; -race checks it)
	model := map[string]kindState{}
	events := map[string]int{}
	lastGen := map[string]uint64{}
	var feedErr []string
	c.Subscribe(func(ch CatalogChange) {
		if !inside.CompareAndSwap(0, 1) {
			mu.Lock()
			feedErr = append(feedErr, "concurrent callback")
			mu.Unlock()
			return
		}
		defer inside.Store(0)
		mu.Lock()
		defer mu.Unlock()
		if ch.Gen < lastGen[ch.Server] {
			feedErr = append(feedErr, fmt.Sprintf("%s: gen %d after %d", ch.Server, ch.Gen, lastGen[ch.Server]))
		}
		lastGen[ch.Server] = ch.Gen
		events[ch.Server]++
		if model[ch.Server] == nil {
			model[ch.Server] = kindState{}
		}
		switch {
		case ch.Kind == Removed:
			delete(model[ch.Server], ch.List)
		case ch.List == KindPrompts:
			model[ch.Server][ch.List] = catKeys(ch.Prompts)
		case ch.List == KindResources:
			model[ch.Server][ch.List] = catKeys(ch.Resources)
		default:
			model[ch.Server][ch.List] = catKeys(ch.Templates)
		}
	})

	expected := make([]int, writers)
	var wg sync.WaitGroup
	for w := range writers {
		server := fmt.Sprintf("s%d", w)
		promptVariants := [][]Prompt{
			{catPublic(server, server+"__a")},
			{catPublic(server, server+"__a"), catPublic(server, "shared")},
			{},
		}
		resVariants := [][]Resource{catResources(t, server, "r://shared"), catResources(t, server, "r://"+server, "r://shared"), nil}
		tmplVariants := [][]Template{catTemplates(t, server, "t://{x}"), nil}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			cur := map[ListKind]int{} // lengths of what is registered per kind
			curKeys := map[ListKind][]string{}
			for step := range steps {
				gen := uint64(step + 1)
				var err error
				var kind ListKind
				var keys []string
				switch rng.IntN(4) {
				case 0:
					kind = KindPrompts
					v := promptVariants[rng.IntN(len(promptVariants))]
					keys = catKeys(v)
					err = c.ReplacePrompts(server, gen, v)
				case 1:
					kind = KindResources
					v := resVariants[rng.IntN(len(resVariants))]
					keys = catKeys(v)
					err = c.ReplaceResources(server, gen, v)
				case 2:
					kind = KindTemplates
					v := tmplVariants[rng.IntN(len(tmplVariants))]
					keys = catKeys(v)
					err = c.ReplaceTemplates(server, gen, v)
				default:
					c.RemoveCatalog(server)
					for _, n := range cur {
						if n > 0 {
							expected[w]++
						}
					}
					clear(cur)
					clear(curKeys)
					continue
				}
				if err != nil {
					if !errors.Is(err, ErrConflict) {
						t.Errorf("%s: %v", server, err)
					}
					continue
				}
				if !slices.Equal(curKeys[kind], keys) {
					expected[w]++
				}
				cur[kind], curKeys[kind] = len(keys), keys
			}
		})
	}
	stop := make(chan struct{})
	var rg sync.WaitGroup
	for range readers {
		rg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ps := c.Prompts()
				seen := map[string]bool{}
				for _, p := range ps {
					if seen[p.PublicName] {
						t.Errorf("%s listed twice", p.PublicName)
					}
					seen[p.PublicName] = true
				}
				if p, ok := c.Prompt("shared"); ok && p.PublicName != "shared" {
					t.Errorf("Prompt(shared) = %+v", p)
				}
				_ = c.ResourceOwners("r://shared")
				_ = c.Templates()
				_ = c.Resources()
			}
		})
	}
	wg.Wait()
	close(stop)
	rg.Wait()

	mu.Lock()
	defer mu.Unlock()
	for _, e := range feedErr {
		t.Error(e)
	}
	for w := range writers {
		server := fmt.Sprintf("s%d", w)
		if events[server] != expected[w] {
			t.Errorf("%s: %d changes delivered, its writer made %d", server, events[server], expected[w])
		}
		_, ps, rs, ts, _ := c.Server(server)
		got := kindState{}
		for k, keys := range map[ListKind][]string{KindPrompts: catKeys(ps), KindResources: catKeys(rs), KindTemplates: catKeys(ts)} {
			if len(keys) > 0 {
				got[k] = keys
			}
		}
		want := kindState{}
		for k, keys := range model[server] {
			if len(keys) > 0 {
				want[k] = keys
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: the feed's replay differs from the catalog (-feed +catalog):\n%s", server, diff)
		}
	}
}

// Property: the catalog equals a model after any sequence of replaces
// (lists drawn in any order) and removes by two servers that may want the
// same public prompt name; a change is emitted exactly when the model
// changed, and a permutation of the current list is never a change.
func TestCatalogMatchesModel(t *testing.T) {
	servers := []string{"a", "b"}
	rapid.Check(t, func(rt *rapid.T) {
		c := NewCatalog(Limits{})
		var got []CatalogChange
		c.Subscribe(func(ch CatalogChange) { got = append(got, ch) })
		model := map[string]map[ListKind][]string{"a": {}, "b": {}}
		promptNames := []string{"shared", "x", "y"}
		uris := []string{"r://1", "r://2", "r://3"}
		n := rapid.IntRange(1, 40).Draw(rt, "steps")
		for i := range n {
			gen := uint64(i + 1)
			server := rapid.SampledFrom(servers).Draw(rt, "server")
			op := rapid.IntRange(0, 3).Draw(rt, "op")
			if op == 3 {
				got = nil
				c.RemoveCatalog(server)
				want := 0
				for _, keys := range model[server] {
					if len(keys) > 0 {
						want++
					}
				}
				if len(got) != want {
					rt.Fatalf("RemoveCatalog(%s) emitted %d changes, want %d", server, len(got), want)
				}
				model[server] = map[ListKind][]string{}
				continue
			}
			kind := ListKind(op + 1)
			var pool []string
			if kind == KindPrompts {
				pool = promptNames
			} else {
				pool = uris
			}
			picked := rapid.SliceOfNDistinct(rapid.SampledFrom(pool), 0, len(pool), rapid.ID[string]).Draw(rt, "keys")
			if rapid.Bool().Draw(rt, "same") && len(model[server][kind]) > 0 {
				// A permutation of the current list.
				picked = slices.Clone(model[server][kind])
				perm := rapid.Permutation(picked).Draw(rt, "perm")
				picked = perm
			}
			got = nil
			var err error
			switch kind {
			case KindPrompts:
				ps := make([]Prompt, len(picked))
				for j, k := range picked {
					pub := k
					if k != "shared" {
						pub = server + "__" + k
					}
					ps[j] = catPublic(server, pub)
				}
				err = c.ReplacePrompts(server, gen, ps)
			case KindResources:
				rs := make([]Resource, len(picked))
				for j, u := range picked {
					rs[j] = Resource{Server: server, URI: u, Def: &mcp.Resource{URI: u}}
				}
				err = c.ReplaceResources(server, gen, rs)
			default:
				ts := make([]Template, len(picked))
				for j, u := range picked {
					ts[j] = Template{Server: server, URITemplate: u + "/{x}", Def: &mcp.ResourceTemplate{URITemplate: u + "/{x}"}}
				}
				err = c.ReplaceTemplates(server, gen, ts)
			}
			// The model's keys, sorted as the catalog keeps them.
			var keys []string
			for _, k := range picked {
				switch {
				case kind == KindPrompts && k != "shared":
					keys = append(keys, server+"__"+k)
				case kind == KindTemplates:
					keys = append(keys, k+"/{x}")
				default:
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			other := "b"
			if server == "b" {
				other = "a"
			}
			conflict := kind == KindPrompts && slices.Contains(keys, "shared") &&
				slices.Contains(model[other][KindPrompts], "shared") &&
				!slices.Equal(keys, model[server][kind])
			switch {
			case conflict:
				var ce *ConflictError
				if !errors.As(err, &ce) || ce.Holder != other || len(got) != 0 {
					rt.Fatalf("replace of %q by %s: err %v, %d changes; want a conflict with %s", keys, server, err, len(got), other)
				}
				continue
			case err != nil:
				rt.Fatalf("replace of %q by %s: %v", keys, server, err)
			}
			changed := !slices.Equal(keys, model[server][kind])
			if changed != (len(got) == 1) || len(got) > 1 {
				rt.Fatalf("replace %s %s %q over %q: %d changes", server, kind, keys, model[server][kind], len(got))
			}
			model[server][kind] = keys
		}
		for _, s := range servers {
			_, ps, rs, ts, _ := c.Server(s)
			for kind, keys := range map[ListKind][]string{KindPrompts: catKeys(ps), KindResources: catKeys(rs), KindTemplates: catKeys(ts)} {
				if !slices.Equal(keys, model[s][kind]) && (len(keys) > 0 || len(model[s][kind]) > 0) {
					rt.Fatalf("%s %s: catalog %q, model %q", s, kind, keys, model[s][kind])
				}
			}
		}
		var all []string
		for _, s := range servers {
			all = append(all, model[s][KindPrompts]...)
		}
		slices.Sort(all)
		if got := catKeys(c.Prompts()); !slices.Equal(got, all) && (len(got) > 0 || len(all) > 0) {
			rt.Fatalf("Prompts = %q, model %q", got, all)
		}
	})
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
