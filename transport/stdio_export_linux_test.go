package transport

import (
	"sync"
	"syscall"
)

// What the external stdio tests (package transport_test) need from the
// inside: a recorder of what a generation does to its process group.

// GroupEvent is one thing a stdio generation did to its process group.
type GroupEvent struct {
	Kind   string // "probe", "signal" or "reaped" (the leader was reaped)
	Pgid   int
	Signal syscall.Signal // for "signal"
	// Pinned (probe, signal): at that moment process pgid existed and led
	// group pgid (running or a zombie), so the pgid was still the child's.
	Pinned bool
	// Leader is the leader's state letter then (R, S, Z, …); 0 if gone.
	Leader byte
}

// GroupRecorder records the GroupEvents of the generations of one Stdio.
type GroupRecorder struct {
	mu     sync.Mutex
	events []GroupEvent
}

// RecordGroup makes s's generations record their probes, signals and the
// leader's reap in the returned recorder (and then do the real thing).
func RecordGroup(s *Stdio) *GroupRecorder {
	r := &GroupRecorder{}
	s.hooks = &stdioHooks{
		groupAlive: func(pgid int) bool {
			r.add(GroupEvent{Kind: "probe", Pgid: pgid})
			return groupAlive(pgid)
		},
		signalGroup: func(pgid int, sig syscall.Signal) error {
			r.add(GroupEvent{Kind: "signal", Pgid: pgid, Signal: sig})
			return signalGroup(pgid, sig)
		},
		leaderReaped: func(pgid int) { r.add(GroupEvent{Kind: "reaped", Pgid: pgid}) },
	}
	return r
}

func (r *GroupRecorder) add(e GroupEvent) {
	if e.Kind != "reaped" {
		state, pgrp, ok := procState(e.Pgid)
		e.Pinned = ok && pgrp == e.Pgid
		if ok {
			e.Leader = state
		}
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// Events returns what was recorded so far, in order.
func (r *GroupRecorder) Events() []GroupEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]GroupEvent(nil), r.events...)
}

// ProcState is the state letter and process group of pid from /proc.
func ProcState(pid int) (state byte, pgrp int, ok bool) { return procState(pid) }
