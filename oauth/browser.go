package oauth

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
)

// ErrNoBrowser: this machine has no browser that OpenBrowser knows how to
// start (no desktop session, no $BROWSER).
var ErrNoBrowser = errors.New("no browser on this machine")

// OpenBrowser opens url with $BROWSER, else the desktop's opener (open on
// macOS; xdg-open where a display is set). It does not wait for the
// browser. Login's caller passes it as LoginOptions.OpenBrowser.
func OpenBrowser(url string) error {
	var cmd *exec.Cmd
	switch {
	case os.Getenv("BROWSER") != "":
		cmd = exec.Command(os.Getenv("BROWSER"), url)
	case runtime.GOOS == "darwin":
		cmd = exec.Command("open", url)
	case os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "":
		cmd = exec.Command("xdg-open", url)
	default:
		return ErrNoBrowser
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reap it; the browser outlives us
	return nil
}
