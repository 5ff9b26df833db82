package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
	"pgregory.net/rapid"
)

// The model-based test: random interleavings of connect results, closes,
// clock advances, notifications, host calls, manual reconnects and a final
// dispose. After every step the invariants hold (the harness checks them)
// and the supervisor agrees with refModel, a few dozen lines that restate
// docs/design.md §3/§5 as a discrete-event simulation.

type genOutcome uint8

const (
	outOK genOutcome = iota
	outConnectErr
	outOpenErr
	outHang
)

func (o genOutcome) String() string {
	return [...]string{"ok", "connect-err", "open-err", "hang"}[o]
}

type action struct {
	kind string // kill, advance, notify, call, reconnect
	d    time.Duration
}

func (a action) String() string {
	if a.kind == "advance" {
		return "advance " + a.d.String()
	}
	return a.kind
}

// refModel is the reference: state, budget and the one timer each state
// may have armed, on a virtual clock.
type refModel struct {
	state    fsm.State
	attempt  int
	gen      uint64
	now      time.Duration
	due      time.Duration // the armed timer of the state (retry, stable or connect deadline); -1 none
	outcomes []genOutcome
	tools    bool // tools registered
}

const (
	mdInitial  = time.Second
	mdMax      = 4 * time.Second
	mdAttempts = 4
	mdConnect  = 5 * time.Second
)

func (m *refModel) delay(n int) time.Duration {
	d := mdInitial << (n - 1)
	return min(d, mdMax)
}

func (m *refModel) outcome(gen uint64) genOutcome {
	if int(gen) < len(m.outcomes) {
		return m.outcomes[gen]
	}
	return outOK
}

func (m *refModel) enterConnecting() {
	m.gen++
	switch m.outcome(m.gen) {
	case outOK:
		m.state, m.due, m.tools = fsm.Established, m.now+mdMax, true
	case outConnectErr, outOpenErr:
		m.fail()
	case outHang:
		m.state, m.due = fsm.Connecting, m.now+mdConnect
	}
}

// fail is lost → released: retry while budget is left, else give up.
func (m *refModel) fail() {
	if m.attempt < mdAttempts {
		m.attempt++
		m.state, m.due = fsm.BackingOff, m.now+m.delay(m.attempt)
		return
	}
	m.state, m.due, m.tools = fsm.Exhausted, -1, false
}

func (m *refModel) apply(a action) {
	switch a.kind {
	case "kill":
		if m.state == fsm.Established {
			m.fail()
		}
	case "reconnect":
		switch m.state {
		case fsm.Established:
			m.attempt = 0
			m.fail()
		case fsm.BackingOff:
			m.enterConnecting()
		case fsm.Exhausted:
			m.attempt = 0
			m.enterConnecting()
		}
	case "advance":
		target := m.now + a.d
		for m.due >= 0 && m.due <= target {
			m.now = m.due
			m.due = -1
			switch m.state {
			case fsm.BackingOff:
				m.enterConnecting()
			case fsm.Established:
				m.attempt = 0 // stable
			case fsm.Connecting:
				m.fail() // connect timeout
			}
		}
		m.now = target
	}
}

// softT records the first failure instead of failing the outer test, so
// rapid can report (and shrink) the action sequence.
type softT struct {
	msg      string
	cleanups []func()
}

func (s *softT) Helper()          {}
func (s *softT) Failed() bool     { return s.msg != "" }
func (s *softT) Cleanup(f func()) { s.cleanups = append(s.cleanups, f) }
func (s *softT) Fatalf(format string, args ...any) {
	if s.msg == "" {
		s.msg = fmt.Sprintf(format, args...)
	}
	panic(softFailure{})
}

// softFailure unwinds the bubble's goroutine after a soft Fatalf.
type softFailure struct{}

func TestModelRandomInterleavings(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		outcomes := rapid.SliceOfN(rapid.SampledFrom([]genOutcome{outOK, outOK, outConnectErr, outOpenErr, outHang}), 1, 12).Draw(rt, "outcomes")
		outcomes = append([]genOutcome{outOK}, outcomes...) // index 0 unused: gens start at 1
		actions := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) action {
			k := rapid.SampledFrom([]string{"kill", "kill", "advance", "advance", "advance", "notify", "call", "reconnect"}).Draw(rt, "kind")
			a := action{kind: k}
			if k == "advance" {
				a.d = rapid.SampledFrom([]time.Duration{100 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, time.Minute}).Draw(rt, "d")
			}
			return a
		}), 1, 40).Draw(rt, "actions")

		st := &softT{}
		var log []string
		synctest.Test(t, func(*testing.T) {
			var h *harness
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(softFailure); !ok {
						panic(r)
					}
				}
				if st.Failed() && h != nil {
					h.forceDispose()
				}
			}()
			h = newHarness(st, nil)
			m := &refModel{due: -1, outcomes: outcomes}
			h.mem.Fault = func(gen uint64) transport.Fault {
				switch m.outcome(gen) {
				case outConnectErr:
					return transport.Fault{ConnectErr: errBoom}
				case outOpenErr:
					return transport.Fault{OpenErr: errBoom}
				case outHang:
					return transport.Fault{Hang: true}
				}
				return transport.Fault{}
			}
			m.enterConnecting()
			started := h.startAsync()
			compare := func(step string) {
				got := h.sup.State()
				if got.State != m.state || got.Attempt != m.attempt || got.Gen != m.gen {
					st.Fatalf("after %s: supervisor %s attempt %d gen %d, model %s attempt %d gen %d",
						step, got.State, got.Attempt, got.Gen, m.state, m.attempt, m.gen)
				}
				if reg := len(h.registered()) > 0; reg != m.tools {
					st.Fatalf("after %s: tools registered %v, model %v", step, reg, m.tools)
				}
			}
			compare("start")
			for _, a := range actions {
				log = append(log, a.String())
				switch a.kind {
				case "kill":
					if g := h.mem.Gen(m.gen); g != nil && m.state == fsm.Established {
						g.Kill()
					}
					h.settle()
				case "advance":
					h.advance(a.d)
				case "notify":
					if g := h.mem.Gen(h.sup.State().Gen); g != nil {
						g.NotifyToolsChanged()
					}
					h.settle()
				case "call":
					_, err := h.sup.Call(context.Background(), "echo", map[string]any{"text": "x"}, nil)
					if (err == nil) != (m.state == fsm.Established) {
						st.Fatalf("call in %s: %v", m.state, err)
					}
					if err != nil && !errors.Is(err, ErrNotConnected) {
						st.Fatalf("call in %s: %v is not ErrNotConnected", m.state, err)
					}
				case "reconnect":
					_ = h.sup.Reconnect()
					h.settle()
				}
				m.apply(a)
				compare(a.String())
			}
			if err := h.dispose(); err != nil {
				st.Fatalf("dispose: %v", err)
			}
			<-started
			if h.mem.Live() != 0 || len(h.registered()) != 0 {
				st.Fatalf("after dispose: %d live, tools %v", h.mem.Live(), h.registered())
			}
		})
		if st.Failed() {
			rt.Fatalf("%s\nactions: %s\noutcomes: %v", st.msg, strings.Join(log, ", "), outcomes[1:])
		}
	})
}
