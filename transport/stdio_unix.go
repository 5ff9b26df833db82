//go:build unix

package transport

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of the polling for an empty process group (the OS gives no event
// for it), in real time.
const (
	groupPollMin = time.Millisecond
	groupPollMax = 20 * time.Millisecond
)

// stderrDrain bounds how long the barrier waits, once the group is gone,
// for the stderr reader to reach EOF; only a process that escaped the group
// (setsid) and holds stderr can make it wait that long.
const stderrDrain = 100 * time.Millisecond

// stderrCatchUp bounds how long the loss signal waits, after the child was
// reaped, for its last stderr lines to reach the tail; it takes
// microseconds unless the Logger's handler is slow.
const stderrCatchUp = 50 * time.Millisecond

// Open spawns generation gen: a fresh process in its own session and
// process group (see spawnAttr), with its stdin, stdout and stderr on pipes owned by mcpkeep. ctx only
// bounds the start; the process lives until it exits or Terminate ends it.
// On error nothing is left running, and the error is a *StartError naming
// the command.
func (s *Stdio) Open(ctx context.Context, gen uint64) (Generation, error) {
	if err := ctx.Err(); err != nil {
		return nil, &StartError{Command: s.Command, Err: err}
	}
	if s.Command == "" {
		return nil, &StartError{Command: s.Command, Err: errors.New("no command")}
	}
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Dir = s.Dir
	cmd.Env = s.environ()
	cmd.SysProcAttr = spawnAttr()
	pidfd := askPidfd(cmd.SysProcAttr)

	var pipes [3][2]*os.File // stdin, stdout, stderr: {read end, write end}
	closeAll := func() {
		for _, p := range pipes {
			for _, f := range p {
				if f != nil {
					f.Close()
				}
			}
		}
	}
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, &StartError{Command: s.Command, Err: err}
		}
		pipes[i] = [2]*os.File{r, w}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pipes[0][0], pipes[1][1], pipes[2][1]
	// *os.File stdio makes exec hand the descriptors over as they are: no
	// copying goroutines, so cmd.Wait returns when the child exits even if
	// a grandchild holds the pipes.
	endSpawn := beginSpawn()
	if err := cmd.Start(); err != nil {
		endSpawn()
		closeAll()
		return nil, &StartError{Command: s.Command, Err: err}
	}
	// Registered before an orphan reaper can see it (see owned): its
	// zombie is its waiter's to reap.
	ownLeader(cmd.Process.Pid)
	endSpawn()
	// The child has its copies; the parent's copies of the child's ends
	// would keep EOF from ever coming.
	pipes[0][0].Close()
	pipes[1][1].Close()
	pipes[2][1].Close()

	stdin, term, kill := s.graces()
	g := &stdioGen{
		log:         s.logger().With("server", s.Server, "gen", gen),
		clock:       s.clock(),
		graces:      [3]time.Duration{stdin, term, kill},
		cmd:         cmd,
		pgid:        cmd.Process.Pid,
		pidfd:       -1,
		stdin:       &stdinWriter{f: pipes[0][1]},
		stdout:      newStdoutReader(pipes[1][0]),
		stderr:      newStderrReader(pipes[2][0]),
		exited:      make(chan struct{}),
		release:     make(chan struct{}),
		leaderGone:  make(chan struct{}),
		stderrDone:  make(chan struct{}),
		terminate:   make(chan struct{}),
		abort:       make(chan struct{}),
		gone:        make(chan struct{}),
		reaped:      make(chan struct{}),
		groupAlive:  groupAlive,
		signalGroup: signalGroup,
	}
	if h := s.hooks; h != nil {
		if h.groupAlive != nil {
			g.groupAlive = h.groupAlive
		}
		if h.signalGroup != nil {
			g.signalGroup = h.signalGroup
		}
		g.onLeaderReaped = h.leaderReaped
	}
	if pidfd != nil {
		g.pidfd = *pidfd
	}
	g.watch = newStallWatch(g.log, s.Server, gen, g.stdin, g.stdout)
	g.transport = &Lines{Reader: stallReader{g.stdout, g.watch}, Writer: g.watch}
	go g.wait()
	go g.forwardStderr()
	go g.reap()
	return g, nil
}

