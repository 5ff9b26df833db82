package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Both eras at one front door (docs/design.md §24). The go-sdk's HTTP
// handler serves one era per endpoint: stateful serves only the legacy
// lifecycle (it refuses a 2026-07-28 request), stateless serves
// 2026-07-28 but no server-to-host request of a legacy session. /mcp
// holds one of each over the same front server and picks per request:
//
//   - a request with an Mcp-Session-Id belongs to a legacy session: the
//     stateful handler (which answers 404 for a session it does not
//     know, so the host initializes again);
//   - a request without one that says it is 2026-07-28, by its
//     Mcp-Protocol-Version header or by the protocol version in its
//     body's _meta, is served statelessly: the SDK's handler checks that
//     header and body agree (Mcp-Protocol-Version, Mcp-Method, Mcp-Name)
//     and answers a mismatch with the spec's error;
//   - anything else (initialize, a legacy host's first GET or a
//     sessionless legacy request) goes to the stateful handler, as before.
//
// The checks in front of /mcp (bearer token, Origin, the write bound)
// wrap the dispatcher, so both eras get them; the Host check against DNS
// rebinding is each SDK handler's own.

// eraMux dispatches one /mcp request to the handler of its era.
type eraMux struct {
	legacy, modern http.Handler
}

func (e *eraMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if modernRequest(r) {
		e.modern.ServeHTTP(w, r)
		return
	}
	e.legacy.ServeHTTP(w, r)
}

// Header names of the Streamable HTTP transport.
const (
	sessionIDHeader       = "Mcp-Session-Id"
	protocolVersionHeader = "Mcp-Protocol-Version"
)

// eraPeekLimit bounds how much of a sessionless POST's body is read to
// find its era. A body longer than this goes to the legacy handler with
// its bytes intact (no 2026-07-28 request the suite or a host sends
// comes near it; a legacy initialize is small).
const eraPeekLimit = 1 << 20

// modernRequest reports whether r is a 2026-07-28 request (see eraMux).
// It may read r's body; r.Body is then replaced by one that yields the
// same bytes.
func modernRequest(r *http.Request) bool {
	if r.Header.Get(sessionIDHeader) != "" {
		return false
	}
	if v := r.Header.Get(protocolVersionHeader); v >= modernVersion {
		return true
	}
	if r.Method != http.MethodPost || r.Body == nil {
		return false
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, eraPeekLimit+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil || len(head) > eraPeekLimit {
		return false
	}
	return bodySaysModern(head)
}

// bodySaysModern reports whether a JSON-RPC message carries the
// 2026-07-28 _meta protocol version (any version there at all: a request
// whose header and body disagree is the stateless handler's to refuse
// with the spec's error). A batch is legacy: 2026-07-28 has none.
func bodySaysModern(body []byte) bool {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method == "initialize" {
		return false
	}
	_, ok := msg.Params.Meta[mcp.MetaKeyProtocolVersion]
	return ok
}
