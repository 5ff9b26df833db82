package proxy

import (
	"slices"
	"strings"
	"sync"

	"github.com/mcpkeep/mcpkeep/tools"
)

// mirrorWatch knows which lists the mirrors delivered to the SDK's
// server, so that Serve connects a host's session only once the first
// apply's lists are all there (front_early.go, docs/design.md §20). The
// pool's Apply returning is not enough: the Set and the Catalog deliver a
// change on the goroutine already draining their feed, which may still be
// adding an earlier server's tools when Apply returns; a change delivered
// after the connect is announced to the session, and a 2026-07-28 host
// that is between its server/discover and its subscriptions/listen
// would not hear it.
type mirrorWatch struct {
	mu sync.Mutex
	// delivered is each server's keys per list (public names, URIs, URI
	// templates), as last delivered, sorted and joined.
	delivered map[watchKey]string
	tick      chan struct{} // closed at each delivery
}

type watchKey struct {
	server string
	list   tools.ListKind // 0: tools
}

func newMirrorWatch() *mirrorWatch {
	return &mirrorWatch{delivered: map[watchKey]string{}, tick: make(chan struct{})}
}

func (w *mirrorWatch) note(k watchKey, keys []string) {
	slices.Sort(keys)
	joined := strings.Join(keys, "\n")
	w.mu.Lock()
	defer w.mu.Unlock()
	w.delivered[k] = joined
	close(w.tick)
	w.tick = make(chan struct{})
}

// tools and catalog are the mirrors' subscribers: the mirror, then the
// note.
func (w *mirrorWatch) tools(apply func(tools.Change)) func(tools.Change) {
	return func(ch tools.Change) {
		apply(ch)
		w.note(watchKey{ch.Server, 0}, toolKeys(ch.Tools))
	}
}

func (w *mirrorWatch) catalog(apply func(tools.CatalogChange)) func(tools.CatalogChange) {
	return func(ch tools.CatalogChange) {
		apply(ch)
		w.note(watchKey{ch.Server, ch.List}, catalogKeys(ch.List, ch.Prompts, ch.Resources, ch.Templates))
	}
}

// caughtUp reports whether every server's lists in set and catalog were
// delivered as they are now; if not, the returned channel is closed at
// the next delivery.
func (w *mirrorWatch) caughtUp(set *tools.Set, catalog *tools.Catalog, servers []string) (bool, <-chan struct{}) {
	w.mu.Lock()
	tick := w.tick
	w.mu.Unlock()
	for _, name := range servers {
		_, defs, _ := set.Server(name)
		_, prompts, resources, templates, _ := catalog.Server(name)
		want := map[tools.ListKind][]string{0: toolKeys(defs)}
		for _, l := range []tools.ListKind{tools.KindPrompts, tools.KindResources, tools.KindTemplates} {
			want[l] = catalogKeys(l, prompts, resources, templates)
		}
		for l, keys := range want {
			slices.Sort(keys)
			w.mu.Lock()
			got := w.delivered[watchKey{name, l}]
			w.mu.Unlock()
			if got != strings.Join(keys, "\n") {
				return false, tick
			}
		}
	}
	return true, tick
}

func toolKeys(ts []tools.Tool) []string {
	keys := make([]string, len(ts))
	for i, t := range ts {
		keys[i] = t.PublicName
	}
	return keys
}

func catalogKeys(l tools.ListKind, ps []tools.Prompt, rs []tools.Resource, ts []tools.Template) []string {
	var keys []string
	switch l {
	case tools.KindPrompts:
		for _, p := range ps {
			keys = append(keys, p.PublicName)
		}
	case tools.KindResources:
		for _, r := range rs {
			keys = append(keys, r.URI)
		}
	case tools.KindTemplates:
		for _, t := range ts {
			keys = append(keys, t.URITemplate)
		}
	}
	return keys
}