// spawnAttr starts the child in a new session (setsid) rather than only a
// new process group: it leads its session and its group, so the group id
// is still its pid and everything said of the group (signalling, the
// zombie leader pinning it: see stdioGen) holds as with setpgid; and it
// has no controlling terminal. Under a terminal, a child in a background
// group of mcpkeep's session that reads /dev/tty (ssh, sudo, pinentry
// asking for a password) is stopped by SIGTTIN and hangs, silently, until
// the connect timeout; in a session of its own, opening /dev/tty fails at
// once (ENXIO) and the child says so on stderr, which the loss log shows.
// A terminal's Ctrl-C still reaches only mcpkeep, which tears the child
// down. Where the kernel groups scheduling by session (autogroup), the
// child's own session is also its own scheduling group: its start-up
// waits behind a busy machine, but a relayed call costs the proxy and the
// server less CPU than in one shared group (docs/design.md §8: setpgid
// without a terminal was tried and measured, and undone).
func spawnAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// stdioHooks replace what a stdio generation does to its process group, in
// internal tests. A nil field means the real thing.
type stdioHooks struct {
	groupAlive  func(pgid int) bool
	signalGroup func(pgid int, sig syscall.Signal) error
	// leaderReaped is called by the waiter right after the leader was
	// reaped: from then on its pgid is not mcpkeep's to signal.
	leaderReaped func(pgid int)
}

// stdioGen is one spawned process and its pipes. Three goroutines serve it:
// wait (sees the child exit, and reaps it once reap lets it: bounded by the
// child's life), forwardStderr (bounded by reap, which closes the pipe) and
// reap (the teardown, bounded by the termination window).
//
// The child is the leader of its process group, and the group's id is the
// child's pid. A group id stays reserved while the group has a member, and
// a leader that exited but was not reaped (a zombie) is still a member; an
// empty group's id is free for the kernel to hand out again. So wait learns
// of the exit without reaping (waitExited), the loss is signalled at once,
// and the leader stays a zombie, pinning its pgid, until reap is done
// signalling the group (it is empty, or the teardown gave up); only then is
// it reaped. No signal is ever sent to the pgid after that.
type stdioGen struct {
	log    *slog.Logger
	clock  clock.Clock
	graces [3]time.Duration // after closing stdin, after SIGTERM, after SIGKILL

	cmd       *exec.Cmd // Wait is called by wait only
	pgid      int       // = the child's pid
	pidfd     int       // the child's pidfd, or -1; wait owns it
	stdin     *stdinWriter
	stdout    *stdoutReader
	watch     *stallWatch   // the write watchdog over stdin and stdout
	stderr    *stderrReader // its file is closed by reap
	transport *Lines

	// exited is closed by wait once the child has exited (Exit().Status
	// is known) and its loss is visible to the SDK; the child is normally
	// still an unreaped zombie then.
	exited chan struct{}
	// release is closed by reap once it signals the group no more: wait
	// may reap the leader.
	release chan struct{}
	// leaderGone is closed by wait once the leader was reaped. Where the
	// exit cannot be awaited without reaping (waitExited fails), that is
	// before exited, and reap then never signals the group.
	leaderGone chan struct{}
	stderrDone chan struct{} // closed by forwardStderr on return
	terminate  chan struct{} // closed by the first Terminate
	termOnce   sync.Once
	abort      chan struct{} // closed by the first Abort
	abortOnce  sync.Once
	gone       chan struct{} // closed by reap: the close barrier
	// reaped is closed by reap once the teardown's bounded part is done:
	// Gone closed, or the group outlived the graces and is watched.
	reaped         chan struct{}
	groupAlive     func(pgid int) bool
	signalGroup    func(pgid int, sig syscall.Signal) error
	onLeaderReaped func(pgid int) // nil but in tests

	mu sync.Mutex // guards the fields below
	// status is the child's exit status, set by wait.
	status string
	// tail is the end of the child's stderr, fed by forwardStderr.
	tail stderrTail
}

func (g *stdioGen) Transport() mcp.Transport { return g.transport }

func (g *stdioGen) Gone() <-chan struct{} { return g.gone }

func (g *stdioGen) Terminate() { g.termOnce.Do(func() { close(g.terminate) }) }

// Abort implements Aborter: the teardown skips the stdin grace (or cuts
// short the one already running, after Terminate or the child's own exit)
// and signals the group at once: stdin is closed, SIGTERM goes to the
// group, and SIGKILL follows after TermGrace.
func (g *stdioGen) Abort() { g.abortOnce.Do(func() { close(g.abort) }) }

