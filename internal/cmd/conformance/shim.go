package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
)

// The proxy exposes a server's tools and prompts as "<server>__<name>"
// (docs/design.md §9, §14) while the suite asks for the names its test
// servers define. The shim sits between them and allows for exactly those
// prefixes: it adds one to the names the suite sends (tools/call,
// prompts/get, a prompt's completion ref, the Mcp-Name header of a
// tools/call or prompts/get), the prefix of the server that offers the
// name (owned: the tasks server's tools), else the default one (the
// everything-server's), and strips any of them from the lists the proxy
// answers. Everything else passes byte for byte, the Host header included
// (the DNS rebinding scenario sends its own), and task ids too: they are
// not names (docs/design.md §25).
type shim struct {
	prefix string // of a name no other server owns
	owned  map[shimName]string
	rp     *httputil.ReverseProxy
}

// A shimName is a tool's or a prompt's name (kind "tool" or "prompt") as
// its server offers it.
type shimName struct{ kind, name string }

// newShim is a shim in front of target: a name in owned gets its prefix,
// any other prefix.
func newShim(target *url.URL, prefix string, owned map[shimName]string) *shim {
	s := &shim{prefix: prefix, owned: owned}
	s.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = target.Scheme, target.Host
			pr.Out.URL.Path = target.Path
			pr.Out.Host = pr.In.Host
			if pr.In.Method == http.MethodPost && pr.In.Body != nil {
				b, err := io.ReadAll(pr.In.Body)
				if err == nil {
					b = s.request(b)
				}
				pr.Out.Body = io.NopCloser(bytes.NewReader(b))
				pr.Out.ContentLength = int64(len(b))
			}
			s.nameHeader(pr.Out.Header)
		},
		ModifyResponse: func(resp *http.Response) error {
			switch ct := resp.Header.Get("Content-Type"); {
			case strings.HasPrefix(ct, "text/event-stream"):
				resp.Body = s.events(resp.Body)
			case strings.HasPrefix(ct, "application/json"):
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					return err
				}
				b = s.response(b)
				resp.Body = io.NopCloser(bytes.NewReader(b))
				resp.ContentLength = int64(len(b))
				resp.Header.Del("Content-Length")
			}
			return nil
		},
		// Event streams are relayed as they come.
		FlushInterval: -1,
	}
	return s
}

// prefixed is name as the proxy offers it.
func (s *shim) prefixed(kind, name string) string {
	if p, ok := s.owned[shimName{kind, name}]; ok {
		return p + name
	}
	return s.prefix + name
}

// unprefixed is a listed name without its server's prefix, and whether it
// had one.
func (s *shim) unprefixed(name string) (string, bool) {
	if rest, ok := strings.CutPrefix(name, s.prefix); ok {
		return rest, true
	}
	for _, p := range s.owned {
		if rest, ok := strings.CutPrefix(name, p); ok {
			return rest, true
		}
	}
	return name, false
}

func (s *shim) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.rp.ServeHTTP(w, r) }

// request adds the prefix to the names in one JSON-RPC request from the
// suite; anything else (a batch, a response, bad JSON, a task id) passes
// unchanged.
func (s *shim) request(b []byte) []byte {
	var msg map[string]any
	if json.Unmarshal(b, &msg) != nil {
		return b
	}
	params, _ := msg["params"].(map[string]any)
	var named map[string]any
	kind := "prompt"
	switch msg["method"] {
	case "tools/call":
		named, kind = params, "tool"
	case "prompts/get":
		named = params
	case "completion/complete":
		if ref, _ := params["ref"].(map[string]any); ref["type"] == "ref/prompt" {
			named = ref
		}
	}
	name, ok := named["name"].(string)
	if !ok {
		return b
	}
	named["name"] = s.prefixed(kind, name)
	out, err := json.Marshal(msg)
	if err != nil {
		return b
	}
	return out
}

// nameHeader adds the prefix to a 2026-07-28 request's Mcp-Name header
// where the body's name gets it, the same one (the header must match the
// body, docs/design.md §24); a name with no prefix in the body (a task id
// of tasks/*) keeps its own.
func (s *shim) nameHeader(h http.Header) {
	name := h.Get("Mcp-Name")
	kind := map[string]string{"tools/call": "tool", "prompts/get": "prompt"}[h.Get("Mcp-Method")]
	if name == "" || kind == "" {
		return
	}
	h.Set("Mcp-Name", s.prefixed(kind, strings.TrimSpace(name)))
}

// response strips the prefixes from the tools and prompts of one JSON-RPC
// response; anything else passes unchanged.
func (s *shim) response(b []byte) []byte {
	var msg map[string]any
	if json.Unmarshal(b, &msg) != nil {
		return b
	}
	res, _ := msg["result"].(map[string]any)
	changed := false
	for _, key := range []string{"tools", "prompts"} {
		list, _ := res[key].([]any)
		for _, it := range list {
			item, _ := it.(map[string]any)
			name, ok := item["name"].(string)
			if !ok {
				continue
			}
			if bare, ok := s.unprefixed(name); ok {
				item["name"] = bare
				changed = true
			}
		}
	}
	if !changed {
		return b
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return b
	}
	return out
}

// events rewrites the data lines of an event stream as it flows.
func (s *shim) events(body io.ReadCloser) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		r := bufio.NewReader(body)
		for {
			line, err := r.ReadBytes('\n')
			if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				end := len(data) - len(bytes.TrimRight(data, "\r\n"))
				line = append(append([]byte("data: "), s.response(bytes.TrimSpace(data))...), data[len(data)-end:]...)
			}
			if len(line) > 0 {
				if _, werr := pw.Write(line); werr != nil {
					body.Close()
					return
				}
			}
			if err != nil {
				body.Close()
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return struct {
		io.Reader
		io.Closer
	}{pr, closerFunc(func() error { pr.Close(); return body.Close() })}
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }
