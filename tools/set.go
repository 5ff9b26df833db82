package tools

import (
	"slices"
	"sync"
)

// A Set is a thread-safe, in-memory Sink: the registry of every server's
// current tool set, with O(1) lookup by public name and a change feed.
//
// Every Replace, Remove and Release is atomic: readers see a server's old
// set or its new one, never a mix, and a failed Replace changes nothing.
//
// A Replace whose definitions equal the server's current ones (in the sense
// of go-cmp's cmp.Equal, after sorting by public name) changes nothing
// visible and emits no Change, so a server that recovers with an unchanged
// list never makes the host's list flap. The registration's generation
// still moves to the new gen, silently: Server reports it, and a later
// Removed change carries it.
//
// Each server's Replaces are expected from one goroutine, its supervisor,
// which syncs serially (docs/design.md §6); concurrent Replaces of one server are
// applied whole, in the order they take the lock.
type Set struct {
	lim Limits // resolved; fixed for the Set's life

	mu      sync.Mutex
	servers map[string]*registration // every reserved server
	byName  map[string]slot          // every registered public name
	list    []Tool                   // List's sorted snapshot, valid when listOK
	listOK  bool                     // false after any change
	feed    feed[Change]
}

// A registration is one reserved server and its current tool set.
type registration struct {
	server string
	gen    uint64
	defs   []Tool // sorted by public name; replaced whole, never modified in place
	// quarantined: the holder was disposed with its process unproven
	// gone; only its Release frees the name.
	quarantined bool
}

// A slot locates a registered public name.
type slot struct {
	reg *registration
	idx int // into reg.defs
}

var _ Sink = (*Set)(nil)

// NewSet returns an empty Set enforcing lim on every Replace (zero fields
// take defaults).
func NewSet(lim Limits) *Set {
	return &Set{
		lim:     lim.resolve(),
		servers: make(map[string]*registration),
		byName:  make(map[string]slot),
	}
}

