package mcpkeep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/mcpkeep/mcpkeep/transport"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// endingGen is a transport generation whose teardown began (or not) on
// its own, as an HTTP generation's does when a sign-in is refused.
type endingGen struct {
	ending bool
	cause  error
}

func (g *endingGen) Transport() mcp.Transport { return nil }
func (g *endingGen) Gone() <-chan struct{}    { return nil }
func (g *endingGen) Terminate()               {}
func (g *endingGen) Exit() transport.ExitInfo { return transport.ExitInfo{Cause: g.cause} }
func (g *endingGen) Ending() bool             { return g.ending }

// A bare EOF from the SDK over Streamable HTTP is the server's answer
// without a result while the connection lives (malformed, §19), but the
// connection's end once the transport began its own teardown before the
// generation ended (a refused sign-in: the call says to sign in, §22).
// TestHTTPSignIn/stateful met the second as "malformed" about once in
// four runs on a loaded machine.
func TestSettleBareEOFWhileTheTransportEnds(t *testing.T) {
	signIn := &transport.SignInRequiredError{Server: "remote"}
	bare := fmt.Errorf("calling %q: %w", "tools/call", io.EOF)
	for _, tc := range []struct {
		name      string
		gen       *endingGen
		malformed bool
	}{
		{"live", &endingGen{}, true},
		{"ending for a sign-in", &endingGen{ending: true, cause: signIn}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &generation{n: 2, ctx: context.Background(), tg: tc.gen}
			sent, err := g.settle(context.Background(), "remote", bare)
			if !sent {
				t.Errorf("sent = false, want true (the request went out)")
			}
			if got := errors.Is(err, transport.ErrMalformedAnswer); got != tc.malformed {
				t.Errorf("malformed = %v (%v), want %v", got, err, tc.malformed)
			}
			if !tc.malformed && (!errors.Is(err, ErrConnectionLost) || !errors.Is(err, ErrSignInRequired)) {
				t.Errorf("err = %v, want the connection lost with the sign-in cause", err)
			}
		})
	}
}
