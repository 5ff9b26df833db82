package oauth

import (
	"bufio"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/authfixture"
)

// wait bounds every wait of these tests.
const wait = 10 * time.Second

// authServer is the fixture on a loopback port, guarding an echo server.
type authServer struct {
	*authfixture.Listening
	url string
}

func newAuthServer(t *testing.T, o authfixture.Options) *authServer {
	t.Helper()
	l, err := authfixture.Listen(authfixture.EchoServer(), false, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return &authServer{Listening: l, url: l.URL}
}

var browse = authfixture.Browse

// pasteLogin runs Login the headless way: the test reads the printed
// authorization URL, "opens" it elsewhere (a client that does not follow
// the redirect) and pastes the redirected address.
func pasteLogin(t *testing.T, store *Store, target Target) (TokenStatus, string) {
	t.Helper()
	outR, outW := io.Pipe()
	inR, inW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	type result struct {
		st  TokenStatus
		err error
	}
	res := make(chan result, 1)
	go func() {
		st, err := Login(ctx, LoginOptions{Target: target, Store: store, Out: outW, In: inR})
		outW.Close()
		res <- result{st, err}
	}()
	var printed strings.Builder
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(outR)
		pasted := false
		for sc.Scan() {
			line := sc.Text()
			printed.WriteString(line + "\n")
			if u := strings.TrimSpace(line); !pasted && strings.HasPrefix(u, "http://") && strings.Contains(u, "/authorize?") {
				pasted = true
				to, err := authfixture.Redirected(u)
				if err != nil {
					t.Errorf("authorize: %v", err)
					continue
				}
				go func() { _, _ = io.WriteString(inW, "not a url\n"+to+"\n") }()
			}
		}
	}()
	r := <-res
	inW.Close()
	wg.Wait()
	if r.err != nil {
		t.Fatalf("Login: %v\n%s", r.err, printed.String())
	}
	return r.st, printed.String()
}