func (g *stdioGen) Exit() ExitInfo {
	g.mu.Lock()
	defer g.mu.Unlock()
	return ExitInfo{Status: g.status, StderrTail: g.tail.String()}
}

// Pid is the child's process id, which is also its process group id.
func (g *stdioGen) Pid() int { return g.pgid }

func (g *stdioGen) setStatus(status string) {
	g.mu.Lock()
	g.status = status
	g.mu.Unlock()
}

// wait sees the child exit, records its status and makes its loss visible
// to the SDK at once (see stdoutReader). By then Exit().Status is set and
// the tail holds all the child wrote to stderr. It reaps the child once
// reap releases it.
func (g *stdioGen) wait() {
	ws, err := awaitExit(g.pidfd, g.pgid)
	pinned := err == nil
	if pinned {
		g.setStatus(waitStatusString(ws))
	} else {
		// No way to wait without reaping (see waitExited): reap now, and
		// reap will not signal the group.
		g.log.Debug("stdio: cannot await the exit without reaping", "pid", g.pgid, "err", err)
		g.reapLeader()
	}
	// Let the tail catch up with the child's last words first: the
	// supervisor logs it when it sees the loss.
	g.stderr.childExited()
	t := time.NewTimer(stderrCatchUp)
	select {
	case <-g.stderr.caughtUp:
	case <-g.stderrDone:
	case <-t.C:
	}
	t.Stop()
	g.stdout.childExited()
	// The SDK's reader, just woken, is this processor's next goroutine:
	// let it take the EOF (and hand the loss on) before the close of
	// exited wakes the teardown, whose first group probe lists /proc
	// (about a hundred microseconds) and would otherwise run first.
	runtime.Gosched()
	close(g.exited)
	g.log.Debug("stdio: child exited", "pid", g.pgid, "status", g.Exit().Status)
	if pinned {
		<-g.release
		g.reapLeader()
	}
}

// reapLeader reaps the child (a zombie by now, unless waitExited failed),
// records its status as the OS reports it, and frees its pgid.
func (g *stdioGen) reapLeader() {
	err := g.cmd.Wait()
	status := ""
	if ps := g.cmd.ProcessState; ps != nil {
		status = ps.String()
	} else if err != nil {
		status = err.Error()
	}
	g.setStatus(status)
	disownLeader(g.pgid)
	if g.onLeaderReaped != nil {
		g.onLeaderReaped(g.pgid)
	}
	close(g.leaderGone)
}

// waitStatusString is os.ProcessState.String for a status waitExited
// returned, so Exit().Status reads the same before and after the reap.
func waitStatusString(ws syscall.WaitStatus) string {
	var s string
	switch {
	case ws.Exited():
		s = "exit status " + strconv.Itoa(ws.ExitStatus())
	case ws.Signaled():
		s = "signal: " + ws.Signal().String()
	default:
		s = "exited" // not reached: waitExited waits for an exit only
	}
	if ws.CoreDump() {
		s += " (core dumped)"
	}
	return s
}

// forwardStderr logs the child's stderr line by line and keeps its tail.
func (g *stdioGen) forwardStderr() {
	defer close(g.stderrDone)
	readLines(g.stderr, func(line string) {
		g.mu.Lock()
		g.tail.add(line)
		g.mu.Unlock()
		g.log.Debug("stderr", "line", line)
	})
}

