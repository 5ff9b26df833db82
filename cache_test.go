package mcpkeep

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/catalogcache"
	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/tools"
	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// memStore is a CatalogStore in memory.
type memStore struct {
	mu    sync.Mutex
	e     *catalogcache.Entry
	err   error // what Load returns
	saves int
}

func (m *memStore) Load() (*catalogcache.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	if m.e == nil {
		return nil, nil
	}
	c := *m.e
	return &c, nil
}

func (m *memStore) Save(e *catalogcache.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := *e
	m.e, m.err = &c, nil
	m.saves++
	return nil
}

func (m *memStore) entry() *catalogcache.Entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.e
}

func cachedTools(names ...string) *catalogcache.Entry {
	e := &catalogcache.Entry{Listed: true, Init: &mcp.InitializeResult{ServerInfo: &mcp.Implementation{Name: "cached", Version: "0"}}}
	for _, n := range names {
		e.Tools = append(e.Tools, &mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}})
	}
	return e
}

func toolNames(e *catalogcache.Entry) []string {
	var out []string
	for _, t := range e.Tools {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

// A successful listing is written to the cache, and every re-sync after a
// list_changed rewrites it.
func TestCacheWrittenAfterEveryListing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memStore{}
		h := newHarness(t, func(o *Options) { o.Cache = st }, "a", "b")
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		e := st.entry()
		if e == nil || !e.Listed || e.NotComing || !slices.Equal(toolNames(e), []string{"a", "b"}) {
			t.Fatalf("after connect: %+v", e)
		}
		if e.Init == nil || e.Init.ServerInfo == nil {
			t.Fatalf("no initialize result cached: %+v", e)
		}
		h.mem.Gen(1).AddTool("c")
		h.mem.Gen(1).NotifyToolsChanged()
		h.settle()
		if e := st.entry(); !slices.Equal(toolNames(e), []string{"a", "b", "c"}) {
			t.Fatalf("after list_changed: %v", toolNames(e))
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
		if e := st.entry(); e.NotComing || !e.Listed {
			t.Fatalf("a server that came is remembered as not coming: %+v", e)
		}
	})
}

