package mcpkeep

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpkeep/mcpkeep/fsm"
	"github.com/mcpkeep/mcpkeep/transport"
	"pgregory.net/rapid"
)

// The model test of lazy start and idle stop (docs/design.md §20): a lazy
// server with a cached catalog, an idle stop, random connect results,
// kills, clock advances, calls (each a demand when idle) and reconnects.
// idleModel restates the rules: idle keeps tools, and a generation that
// served until a clean idle stop resets the budget as stable would; a call in
// idle starts the next generation; the idle timer, when it fires, stops a
// server whose last request is a full window old, and otherwise is armed
// again for the end of that window.

// mdIdle is off the 100 ms grid of the advances, so the idle timer never
// ties with the stability or retry timers.
const mdIdle = 3*time.Second + 50*time.Millisecond

type idleModel struct {
	refModel
	idleDue time.Duration // -1 none
	lastUse time.Duration // -1 never
}

func (m *idleModel) enterConnecting() {
	m.refModel.enterConnecting()
	m.idleDue = -1
	if m.state == fsm.Established {
		m.idleDue = m.now + mdIdle
	}
}

func (m *idleModel) leave() { m.idleDue = -1 }

func (m *idleModel) apply(a action) {
	switch a.kind {
	case "kill":
		if m.state == fsm.Established {
			m.leave()
			m.fail()
		}
	case "reconnect":
		switch m.state {
		case fsm.Established:
			m.leave()
			m.attempt = 0
			m.fail()
		case fsm.BackingOff, fsm.Idle:
			m.enterConnecting()
		case fsm.Exhausted:
			m.attempt = 0
			m.enterConnecting()
		}
	case "call":
		m.lastUse = m.now
		if m.state == fsm.Idle {
			m.enterConnecting()
		}
	case "advance":
		target := m.now + a.d
		for {
			next, idle := m.due, false
			if m.state == fsm.Established && m.idleDue >= 0 && (next < 0 || m.idleDue < next) {
				next, idle = m.idleDue, true
			}
			if next < 0 || next > target {
				break
			}
			m.now = next
			if idle {
				if m.lastUse >= 0 && m.now-m.lastUse < mdIdle {
					m.idleDue = m.lastUse + mdIdle
					continue
				}
				m.state, m.due, m.idleDue = fsm.Idle, -1, -1
				m.attempt = 0 // served until a clean stop: stable
				continue
			}
			m.due = -1
			switch m.state {
			case fsm.BackingOff:
				m.enterConnecting()
			case fsm.Established:
				m.attempt = 0 // stable
			}
		}
		m.now = target
	}
}

func TestModelLazyIdle(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		// No hang: a call that demands a start waits for it, and the
		// model's calls are synchronous.
		outcomes := rapid.SliceOfN(rapid.SampledFrom([]genOutcome{outOK, outOK, outOK, outConnectErr, outOpenErr}), 1, 12).Draw(rt, "outcomes")
		outcomes = append([]genOutcome{outOK}, outcomes...)
		actions := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) action {
			k := rapid.SampledFrom([]string{"kill", "advance", "advance", "advance", "notify", "call", "call", "reconnect"}).Draw(rt, "kind")
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
			h = newHarness(st, func(o *Options) {
				o.Lazy, o.IdleStop = true, mdIdle
				o.Cache = &memStore{e: memEntry("echo", "hang")}
			})
			m := &idleModel{refModel: refModel{state: fsm.Idle, due: -1, outcomes: outcomes, tools: true}, idleDue: -1, lastUse: -1}
			h.mem.Fault = func(gen uint64) transport.Fault {
				switch m.outcome(gen) {
				case outConnectErr:
					return transport.Fault{ConnectErr: errBoom}
				case outOpenErr:
					return transport.Fault{OpenErr: errBoom}
				}
				return transport.Fault{}
			}
			if err := h.start(); err != nil {
				st.Fatalf("start: %v", err)
			}
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
					h.settle()
					m.apply(a)
					if (err == nil) != (m.state == fsm.Established) {
						st.Fatalf("call, model now %s: %v", m.state, err)
					}
					if err != nil && !errors.Is(err, ErrNotConnected) {
						st.Fatalf("call, model now %s: %v is not ErrNotConnected", m.state, err)
					}
					compare(a.String())
					continue
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
			if h.mem.Live() != 0 || len(h.registered()) != 0 {
				st.Fatalf("after dispose: %d live, tools %v", h.mem.Live(), h.registered())
			}
		})
		if st.Failed() {
			rt.Fatalf("%s\nactions: %s\noutcomes: %v", st.msg, strings.Join(log, ", "), outcomes[1:])
		}
	})
}
