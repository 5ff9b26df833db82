//go:build !linux

package benchsuite

import (
	"context"
	"errors"
	"time"
)

// watchExit: no pidfds here.
func watchExit(int) <-chan time.Time { return nil }

// kernelExitGap: no pidfds here.
func kernelExitGap(context.Context, string) (time.Duration, error) {
	return 0, errors.New("no pidfd")
}
