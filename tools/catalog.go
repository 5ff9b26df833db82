package tools

import (
	"slices"
	"strings"
	"sync"
)

// A CatalogSink is where a supervisor registers the rest of its server's
// catalog: its prompts, resources and resource templates, each kind
// swapped whole per generation, as a Sink takes its tools. Catalog is the
// in-memory one; a host may implement its own. Implementations must be
// safe for concurrent use by many supervisors.
type CatalogSink interface {
	// ReplacePrompts swaps in the server's whole prompt list for
	// generation gen, atomically: on error nothing changed.
	ReplacePrompts(server string, gen uint64, prompts []Prompt) error
	// ReplaceResources swaps in the server's whole resource list.
	ReplaceResources(server string, gen uint64, resources []Resource) error
	// ReplaceTemplates swaps in the server's whole template list.
	ReplaceTemplates(server string, gen uint64, templates []Template) error
	// RemoveCatalog unregisters every prompt, resource and template of
	// the server (it gave up, or was disposed).
	RemoveCatalog(server string)
}

// A CatalogChange is one atomic swap of one kind of a server's catalog.
type CatalogChange struct {
	Server string
	Gen    uint64
	List   ListKind
	Kind   ChangeKind // Replaced or Removed
	// The server's new list of that kind, sorted by key; nil on Removed.
	// Shared by all subscribers: read-only.
	Prompts   []Prompt
	Resources []Resource
	Templates []Template
}

// Catalog is a thread-safe, in-memory CatalogSink: every server's current
// prompts (by public name, unique across servers), resources (by URI; two
// servers may list the same one) and templates, with a change feed.
//
// Its guarantees are a Set's: each Replace is atomic, an unchanged list
// changes nothing visible and emits nothing (its generation still moves),
// a failed Replace changes nothing, and every change reaches every
// subscriber once, in apply order (see Subscribe).
type Catalog struct {
	lim Limits

	mu      sync.Mutex
	servers map[string]*catalogEntry
	prompts map[string]*catalogEntry // public prompt name → its server
	feed    feed[CatalogChange]
}

type catalogEntry struct {
	server    string
	gen       uint64
	prompts   []Prompt
	resources []Resource
	templates []Template
}

var _ CatalogSink = (*Catalog)(nil)

// NewCatalog returns an empty Catalog enforcing lim (zero fields take
// defaults) on every Replace.
func NewCatalog(lim Limits) *Catalog {
	return &Catalog{lim: lim.resolve(), servers: map[string]*catalogEntry{}, prompts: map[string]*catalogEntry{}}
}

func (c *Catalog) entry(server string) *catalogEntry {
	e, ok := c.servers[server]
	if !ok {
		e = &catalogEntry{server: server}
		c.servers[server] = e
	}
	return e
}

// ReplacePrompts swaps in the server's prompts. It fails, changing
// nothing, with ErrLimit, ErrInvalidName (an invalid or repeated public
// name) or ErrConflict (a public name another server registered).
func (c *Catalog) ReplacePrompts(server string, gen uint64, prompts []Prompt) error {
	next, err := prepare(c.lim, server, KindPrompts, prompts)
	if err != nil {
		return err
	}
	for i := 1; i < len(next); i++ {
		if next[i].PublicName == next[i-1].PublicName {
			return &NameError{Server: server, Public: next[i].PublicName, Reason: "prompt public name given twice"}
		}
	}
	c.mu.Lock()
	e := c.servers[server] // nil until its first successful Replace
	for i := range next {
		if holder, ok := c.prompts[next[i].PublicName]; ok && holder != e {
			c.mu.Unlock()
			return &ConflictError{Name: next[i].PublicName, Server: server, Holder: holder.server}
		}
	}
	e = c.entry(server)
	e.gen = gen
	if sameItems(e.prompts, next) {
		c.mu.Unlock()
		return nil
	}
	for i := range e.prompts {
		delete(c.prompts, e.prompts[i].PublicName)
	}
	e.prompts = next
	for i := range next {
		c.prompts[next[i].PublicName] = e
	}
	c.feed.enqueue(CatalogChange{Server: server, Gen: gen, List: KindPrompts, Kind: Replaced, Prompts: slices.Clone(next)})
	c.feed.unlockAndDeliver(&c.mu)
	return nil
}

// ReplaceResources swaps in the server's resources (ErrLimit,
// ErrInvalidName for a URI listed twice).
func (c *Catalog) ReplaceResources(server string, gen uint64, resources []Resource) error {
	return replaceList(c, server, gen, KindResources, resources,
		func(e *catalogEntry) *[]Resource { return &e.resources },
		func(ch *CatalogChange, l []Resource) { ch.Resources = l })
}

// ReplaceTemplates swaps in the server's resource templates.
func (c *Catalog) ReplaceTemplates(server string, gen uint64, templates []Template) error {
	return replaceList(c, server, gen, KindTemplates, templates,
		func(e *catalogEntry) *[]Template { return &e.templates },
		func(ch *CatalogChange, l []Template) { ch.Templates = l })
}

