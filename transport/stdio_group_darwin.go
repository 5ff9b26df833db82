package transport

import "golang.org/x/sys/unix"

// groupHasLiveMember reports whether a process of group pgid is not a
// zombie, from the process table (sysctl kern.proc.pgrp). kill(-pgid, 0)
// also counts zombies, and the group's leader stays one until its group is
// empty (see stdioGen). If the table cannot be read, kill's answer stands.
func groupHasLiveMember(pgid int) bool {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", pgid)
	if err != nil {
		return true
	}
	for i := range kps {
		if kps[i].Proc.P_stat != szomb {
			return true
		}
	}
	return false
}