// Reserve claims server. It fails with ErrReserved when the name is already
// reserved and with ErrInvalidName when it is empty.
func (s *Set) Reserve(server string) error {
	if server == "" {
		return &NameError{Server: server, Reason: "empty server name"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if reg, ok := s.servers[server]; ok {
		if reg.quarantined {
			return reservationError(server, ErrQuarantined)
		}
		return reservationError(server, ErrReserved)
	}
	s.servers[server] = &registration{server: server}
	return nil
}

// Replace swaps in defs as the server's whole tool set for generation gen
// and emits one Replaced change, or, when defs equal the current set,
// only records gen. It fails, changing nothing, with ErrNotReserved,
// ErrLimit (the Set's Limits), ErrInvalidName (an invalid or repeated
// public name) or ErrConflict (a public name registered by another server).
//
// The Set keeps a deep copy of defs. Defs sorted by public name (as Build
// returns them) make the unchanged case a single pass without allocation.
func (s *Set) Replace(server string, gen uint64, defs []Tool) error {
	s.mu.Lock()
	done, err := s.replaceUnchanged(server, gen, defs)
	s.mu.Unlock()
	if done {
		return err
	}

	// Defs in another order may still be equal: compare a sorted shallow
	// copy before paying for validation and a deep copy. The work happens
	// outside the lock; the state may move meanwhile, so everything that
	// depends on it is checked again under the lock.
	next := slices.Clone(defs)
	slices.SortFunc(next, byPublicName)
	s.mu.Lock()
	done, err = s.replaceUnchanged(server, gen, next)
	s.mu.Unlock()
	if done {
		return err
	}
	if err := s.prepare(server, next); err != nil {
		return err
	}

	s.mu.Lock()
	if done, err := s.replaceUnchanged(server, gen, next); done {
		s.mu.Unlock()
		return err
	}
	reg := s.servers[server]
	for i := range next {
		if sl, ok := s.byName[next[i].PublicName]; ok && sl.reg != reg {
			s.mu.Unlock()
			return &ConflictError{Name: next[i].PublicName, Server: server, Holder: sl.reg.server}
		}
	}
	s.unregister(reg)
	reg.defs, reg.gen = next, gen
	for i := range next {
		s.byName[next[i].PublicName] = slot{reg, i}
	}
	s.enqueue(Change{Server: server, Gen: gen, Kind: Replaced, Tools: slices.Clone(next)})
	s.unlockAndDeliver()
	return nil
}

// replaceUnchanged handles the two outcomes of Replace that need no new
// state: an unreserved server, and defs equal to the current set (only gen
// moves). done is false when Replace must go on. Called with mu held.
func (s *Set) replaceUnchanged(server string, gen uint64, defs []Tool) (done bool, err error) {
	reg, ok := s.servers[server]
	if !ok {
		return true, reservationError(server, ErrNotReserved)
	}
	if !sameSorted(reg.defs, defs) {
		return false, nil
	}
	reg.gen = gen
	return true, nil
}

// sameSorted reports whether defs equals cur element by element, so defs
// in another order than cur (sorted by public name) compare unequal.
func sameSorted(cur, defs []Tool) bool {
	if len(cur) != len(defs) {
		return false
	}
	for i := range defs {
		if !cur[i].equal(&defs[i]) {
			return false
		}
	}
	return true
}

// prepare checks next, sorted by public name, against the limits and the
// name rules, and makes it a deep copy in place.
func (s *Set) prepare(server string, next []Tool) error {
	if err := s.lim.checkCount(server, len(next)); err != nil {
		return err
	}
	for i := range next {
		if err := s.lim.checkSchemas(server, &next[i]); err != nil {
			return err
		}
	}
	if err := checkNames(server, next); err != nil {
		return err
	}
	for i := range next {
		next[i] = next[i].clone()
	}
	return nil
}

// Remove unregisters all tools of server and emits one Removed change. A
// server without tools (or not reserved) is left alone and emits nothing.
func (s *Set) Remove(server string) {
	s.mu.Lock()
	s.remove(server)
	s.unlockAndDeliver()
}

// Quarantine unregisters the server's tools and keeps its name reserved,
// marked so that Reserve fails with ErrQuarantined, until Release.
func (s *Set) Quarantine(server string) {
	s.mu.Lock()
	s.remove(server)
	if reg, ok := s.servers[server]; ok {
		reg.quarantined = true
	}
	s.unlockAndDeliver()
}

// Release is Remove followed by dropping the reservation; the name can then
// be reserved again.
func (s *Set) Release(server string) {
	s.mu.Lock()
	s.remove(server)
	delete(s.servers, server)
	s.unlockAndDeliver()
}

// remove is Remove with mu held.
func (s *Set) remove(server string) {
	reg, ok := s.servers[server]
	if !ok || len(reg.defs) == 0 {
		return
	}
	s.unregister(reg)
	reg.defs = nil
	s.enqueue(Change{Server: server, Gen: reg.gen, Kind: Removed})
}

// unregister drops reg's public names from the index. Called with mu held.
func (s *Set) unregister(reg *registration) {
	for i := range reg.defs {
		delete(s.byName, reg.defs[i].PublicName)
	}
	s.listOK = false
}

// List returns every registered tool of every server, sorted by public
// name.
func (s *Set) List() []Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.listOK {
		s.list = s.list[:0]
		for _, reg := range s.servers {
			s.list = append(s.list, reg.defs...)
		}
		slices.SortFunc(s.list, byPublicName)
		s.listOK = true
	}
	return slices.Clone(s.list)
}

// Lookup finds a registered tool by its public name, and the server that
// registered it.
func (s *Set) Lookup(public string) (server string, t Tool, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl, ok := s.byName[public]
	if !ok {
		return "", Tool{}, false
	}
	return sl.reg.server, sl.reg.defs[sl.idx], true
}

// Server reports a reserved server's registration: the generation of the
// last Replace (also of an unchanged one) and its tools, sorted by public
// name. ok is false when server is not reserved.
func (s *Set) Server(server string) (gen uint64, defs []Tool, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	reg, ok := s.servers[server]
	if !ok {
		return 0, nil, false
	}
	return reg.gen, slices.Clone(reg.defs), true
}
