//go:build unix && !linux && !darwin

package transport

import (
	"errors"
	"syscall"
)

// waitExited is not implemented here: the caller reaps the child at once
// (its pgid is then not pinned, so the teardown no longer signals the
// group; a group that outlives its leader then never proves empty by
// signals, and the supervisor takes the stuck path).
func waitExited(pid int) (syscall.WaitStatus, error) {
	return 0, errors.ErrUnsupported
}

// exitWatchName is ExitWatch's answer here.
const exitWatchName = "none: the child is reaped at once"
