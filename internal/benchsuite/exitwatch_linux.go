package benchsuite

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/fixture"
	"golang.org/x/sys/unix"
)

// watchExit returns a channel that receives the moment the process pid
// exits, as seen by a watcher of the bench's own: a pidfd polled on a
// thread of its own, so the moment is the kernel's exit notification plus
// one thread wake-up, independent of the transport under test. Nil where
// pidfds are missing.
func watchExit(pid int) <-chan time.Time {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil
	}
	at := make(chan time.Time, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer unix.Close(fd)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, int(waitLimit/time.Millisecond))
			if err == unix.EINTR {
				continue
			}
			if err == nil && fds[0].Revents != 0 {
				at <- time.Now()
			}
			close(at)
			return
		}
	}()
	return at
}

// kernelExitGap spawns the fixture in mode (which must exit on its own)
// with no transport around it and returns how long after its stdout's end
// of file the kernel notifies its exit: the wait of any transport that
// reports the loss with the exit status, as mcpkeep does.
func kernelExitGap(ctx context.Context, mode string) (time.Duration, error) {
	path, args, env := fixture.Command(mode)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer cmd.Wait()
	exit := watchExit(cmd.Process.Pid)
	if exit == nil {
		cmd.Process.Kill()
		return 0, errors.New("no pidfd")
	}
	_, _ = io.Copy(io.Discard, stdout)
	eof := time.Now()
	at, ok := <-exit
	if !ok {
		return 0, errors.New("the exit was not seen")
	}
	return at.Sub(eof), nil
}
