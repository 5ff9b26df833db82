package transport

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// reapTick is the reaper's safety net beside SIGCHLD: signals coalesce,
// and a child's list can miss one being reparented at that moment.
const reapTick = 5 * time.Second

// owned is the registry of the stdio generations' leaders, process-wide:
// the reaper never reaps them. A leader's zombie pins its process group's
// id until its generation is done signalling the group (see stdioGen), and
// its waiter reaps it then; reaped by anyone else, the group id could be
// handed out again while the teardown still signals it.
var owned struct {
	// spawn is held shared by Open from before the fork until the new
	// leader is registered, and exclusively by a reaper's sweep: a leader
	// that dies at once is never seen unregistered.
	spawn sync.RWMutex
	mu    sync.Mutex // guards pids
	pids  map[int]struct{}
}

// beginSpawn is called by Open before it starts a child, and the function
// it returns once the child's pid is registered (or the start failed).
func beginSpawn() (end func()) {
	owned.spawn.RLock()
	return owned.spawn.RUnlock
}

// ownLeader registers pid as a generation's leader.
func ownLeader(pid int) {
	owned.mu.Lock()
	if owned.pids == nil {
		owned.pids = map[int]struct{}{}
	}
	owned.pids[pid] = struct{}{}
	owned.mu.Unlock()
}

// disownLeader is called once the leader was reaped by its own waiter.
func disownLeader(pid int) {
	owned.mu.Lock()
	delete(owned.pids, pid)
	owned.mu.Unlock()
}

func isOwnedLeader(pid int) bool {
	owned.mu.Lock()
	defer owned.mu.Unlock()
	_, ok := owned.pids[pid]
	return ok
}

// IsInit reports whether orphaned processes are handed to this process: it
// is PID 1 of its PID namespace (the container's entrypoint, as
// docs/kubernetes.md runs mcpkeep), or a child subreaper
// (PR_SET_CHILD_SUBREAPER, set by whoever exec'd it). Then nobody else
// reaps the grandchildren a server's wrapper (sh -c, npx, uvx) leaves
// behind when it dies.
func IsInit() bool {
	if os.Getpid() == 1 {
		return true
	}
	var v int32
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&v)), 0, 0, 0)
	return err == nil && v != 0
}

// StartReaper reaps orphaned zombies when IsInit, until ctx ends or stop
// is called (stop waits for it). Elsewhere it does nothing. As PID 1 it
// logs a warning once: an init (docker run --init, tini) does this job
// and more (docs/kubernetes.md).
//
// The reaper reaps, one pid at a time (never wait4(-1), which would take
// the stdio generations' leaders too), each zombie child that is neither
// a live generation's leader nor in mcpkeep's own process group: a child
// spawned by other code of this process without a group of its own is
// left to its own Wait. It sweeps at every SIGCHLD and every 5 s.
func StartReaper(ctx context.Context, logger *slog.Logger) (stop func()) {
	if !IsInit() {
		return func() {}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if os.Getpid() == 1 {
		logger.Warn("running as PID 1: mcpkeep reaps the orphaned processes its servers leave, " +
			"but an init (docker run --init, tini) is the better PID 1; see docs/kubernetes.md")
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	go func() {
		defer close(done)
		defer signal.Stop(sigs)
		tick := time.NewTicker(reapTick)
		defer tick.Stop()
		for {
			for _, r := range sweepOrphans() {
				logger.Debug("reaped an orphaned process", "pid", r.pid, "status", waitStatusString(r.status))
			}
			select {
			case <-ctx.Done():
				return
			case <-sigs:
			case <-tick.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

type reapedOrphan struct {
	pid    int
	status syscall.WaitStatus
}

// sweepOrphans reaps every zombie child that is not an owned leader and
// not in this process's group, and returns them.
func sweepOrphans() []reapedOrphan {
	owned.spawn.Lock()
	defer owned.spawn.Unlock()
	self, pgrp := os.Getpid(), unix.Getpgrp()
	var out []reapedOrphan
	for _, pid := range childrenOf(self) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		state, ppid, pg, ok := parseStatParent(b)
		if !ok || state != 'Z' || ppid != self || pg == pgrp || isOwnedLeader(pid) {
			continue
		}
		var ws unix.WaitStatus
		for {
			wpid, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			if err == unix.EINTR {
				continue
			}
			if err == nil && wpid == pid {
				out = append(out, reapedOrphan{pid, syscall.WaitStatus(ws)})
			}
			break
		}
	}
	return out
}

// childrenOf lists the children of process pid: each of its threads'
// /proc/pid/task/tid/children (an orphan is handed to one of the
// reaper's threads), or, where the kernel has no such file, every
// process in /proc (sweepOrphans checks each one's parent).
func childrenOf(pid int) []int {
	task := "/proc/" + strconv.Itoa(pid) + "/task/"
	tids, err := os.ReadDir(task)
	if err != nil {
		return allPids()
	}
	var out []int
	for _, t := range tids {
		b, err := os.ReadFile(task + t.Name() + "/children")
		if err != nil {
			if os.IsNotExist(err) {
				if _, serr := os.Stat(task + t.Name()); serr == nil {
					return allPids() // no CONFIG_PROC_CHILDREN
				}
			}
			continue // the thread ended
		}
		for _, f := range strings.Fields(string(b)) {
			if c, ok := parsePid(f); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

func allPids() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		if pid, ok := parsePid(e.Name()); ok {
			out = append(out, pid)
		}
	}
	return out
}

// parseStatParent parses the state, parent and process group out of a
// /proc/pid/stat file (fields after comm's last ')': state ppid pgrp).
func parseStatParent(b []byte) (state byte, ppid, pgrp int, ok bool) {
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 || len(f[0]) != 1 {
		return 0, 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return 0, 0, 0, false
	}
	return f[0][0], ppid, pgrp, true
}
