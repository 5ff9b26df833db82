//go:build !linux

package transport

import (
	"context"
	"log/slog"
	"os"
)

// IsInit reports whether this process is PID 1. Only Linux has child
// subreapers and PID namespaces where mcpkeep would be an init.
func IsInit() bool { return os.Getpid() == 1 }

// StartReaper does nothing here: only Linux hands orphans to mcpkeep (as
// PID 1 of a container's namespace).
func StartReaper(ctx context.Context, logger *slog.Logger) (stop func()) { return func() {} }

func beginSpawn() (end func()) { return func() {} }
func ownLeader(pid int)        {}
func disownLeader(pid int)     {}
