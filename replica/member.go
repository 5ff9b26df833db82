package replica

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/mcpkeep/mcpkeep/store"
)

// DefaultTTL is how long a registration lives unless refreshed; it is
// refreshed every third of it.
const DefaultTTL = 6 * time.Second

// Member is this replica in the membership set (docs/design.md §26): it
// registers its forwarding address, refreshes it while it lives, keeps
// a snapshot of the live members for the dispatcher (no store round
// trip per request), and leaves on Close. A store lost after the start
// is no crash: the snapshot shrinks to this replica alone ("own handles
// only": whatever another replica owns is answered as if its owner were
// gone), with a log line when it happens and when it ends, and
// Degraded (for the metric) says so.
type Member struct {
	st    store.Membership
	id    string
	addr  string
	ttl   time.Duration
	clk   clock.Clock
	log   *slog.Logger
	peers atomic.Pointer[map[string]string]

	degraded atomic.Bool
	losses   atomic.Uint64

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	// miss is the lookup of an id the snapshot lacks (a replica that
	// joined after the last refresh): one at a time, at most one per
	// missInterval, the others waiting for it.
	miss struct {
		sync.Mutex
		last     time.Time
		inflight chan struct{}
	}
}

// missInterval bounds how often a miss reads the store: a host that
// sends the handles of a gone replica costs one read per interval.
const missInterval = 250 * time.Millisecond

// MemberOptions configure Join.
type MemberOptions struct {
	TTL    time.Duration // 0: DefaultTTL
	Clock  clock.Clock   // nil: the wall clock
	Logger *slog.Logger  // nil: discard
}

// Join registers id at addr in st, once (an error, wrapping
// store.ErrUnreachable when the store cannot be reached, ends it), and
// starts refreshing.
func Join(ctx context.Context, st store.Membership, id, addr string, o MemberOptions) (*Member, error) {
	m := &Member{st: st, id: id, addr: addr, ttl: o.TTL, clk: o.Clock, log: o.Logger, done: make(chan struct{})}
	if m.ttl <= 0 {
		m.ttl = DefaultTTL
	}
	if m.clk == nil {
		m.clk = clock.New()
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if err := st.Register(ctx, id, addr, m.ttl); err != nil {
		return nil, err
	}
	m.refresh(ctx)
	rctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.loop(rctx)
	return m, nil
}

// loop refreshes every third of the TTL until Close.
func (m *Member) loop(ctx context.Context) {
	defer close(m.done)
	t := m.clk.Ticker(m.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.refresh(ctx)
		}
	}
}

// refresh registers again and reads the members, bounded by a third of
// the TTL so a hung store cannot hold the loop past a refresh.
func (m *Member) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, m.ttl/3)
	defer cancel()
	err := m.st.Register(ctx, m.id, m.addr, m.ttl)
	var peers map[string]string
	if err == nil {
		peers, err = m.st.Members(ctx)
	}
	if err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			return // closing
		}
		if !m.degraded.Swap(true) {
			m.losses.Add(1)
			m.log.Error("store lost: serving own handles only", slog.Any("err", err))
		}
		peers = nil
	} else if m.degraded.Swap(false) {
		m.log.Info("store back: forwarding to other replicas again", slog.Int("members", len(peers)))
	}
	if peers == nil {
		peers = map[string]string{}
	}
	peers[m.id] = m.addr
	m.peers.Store(&peers)
}

// Addr is the forwarding address of replica id, when it is a live
// member (ok false: gone, or unknown while the store is lost). It is
// the only source of a forwarding address: never the request. An id
// the last snapshot lacks is looked up in the store once more (bounded:
// see missInterval), so a replica that joined since is found.
func (m *Member) Addr(id string) (string, bool) {
	if a, ok := m.lookup(id); ok || m.degraded.Load() {
		return a, ok
	}
	m.refreshOnMiss()
	return m.lookup(id)
}

func (m *Member) lookup(id string) (string, bool) {
	p := m.peers.Load()
	if p == nil {
		return "", false
	}
	a, ok := (*p)[id]
	return a, ok
}

// refreshOnMiss refreshes the snapshot, or waits for the refresh in
// flight, unless one finished less than missInterval ago. No lock is
// held across the store's round trip.
func (m *Member) refreshOnMiss() {
	m.miss.Lock()
	if ch := m.miss.inflight; ch != nil {
		m.miss.Unlock()
		<-ch
		return
	}
	if !m.miss.last.IsZero() && m.clk.Since(m.miss.last) < missInterval {
		m.miss.Unlock()
		return
	}
	ch := make(chan struct{})
	m.miss.inflight = ch
	m.miss.Unlock()
	m.refresh(context.Background())
	m.miss.Lock()
	m.miss.inflight, m.miss.last = nil, m.clk.Now()
	m.miss.Unlock()
	close(ch)
}

// Count is how many members the last refresh saw (this one included).
func (m *Member) Count() int {
	if p := m.peers.Load(); p != nil {
		return len(*p)
	}
	return 0
}

// Degraded reports whether the store is lost (own handles only).
func (m *Member) Degraded() bool { return m.degraded.Load() }

// Losses counts how many times the store was lost.
func (m *Member) Losses() uint64 { return m.losses.Load() }

// Close stops refreshing and leaves the set (bounded by ctx): the
// other replicas stop forwarding here at their next refresh.
func (m *Member) Close(ctx context.Context) error {
	var err error
	m.once.Do(func() {
		m.cancel()
		<-m.done
		err = m.st.Leave(ctx, m.id)
	})
	return err
}
