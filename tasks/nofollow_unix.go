//go:build unix

package tasks

import "syscall"

// noFollow refuses to open a record path that became a link after Lstat.
const noFollow = syscall.O_NOFOLLOW