// reap is the teardown. It starts when Terminate or Abort is called or the
// child exits on its own (then whatever is left of its group is torn down
// the same way: an orphaned group has no server to serve). Steps: close
// stdin and wait StdinGrace (skipped, or cut short, by Abort); SIGTERM the
// group and wait TermGrace; SIGKILL the group and wait KillGrace. Each wait
// ends early once the child has exited and its group is empty; then the
// leader is reaped and Gone closes. If that does not happen within the
// graces, reap releases the descriptors, closes reaped, and keeps watching
// the group (watchLate) with its leader pinned: Gone closes once the group
// empties, if ever (the supervisor is stuck until then). Either way reap
// lets wait reap the leader only after its last signal (see stdioGen).
func (g *stdioGen) reap() {
	select {
	case <-g.exited:
	case <-g.terminate:
	case <-g.abort:
	}
	g.stdin.Close()
	var quiet bool
	if isClosed(g.abort) {
		g.log.Debug("stdio: stdin closed; aborting", "pgid", g.pgid)
		quiet = isClosed(g.exited) && !g.groupAlive(g.pgid)
	} else {
		g.log.Debug("stdio: stdin closed", "pgid", g.pgid, "grace", g.graces[0])
		quiet = g.waitQuiet(g.graces[0], g.abort)
	}
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if quiet {
			break
		}
		if isClosed(g.leaderGone) {
			// Only where the exit cannot be awaited without reaping:
			// the pgid may belong to someone else by now.
			g.log.Debug("stdio: leader already reaped, not signalling its group", "pgid", g.pgid, "signal", sig.String())
		} else {
			g.log.Debug("stdio: signalling process group", "pgid", g.pgid, "signal", sig.String())
			if err := g.signalGroup(g.pgid, sig); err != nil {
				g.log.Debug("stdio: signal failed", "pgid", g.pgid, "err", err)
			}
		}
		if !isClosed(g.exited) {
			// The child may have left its group (setpgid, setsid).
			// os.Process.Signal never signals a reaped process.
			g.cmd.Process.Signal(sig)
		}
		quiet = g.waitQuiet(g.graces[i+1], nil)
	}
	if !quiet {
		// Given up: release every descriptor now, and watch the group
		// at a slow pace; the leader stays pinned meanwhile, so the
		// probe is of this group and no other.
		g.stderr.f.Close()
		<-g.stderrDone // prompt: closing the pipe ends its read
		g.stdout.release()
		g.log.Debug("stdio: process group did not end; watching it", "pgid", g.pgid)
		close(g.reaped)
		g.watchLate()
		g.log.Debug("stdio: process group ended late", "pgid", g.pgid)
	}
	// No signal from here on: the leader may be reaped.
	close(g.release)
	// The leader has exited: reaping a zombie is prompt.
	<-g.leaderGone
	if !quiet {
		close(g.gone)
		return
	}

	// Once the group is gone nobody writes stderr: let the reader take
	// what is buffered, boundedly, then release every descriptor.
	t := time.NewTimer(stderrDrain)
	select {
	case <-g.stderrDone:
	case <-t.C:
	}
	t.Stop()
	g.stderr.f.Close()
	<-g.stderrDone // prompt: closing the pipe ends its read
	// Let the SDK drain what the child wrote before it exited.
	t = time.NewTimer(stderrDrain)
	select {
	case <-g.stdout.done:
	case <-t.C:
	}
	t.Stop()
	g.stdout.release()
	close(g.reaped)
	close(g.gone)
}

// Bounds of the watch over a group that outlived the teardown (a member
// in uninterruptible sleep, on a dead NFS mount or a stuck device): the
// OS gives no event for its end, so it is polled, slowly, for good.
const (
	lateWatchMin = time.Second
	lateWatchMax = time.Minute
)

// watchLate returns once the child has exited and its group is empty,
// probing at lateWatchMin, doubling up to lateWatchMax. Until then the
// generation is stuck (Gone open); after, Gone closes: the late close
// signal the supervisor waits for (docs/design.md §6).
func (g *stdioGen) watchLate() {
	for d := lateWatchMin; ; d = min(2*d, lateWatchMax) {
		t := g.clock.Timer(d)
		<-t.C
		if isClosed(g.exited) && !g.groupAlive(g.pgid) {
			return
		}
	}
}

// waitQuiet waits up to grace (on the clock) for the child to have exited
// and its group to be empty (the unreaped leader aside), and reports
// whether that is so. A close of cut ends the wait early, as the deadline
// does.
func (g *stdioGen) waitQuiet(grace time.Duration, cut <-chan struct{}) bool {
	deadline := g.clock.Timer(grace)
	defer deadline.Stop()
	poll := groupPollMin
	for {
		var (
			exited <-chan struct{}
			tick   *time.Timer
			tickC  <-chan time.Time
		)
		select {
		case <-g.exited:
			if !g.groupAlive(g.pgid) {
				return true
			}
			tick = time.NewTimer(poll)
			tickC = tick.C
			poll = min(2*poll, groupPollMax)
		default:
			exited = g.exited
		}
		select {
		case <-exited:
		case <-tickC:
		case <-deadline.C:
			if tick != nil {
				tick.Stop()
			}
			return isClosed(g.exited) && !g.groupAlive(g.pgid)
		case <-cut:
			if tick != nil {
				tick.Stop()
			}
			return isClosed(g.exited) && !g.groupAlive(g.pgid)
		}
		if tick != nil {
			tick.Stop()
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
