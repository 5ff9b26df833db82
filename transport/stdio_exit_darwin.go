package transport

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// szomb is SZOMB of <sys/proc.h>: an exited process not yet reaped.
const szomb = 5

// exitRecheck is how often waitExited looks at the process table itself
// while it waits for the kqueue event; it matters only in the race below.
const exitRecheck = 50 * time.Millisecond

// waitExited blocks until process pid (a child of this process) has
// exited, and returns its status without reaping it: the child stays a
// zombie, and a later cmd.Wait reaps it.
//
// macOS's waitid(WNOWAIT) is not reliable (Go's os package stopped using
// it, golang.org/issue/19314), so the exit is seen through kqueue
// (EVFILT_PROC, NOTE_EXIT|NOTE_EXITSTATUS: the event carries the status)
// and, as a safety net, through the process table (sysctl kern.proc.pid:
// state SZOMB, status p_xstat), checked at once and every exitRecheck:
// kqueue does not attach to a zombie (ESRCH) and reports only exits after
// it attached. An error means the caller must reap it at once instead.
func waitExited(pid int) (syscall.WaitStatus, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return 0, err
	}
	defer unix.Close(kq)
	var ev unix.Kevent_t
	unix.SetKevent(&ev, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev.Fflags = unix.NOTE_EXIT | unix.NOTE_EXITSTATUS
	for {
		_, err = unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil)
		if err != unix.EINTR {
			break
		}
	}
	attached := err == nil
	if !attached && err != unix.ESRCH {
		return 0, err
	}
	ts := unix.NsecToTimespec(int64(exitRecheck))
	out := make([]unix.Kevent_t, 1)
	for {
		ws, zombie, zerr := zombieStatus(pid)
		switch {
		case zerr != nil:
			return 0, zerr
		case zombie:
			return ws, nil
		case !attached:
			return 0, unix.ESRCH // neither running nor a zombie
		}
		n, kerr := unix.Kevent(kq, nil, out, &ts)
		if kerr != nil && kerr != unix.EINTR {
			return 0, kerr
		}
		if n == 1 && out[0].Fflags&unix.NOTE_EXIT != 0 {
			if out[0].Fflags&unix.NOTE_EXITSTATUS != 0 {
				return syscall.WaitStatus(out[0].Data), nil
			}
			attached = false // the table has the status
		}
	}
}

// zombieStatus reports whether pid is a zombie and, if so, its status.
func zombieStatus(pid int) (syscall.WaitStatus, bool, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return 0, false, err
	}
	if kp.Proc.P_stat != szomb {
		return 0, false, nil
	}
	return syscall.WaitStatus(kp.Proc.P_xstat), true, nil
}

// exitWatchName is ExitWatch's answer here.
const exitWatchName = "kqueue EVFILT_PROC"