// replaceList is the Replace of a kind whose keys may repeat across
// servers (resources, templates): field is the entry's list of that kind,
// set puts a list into a change.
func replaceList[T item](c *Catalog, server string, gen uint64, kind ListKind, list []T,
	field func(*catalogEntry) *[]T, set func(*CatalogChange, []T)) error {
	next, err := prepare(c.lim, server, kind, list)
	if err != nil {
		return err
	}
	c.mu.Lock()
	e := c.entry(server)
	e.gen = gen
	cur := field(e)
	if sameItems(*cur, next) {
		c.mu.Unlock()
		return nil
	}
	*cur = next
	ch := CatalogChange{Server: server, Gen: gen, List: kind, Kind: Replaced}
	set(&ch, slices.Clone(next))
	c.feed.enqueue(ch)
	c.feed.unlockAndDeliver(&c.mu)
	return nil
}

// prepare checks a list against the limit of its kind and returns a copy
// sorted by key, with every entry naming server, rejecting a repeated key.
func prepare[T item](lim Limits, server string, kind ListKind, list []T) ([]T, error) {
	if err := lim.checkKind(server, kind, len(list)); err != nil {
		return nil, err
	}
	next := slices.Clone(list)
	slices.SortFunc(next, func(a, b T) int { return strings.Compare(key(a), key(b)) })
	for i := range next {
		canonical(&next[i])
		if i > 0 && kind != KindPrompts && key(next[i]) == key(next[i-1]) {
			return nil, &NameError{Server: server, Public: key(next[i]), Reason: kind.String() + ": listed twice"}
		}
	}
	return next, nil
}

// RemoveCatalog unregisters all of the server's catalog, with one Removed
// change per kind it had.
func (c *Catalog) RemoveCatalog(server string) {
	c.mu.Lock()
	e, ok := c.servers[server]
	if !ok {
		c.mu.Unlock()
		return
	}
	delete(c.servers, server)
	for i := range e.prompts {
		delete(c.prompts, e.prompts[i].PublicName)
	}
	if len(e.prompts) > 0 {
		c.feed.enqueue(CatalogChange{Server: server, Gen: e.gen, List: KindPrompts, Kind: Removed})
	}
	if len(e.resources) > 0 {
		c.feed.enqueue(CatalogChange{Server: server, Gen: e.gen, List: KindResources, Kind: Removed})
	}
	if len(e.templates) > 0 {
		c.feed.enqueue(CatalogChange{Server: server, Gen: e.gen, List: KindTemplates, Kind: Removed})
	}
	c.feed.unlockAndDeliver(&c.mu)
}

// Subscribe calls fn for every change applied from now on, in order,
// exactly once per atomic swap, with a Set's delivery rules (see
// Set.Subscribe).
func (c *Catalog) Subscribe(fn func(CatalogChange)) (unsubscribe func()) {
	if fn == nil {
		panic("tools: Subscribe with nil func")
	}
	return c.feed.subscribe(&c.mu, fn)
}

// Prompt finds a registered prompt by its public name.
func (c *Catalog) Prompt(public string) (Prompt, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.prompts[public]
	if !ok {
		return Prompt{}, false
	}
	i, _ := slices.BinarySearchFunc(e.prompts, public, func(p Prompt, k string) int { return strings.Compare(p.PublicName, k) })
	return e.prompts[i], true
}

// Prompts returns every server's prompts, sorted by public name.
func (c *Catalog) Prompts() []Prompt {
	return gather(c, func(e *catalogEntry) []Prompt { return e.prompts }, func(p Prompt) string { return p.Server })
}

// Resources returns every server's resources, sorted by URI, then server.
func (c *Catalog) Resources() []Resource {
	return gather(c, func(e *catalogEntry) []Resource { return e.resources }, func(r Resource) string { return r.Server })
}

// Templates returns every server's templates, sorted by URI template,
// then server.
func (c *Catalog) Templates() []Template {
	return gather(c, func(e *catalogEntry) []Template { return e.templates }, func(t Template) string { return t.Server })
}

// gather lists one kind of every server, sorted by key, then server.
func gather[T item](c *Catalog, list func(*catalogEntry) []T, server func(T) string) []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []T
	for _, e := range c.servers {
		out = append(out, list(e)...)
	}
	slices.SortFunc(out, func(a, b T) int {
		if n := strings.Compare(key(a), key(b)); n != 0 {
			return n
		}
		return strings.Compare(server(a), server(b))
	})
	return out
}

// Server returns one server's registered catalog and the generation of
// its last Replace; ok is false when nothing was ever registered (or it
// was removed).
func (c *Catalog) Server(server string) (gen uint64, prompts []Prompt, resources []Resource, templates []Template, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.servers[server]
	if !ok {
		return 0, nil, nil, nil, false
	}
	return e.gen, slices.Clone(e.prompts), slices.Clone(e.resources), slices.Clone(e.templates), true
}

// ResourceOwners lists the servers that list uri, sorted by name.
func (c *Catalog) ResourceOwners(uri string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, e := range c.servers {
		if _, found := slices.BinarySearchFunc(e.resources, uri, func(r Resource, k string) int { return strings.Compare(r.URI, k) }); found {
			out = append(out, e.server)
		}
	}
	slices.Sort(out)
	return out
}

// A CatalogLookuper resolves prompts and resources to the servers that
// registered them. Catalog is one; mcpkeep.Pool routes through it.
type CatalogLookuper interface {
	Prompt(public string) (Prompt, bool)
	ResourceOwners(uri string) []string
	Templates() []Template
}

var _ CatalogLookuper = (*Catalog)(nil)
