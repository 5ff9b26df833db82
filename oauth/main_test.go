package oauth

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(envRefreshChild) != "" {
		os.Exit(refreshChild()) // a second process of TestTwoProcessesRefreshOneStore
	}
	goleak.VerifyTestMain(m)
}
