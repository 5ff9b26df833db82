package benchsuite

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"github.com/mcpkeep/mcpkeep/transport"
)

// openFDs counts this process's open file descriptors (/proc/self/fd; the
// directory's own descriptor is counted every time, so counts compare).
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// children counts this process's child processes, live and zombie, from
// /proc.
func children() (live, zombie int) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return -1, -1
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err != nil || ppid != self || pid == self {
			continue
		}
		if f[0] == "Z" || f[0] == "X" {
			zombie++
		} else {
			live++
		}
	}
	return live, zombie
}

// cpuTime is this process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fixtureStdio is a transport.Stdio running this program as the fixture
// server in mode, with grace as each of its three teardown graces; with a
// mark, the fixture's exit reports on stderr are timed.
func fixtureStdio(mode string, grace time.Duration, mark *exitMark) *transport.Stdio {
	path, args, env := fixture.CommandEnv(mode)
	st := &transport.Stdio{Command: path, Args: args, Env: env, Server: "bench",
		StdinGrace: grace, TermGrace: grace, KillGrace: grace}
	if mark != nil {
		st.Logger = slog.New(exitHandler{mark})
	}
	return st
}

// pidOpener wraps a Stdio and records the pid of every process it starts,
// newest last, for the sampler.
type pidOpener struct {
	*transport.Stdio
	mu   sync.Mutex
	pids []int
}

func (o *pidOpener) Open(ctx context.Context, gen uint64) (transport.Generation, error) {
	g, err := o.Stdio.Open(ctx, gen)
	if err == nil {
		if p, ok := g.(interface{ Pid() int }); ok {
			o.mu.Lock()
			o.pids = append(o.pids, p.Pid())
			o.mu.Unlock()
		}
	}
	return g, err
}

// sampler counts, every period, how many processes the opener started are
// alive (not zombies) at once.
type sampler struct {
	o       *pidOpener
	samples atomic.Int64
	over1   atomic.Int64 // samples that saw two or more live processes
	maxLive atomic.Int64
	stop    chan struct{}
	done    chan struct{}
}

func startSampler(o *pidOpener, period time.Duration) *sampler {
	s := &sampler{o: o, stop: make(chan struct{}), done: make(chan struct{})}
	go s.run(period)
	return s
}

// run checks the newest pid first: a process seen alive after a newer one
// was seen alive was alive at that earlier moment too (a pid is never
// reborn while we hold it), so a sample of two is a real overlap, never an
// artefact of reading one pid after another.
func (s *sampler) run(period time.Duration) {
	defer close(s.done)
	t := time.NewTicker(period)
	defer t.Stop()
	deadSet := map[int]bool{} // indexes into o.pids known dead
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		s.o.mu.Lock()
		pids := s.o.pids
		s.o.mu.Unlock()
		live := 0
		for i := len(pids) - 1; i >= 0; i-- {
			if deadSet[i] {
				continue
			}
			if fixture.Alive(pids[i]) {
				live++
			} else {
				deadSet[i] = true
			}
		}
		s.samples.Add(1)
		if live > 1 {
			s.over1.Add(1)
		}
		if int64(live) > s.maxLive.Load() {
			s.maxLive.Store(int64(live))
		}
	}
}

func (s *sampler) Stop() {
	close(s.stop)
	<-s.done
}
