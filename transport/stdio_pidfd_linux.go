package transport

import (
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// askPidfd makes the start of a child also hand back a pidfd for it
// (clone's CLONE_PIDFD, through exec): the returned int holds it after a
// successful Start, or -1 where the kernel gives none. The caller owns it;
// awaitExit closes it.
func askPidfd(attr *syscall.SysProcAttr) *int {
	fd := -1
	attr.PidFD = &fd
	return &fd
}

// exitWatch is the mechanism the last generation's waiter used (see
// ExitWatch).
var exitWatch atomic.Value

// awaitExit is waitExited for a child with a pidfd (>= 0): the waiter
// parks in the runtime's poller until the pidfd turns readable (the child
// exited), instead of holding an OS thread in waitid per child, and
// waitid(P_PIDFD, WNOWAIT) then reads the status without reaping. It
// closes the pidfd. Without one, or where the kernel refuses waitid on it
// (P_PIDFD is Linux 5.4), it falls back to waitExited on the pid.
func awaitExit(pidfd, pid int) (syscall.WaitStatus, error) {
	if pidfd < 0 {
		exitWatch.Store(watchWaitid)
		return waitExited(pid)
	}
	ws, err := waitPidfd(pidfd)
	if err == unix.EINVAL || err == unix.ENOSYS || err == unix.EBADF {
		exitWatch.Store(watchWaitid)
		return waitExited(pid)
	}
	exitWatch.Store(watchPidfd)
	return ws, err
}

const (
	watchPidfd  = "pidfd (poll, waitid P_PIDFD)"
	watchWaitid = "waitid P_PID (a thread per child)"
)

// waitPidfd waits, in the poller, for the child of pidfd to exit and
// returns its status, leaving it a zombie. It closes pidfd.
func waitPidfd(pidfd int) (syscall.WaitStatus, error) {
	if err := unix.SetNonblock(pidfd, true); err != nil {
		unix.Close(pidfd)
		return 0, err
	}
	// Non-blocking, so NewFile registers it with the poller (epoll takes
	// pidfds: readable once the process exited).
	f := os.NewFile(uintptr(pidfd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var (
		si   siginfoChild
		werr error
	)
	if err := rc.Read(func(fd uintptr) bool {
		for {
			si = siginfoChild{}
			werr = unix.Waitid(unix.P_PIDFD, int(fd), (*unix.Siginfo)(unsafe.Pointer(&si)), unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
			if werr != unix.EINTR {
				break
			}
		}
		// WNOHANG on a running child: no error and no pid. Wait for
		// the pidfd to be readable, then ask again.
		return werr != nil || si.Pid != 0
	}); err != nil {
		return 0, err
	}
	if werr != nil {
		return 0, werr
	}
	return si.waitStatus(), nil
}

// ExitWatch names how the last stdio generation started by this process
// learnt of its child's exit on this platform: "pidfd (poll, waitid
// P_PIDFD)", or "waitid P_PID (a thread per child)" where the kernel has
// no pidfds; empty before the first exit.
func ExitWatch() string {
	s, _ := exitWatch.Load().(string)
	return s
}
