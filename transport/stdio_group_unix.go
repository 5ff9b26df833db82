//go:build unix

package transport

import (
	"errors"
	"syscall"
)

// groupAlive reports whether process group pgid still has a member that
// holds resources.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	return groupHasLiveMember(pgid)
}

// signalGroup sends sig to every process of group pgid. ESRCH (nobody left)
// is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
