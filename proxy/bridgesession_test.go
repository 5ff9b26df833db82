package proxy

import (
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A bridge is bound to the session of stdio and of a stateful HTTP
// session, and to none for a request served statelessly (its session
// lasts one request): TestBothErasAtOneEndpoint is the round trip.
func TestBridgeSessionOfEachFront(t *testing.T) {
	ss := new(mcp.ServerSession)
	stateful := http.Header{}
	stateful.Set(sessionIDHeader, "abc")
	for _, c := range []struct {
		name  string
		extra *mcp.RequestExtra
		want  *mcp.ServerSession
	}{
		{"stdio", nil, ss},
		{"no header", &mcp.RequestExtra{}, ss},
		{"stateful HTTP", &mcp.RequestExtra{Header: stateful}, ss},
		{"stateless HTTP", &mcp.RequestExtra{Header: http.Header{}}, nil},
	} {
		if got := bridgeSession(ss, c.extra); got != c.want {
			t.Errorf("%s: bound to %p, want %p", c.name, got, c.want)
		}
	}
}
