package transport

import (
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// waitExited blocks until process pid (a child of this process) has
// exited, and returns its status without reaping it: the child stays a
// zombie, and a later cmd.Wait reaps it. This is waitid(P_PID, pid,
// WEXITED|WNOWAIT). An error (ECHILD when SIGCHLD is ignored, so the
// kernel reaps by itself) means the caller must reap it at once instead.
func waitExited(pid int) (syscall.WaitStatus, error) {
	var si siginfoChild
	for {
		err := unix.Waitid(unix.P_PID, pid, (*unix.Siginfo)(unsafe.Pointer(&si)), unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			return si.waitStatus(), nil
		}
		if err != unix.EINTR {
			return 0, err
		}
	}
}

// is64bit is 1 on 64-bit hosts, where siginfo_t pads its union to 8 bytes.
const is64bit = int(^uintptr(0) >> 63)

// siginfoChild is Linux's siginfo_t as waitid fills it for a child (the
// layout Go's own os package uses; 128 bytes, as unix.Siginfo).
type siginfoChild struct {
	Signo int32
	// Errno and Code, in this order except on MIPS.
	errnoOrCode, codeOrErrno int32
	_                        [is64bit]int32
	Pid                      int32
	Uid                      uint32
	Status                   int32
	_                        [128 - (6+is64bit)*4]byte
}

// Both are 128 bytes: either difference underflowing fails the build.
var _ [unsafe.Sizeof(unix.Siginfo{}) - unsafe.Sizeof(siginfoChild{})]struct{}
var _ [unsafe.Sizeof(siginfoChild{}) - unsafe.Sizeof(unix.Siginfo{})]struct{}

// si_code values of SIGCHLD.
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

func (s *siginfoChild) code() int32 {
	if strings.HasPrefix(runtime.GOARCH, "mips") {
		return s.errnoOrCode
	}
	return s.codeOrErrno
}

// waitStatus is the wait(2) status the kernel will report when the child
// is reaped.
func (s *siginfoChild) waitStatus() syscall.WaitStatus {
	switch s.code() {
	case cldExited:
		return syscall.WaitStatus(s.Status << 8)
	case cldDumped:
		return syscall.WaitStatus(s.Status) | 0x80
	case cldKilled:
		return syscall.WaitStatus(s.Status)
	default: // not for WEXITED: a stop or continue
		return syscall.WaitStatus(s.Status<<8) | 0x7f
	}
}
