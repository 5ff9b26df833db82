package privatefile

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(envCrashChild); path != "" {
		crashChild(path) // never returns: the parent kills it
	}
	goleak.VerifyTestMain(m)
}
