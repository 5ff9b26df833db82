//go:build !linux && !darwin

package oauth

import (
	"sync"
	"time"
)

// lockFile without flock: the handlers of one process still exclude each
// other (one mutex for every entry), processes do not (docs/design.md
// §22 promises several processes on Linux and darwin only).
func lockFile(string, time.Duration) (func(), error) {
	processLock.Lock()
	return processLock.Unlock, nil
}

var processLock sync.Mutex
