package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Warm builds, ahead of a host's first call, what the fast path's first
// call would otherwise build while the host waits (docs/design.md §20,
// §24): the JSON codecs of a call's params and _meta and of the answer's
// check (plainResult), which segmentio/encoding makes on a type's first
// use, about 15-70 µs each (more than the rest of a warm call's work).
// It runs the fast path's own parsers over sample messages, so what they
// build is what a call uses. Once a process is enough; it is safe
// beside calls. A non-nil error names a sample the fast path refused:
// its codecs may be left unbuilt (a test's concern, not a caller's).
func Warm() error {
	params := json.RawMessage(`{"name":"s__echo","arguments":{"text":"x"},"_meta":{"progressToken":"t",` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"h","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}`)
	p, ok := parseParams(params)
	if !ok {
		return errors.New("proxy: warm: the call's params were refused")
	}
	if _, ok := parseMeta(p.Meta); !ok {
		return errors.New("proxy: warm: the call's _meta was refused")
	}
	if _, ok := paramsMeta(params); !ok {
		return errors.New("proxy: warm: a request's _meta was refused")
	}
	var hm hostMetas
	if _, ok := hm.capabilities(json.RawMessage(`{"name":"h","version":"1"}`), json.RawMessage(`{"roots":{}}`)); !ok {
		return errors.New("proxy: warm: the host's capabilities were refused")
	}
	for _, modern := range []bool{true, false} {
		res := `{"content":[{"type":"text","text":"x"},{"type":"image","data":"eA==","mimeType":"image/png"}],"isError":false`
		if modern {
			res += `,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}`
		}
		if !plainResult(json.RawMessage(res+`}`), modern) {
			return fmt.Errorf("proxy: warm: a plain result was refused (2026-07-28: %v)", modern)
		}
	}
	return nil
}