// A cached catalog is registered before the first connect and Start does
// not wait for the server; a call made while it connects waits for it
// (bounded by the connect timeout) instead of failing; the live listing
// replaces the hint, telling the host only of a real difference.
func TestCacheHintServesWhileConnecting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := warmCache(t)
		gate := make(chan struct{})
		h := newHarness(t, func(o *Options) { o.Cache = st })
		h.mem.Fault = func(gen uint64) transport.Fault { return transport.Fault{Gate: gate} }
		var changes int
		h.set.Subscribe(func(tools.Change) { changes++ })
		if err := h.start(); err != nil { // returns although the handshake is held
			t.Fatal(err)
		}
		h.wantState(fsm.Connecting)
		if snap := h.sup.State(); !snap.Cached || !snap.Starting || snap.Tools != 2 {
			t.Fatalf("snapshot while connecting from the cache: %+v", snap)
		}
		if got := h.registered(); !slices.Equal(got, []string{"srv__echo", "srv__hang"}) {
			t.Fatalf("registered from the cache: %v", got)
		}
		if si := h.sup.ServerInfo(); si == nil || si.ServerInfo == nil {
			t.Fatalf("ServerInfo from the cache: %+v", si)
		}
		before := changes
		res := make(chan error, 1)
		go func() {
			_, err := h.sup.Call(context.Background(), "echo", map[string]any{"text": "hi"}, nil)
			res <- err
		}()
		synctest.Wait()
		select {
		case err := <-res:
			t.Fatalf("a call to a starting server did not wait: %v", err)
		default:
		}
		close(gate)
		h.settle()
		if err := <-res; err != nil {
			t.Fatalf("call after the connect: %v", err)
		}
		h.wantState(fsm.Established)
		if changes != before {
			t.Fatalf("an identical live catalog told the host %d changes", changes-before)
		}
		if snap := h.sup.State(); snap.Cached || snap.Starting {
			t.Fatalf("established yet still cached/starting: %+v", snap)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// warmCache runs a server once with a cache (in its own supervisor) and
// returns the cache it wrote.
func warmCache(t *testing.T, names ...string) *memStore {
	st := &memStore{}
	h := newHarness(t, func(o *Options) { o.Cache = st }, names...)
	if err := h.start(); err != nil {
		t.Fatal(err)
	}
	if err := h.dispose(); err != nil {
		t.Fatal(err)
	}
	return st
}

// A hint that differs from the live catalog is replaced with one change.
func TestCacheHintReplacedByTheLiveCatalog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memStore{e: cachedTools("old")}
		h := newHarness(t, func(o *Options) { o.Cache = st }, "new")
		var changes int
		h.set.Subscribe(func(tools.Change) { changes++ })
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		h.wantState(fsm.Established)
		if got := h.registered(); !slices.Equal(got, []string{"srv__new"}) {
			t.Fatalf("registered: %v", got)
		}
		if changes != 2 { // the hint's registration, then the live swap
			t.Fatalf("%d changes, want 2", changes)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// A call made while a cached server connects waits at most the connect
// timeout, then fails as an outage.
func TestCacheWaitBoundedByConnectTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memStore{e: cachedTools("echo")}
		h := newHarness(t, func(o *Options) { o.Cache = st }, "echo")
		h.mem.Fault = func(gen uint64) transport.Fault { return transport.Fault{Hang: true} }
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		res := make(chan error, 1)
		go func() {
			_, err := h.sup.Call(context.Background(), "echo", map[string]any{"text": "hi"}, nil)
			res <- err
		}()
		h.advance(4 * time.Second)
		select {
		case err := <-res:
			t.Fatalf("returned before the connect timeout: %v", err)
		default:
		}
		h.advance(time.Second) // the connect timeout (5 s)
		if err := <-res; !errors.Is(err, ErrNotConnected) {
			t.Fatalf("after the connect timeout: %v", err)
		}
		if e := st.entry(); !e.NotComing || !e.Listed || !slices.Equal(toolNames(e), []string{"echo"}) {
			t.Fatalf("a server that never came is not remembered (catalog kept): %+v", e)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// A server remembered as not coming does not hold Start, even with no
// catalog; a corrupt cache is a warning and Start waits as without one.
func TestCacheNotComingAndUnusable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memStore{e: &catalogcache.Entry{NotComing: true}}
		h := newHarness(t, func(o *Options) { o.Cache = st })
		h.mem.Fault = func(gen uint64) transport.Fault { return transport.Fault{Hang: true} }
		errc := h.startAsync()
		select {
		case err := <-errc:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("Start waited for a server remembered as not coming")
		}
		if h.sup.State().Starting {
			t.Fatal("a server without a catalog is starting: calls would wait")
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		st := &memStore{err: catalogcache.ErrUnusable}
		h := newHarness(t, func(o *Options) { o.Cache = st })
		h.mem.Fault = func(gen uint64) transport.Fault { return transport.Fault{Hang: true} }
		errc := h.startAsync()
		select {
		case err := <-errc:
			t.Fatalf("Start did not wait without a usable cache: %v", err)
		default:
		}
		if len(h.logsNamed("catalog cache ignored")) != 1 {
			t.Fatalf("no warning for an unusable cache: %v", h.messages())
		}
		h.advance(5 * time.Second)
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		if e := st.entry(); e == nil || !e.NotComing || e.Listed {
			t.Fatalf("after a failed first attempt: %+v", e)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// A strict server is not excused by its cache: Start still waits.
func TestCacheDoesNotExcuseAStrictStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &memStore{e: cachedTools("echo")}
		h := newHarness(t, func(o *Options) { o.Cache = st; o.FailOnStartupError = true }, "echo")
		h.mem.Fault = func(gen uint64) transport.Fault { return transport.Fault{ConnectErr: errBoom} }
		if err := h.start(); !errors.Is(err, errBoom) {
			t.Fatalf("strict start with a cache: %v", err)
		}
	})
}

// TestCacheHintHonoursTheFilter (docs/design.md §20, §21): a cached
// catalog goes through the same policy as a live listing: a filtered tool
// is not registered from the cache either.
func TestCacheHintHonoursTheFilter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := warmCache(t)
		gate := make(chan struct{})
		h := newHarness(t, func(o *Options) {
			o.Cache = st
			o.Expose = &tools.Policy{Tools: tools.Filter{Deny: []string{"hang"}}}
		})
		h.mem.Fault = func(gen uint64) transport.Fault { return transport.Fault{Gate: gate} }
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		if got := h.registered(); !slices.Equal(got, []string{"srv__echo"}) {
			t.Fatalf("registered from the cache: %v, want the filter applied", got)
		}
		close(gate)
		h.settle()
		if got := h.registered(); !slices.Equal(got, []string{"srv__echo"}) {
			t.Fatalf("registered live: %v", got)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}

// A catalog listed for a host that declared other capabilities is no
// hint: the server may list other tools to this one (issue 33 item 4).
// What a live listing writes says what this supervisor declared.
func TestCacheHintOfAnotherDeclarationIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := cachedTools("echo", "sample")
		e.Declared = &catalogcache.Declared{Sampling: true}
		st := &memStore{e: e}
		h := newHarness(t, func(o *Options) { o.Cache = st }, "echo")
		var seen [][]string
		h.set.Subscribe(func(ch tools.Change) {
			var names []string
			for _, tl := range ch.Tools {
				names = append(names, tl.PublicName)
			}
			seen = append(seen, names)
		})
		if err := h.start(); err != nil {
			t.Fatal(err)
		}
		h.wantState(fsm.Established)
		if len(seen) != 1 || !slices.Equal(seen[0], []string{"srv__echo"}) {
			t.Fatalf("registrations %v, want only the live one", seen)
		}
		saved := st.entry()
		if saved.Declared == nil || *saved.Declared != (catalogcache.Declared{}) || !slices.Equal(toolNames(saved), []string{"echo"}) {
			t.Fatalf("saved %+v declared %+v", saved, saved.Declared)
		}
		if err := h.dispose(); err != nil {
			t.Fatal(err)
		}
	})
}
