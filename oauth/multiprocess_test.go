package oauth

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/authfixture"
	"github.com/mcpkeep/mcpkeep/transport"
)

// The child's settings: set, the test binary is a refreshing process.
const (
	envRefreshChild = "MCPKEEP_TEST_REFRESH_CHILD" // the store's directory
	envRefreshURL   = "MCPKEEP_TEST_REFRESH_URL"
	envRefreshCount = "MCPKEEP_TEST_REFRESH_COUNT"
)

// refreshReport is what a child prints when it is done.
type refreshReport struct {
	SignIn int      `json:"signIn"`
	Errors []string `json:"errors"`
}

// refreshChild refreshes the store's token COUNT times (every token is
// within EarlyRefresh of its expiry, so each Token refreshes), after the
// parent says go on stdin, and prints a refreshReport.
func refreshChild() int {
	n, _ := strconv.Atoi(os.Getenv(envRefreshCount))
	h := NewHandler(HandlerOptions{Target: Target{Server: "stress", URL: os.Getenv(envRefreshURL)},
		Store: &Store{Dir: os.Getenv(envRefreshChild)}, EarlyRefresh: 2 * time.Hour})
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return 2
	}
	var rep refreshReport
	for range n {
		_, err := h.token()
		switch {
		case errors.Is(err, transport.ErrSignInRequired):
			rep.SignIn++
		case err != nil:
			rep.Errors = append(rep.Errors, err.Error())
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		return 2
	}
	return 0
}

// TestTwoProcessesRefreshOneStore: two processes share one store and
// refresh one token at once against an authorization server that rotates
// refresh tokens: 100 refreshes, no sign-in required, no token lost (the
// last stored refresh token still works) (issue 33 item 3,
// docs/design.md §22).
func TestTwoProcessesRefreshOneStore(t *testing.T) {
	const perChild = 50
	as, store, target := signedIn(t, authfixture.Options{}, Client{}, nil)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type child struct {
		cmd *exec.Cmd
		in  io.WriteCloser
		out *bufio.Reader
	}
	var kids []*child
	for range 2 {
		cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), envRefreshChild+"="+store.Dir, envRefreshURL+"="+target.URL,
			envRefreshCount+"="+strconv.Itoa(perChild))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		k := &child{cmd: cmd, in: in, out: bufio.NewReader(out)}
		kids = append(kids, k)
		t.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	}
	// Both ready before either starts: their refreshes overlap.
	for _, k := range kids {
		if line, err := k.out.ReadString('\n'); err != nil || line != "ready\n" {
			t.Fatalf("child: %q %v", line, err)
		}
	}
	for _, k := range kids {
		if _, err := io.WriteString(k.in, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	for i, k := range kids {
		var rep refreshReport
		if err := json.NewDecoder(k.out).Decode(&rep); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
		if rep.SignIn != 0 || len(rep.Errors) != 0 {
			t.Errorf("child %d: %d sign-ins required, errors %q", i, rep.SignIn, rep.Errors)
		}
		if err := k.cmd.Wait(); err != nil {
			t.Errorf("child %d: %v", i, err)
		}
	}
	if c := as.Counts(); c.Refreshes != 2*perChild || c.RefusedRefreshes != 0 {
		t.Errorf("counts %+v, want %d refreshes and none refused", c, 2*perChild)
	}
	// No token lost: the stored refresh token is the live one.
	h := NewHandler(HandlerOptions{Target: target, Store: store, EarlyRefresh: 2 * time.Hour})
	if _, err := token(t, h); err != nil {
		t.Fatalf("refreshing the stored token after the run: %v", err)
	}
}
