package oauth

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpkeep/mcpkeep/internal/authfixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wait bounds every wait of these tests.
const wait = 10 * time.Second

// authServer is the fixture on a loopback port, guarding an echo server.
type authServer struct {
	*authfixture.Server
	url string // the MCP endpoint
}

func newAuthServer(t *testing.T, o authfixture.Options) *authServer {
	t.Helper()
	ms := mcp.NewServer(&mcp.Implementation{Name: "guarded", Version: "1"}, nil)
	mcp.AddTool(ms, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo:" + a.Text}}}, nil, nil
	})
	fx := authfixture.New(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, nil), o)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: fx}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
		for ss := range ms.Sessions() {
			_ = ss.Close()
		}
	})
	return &authServer{Server: fx, url: "http://" + ln.Addr().String() + "/mcp"}
}

// noRedirects is a client that stops at the authorization server's
// redirect: a browser on another machine, whose address bar the person
// copies.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// browse is a browser on this machine: it follows the redirect to the
// loopback port.
func browse(u string) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

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
				resp, err := noRedirects.Get(u)
				if err != nil {
					t.Errorf("authorize: %v", err)
					continue
				}
				resp.Body.Close()
				go func() { _, _ = io.WriteString(inW, "not a url\n"+resp.Header.Get("Location")+"\n") }()
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
