package authfixture

import (
	"context"
	"io"
	"net"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EchoServer is an MCP server with one tool: echo {text} answers
// "echo:<text>".
func EchoServer() *mcp.Server {
	ms := mcp.NewServer(&mcp.Implementation{Name: "guarded", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(ms, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo:" + a.Text}}}, nil, nil
	})
	return ms
}

// Listening is a fixture served on a loopback port, guarding ms over
// Streamable HTTP.
type Listening struct {
	*Server
	// URL is the guarded MCP endpoint.
	URL  string
	ms   *mcp.Server
	srv  *http.Server
	done chan struct{}
}

// Listen serves a fixture guarding ms on a free loopback port; stateless
// selects the 2026-07-28 era (no sessions).
func Listen(ms *mcp.Server, stateless bool, o Options) (*Listening, error) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms },
		&mcp.StreamableHTTPOptions{Stateless: stateless})
	fx := New(h, o)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &Listening{Server: fx, URL: "http://" + ln.Addr().String() + "/mcp", ms: ms,
		srv: &http.Server{Handler: fx}, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		_ = l.srv.Serve(ln)
	}()
	return l, nil
}

// Close stops serving and ends the MCP server's sessions.
func (l *Listening) Close() {
	_ = l.srv.Close()
	<-l.done
	for ss := range l.ms.Sessions() {
		_ = ss.Close()
	}
}

// Redirected is a browser on another machine: it opens the authorization
// URL and returns the address it is redirected to, without following it
// (the person copies it from the address bar).
func Redirected(authURL string) (string, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Header.Get("Location"), nil
}

// Browse is a browser on this machine: it follows the redirect to the
// loopback port.
func Browse(authURL string) error {
	resp, err := http.Get(authURL)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}
