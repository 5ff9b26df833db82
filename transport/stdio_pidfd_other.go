//go:build unix && !linux

package transport

import "syscall"

// askPidfd: no pidfds here.
func askPidfd(*syscall.SysProcAttr) *int { return nil }

// awaitExit is waitExited (pidfd is always -1 here).
func awaitExit(_, pid int) (syscall.WaitStatus, error) { return waitExited(pid) }

// ExitWatch names how stdio generations learn of their child's exit on
// this platform.
func ExitWatch() string { return exitWatchName }
