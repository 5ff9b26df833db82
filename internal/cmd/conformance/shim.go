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
// server defines. The shim sits between them and allows for exactly that
// prefix: it adds it to the names the suite sends (tools/call,
// prompts/get, a prompt's completion ref) and strips it from the lists
// the proxy answers. Everything else passes byte for byte, the Host
// header included (the DNS rebinding scenario sends its own).
type shim struct {
	prefix string
	rp     *httputil.ReverseProxy
}

func newShim(target *url.URL, prefix string) *shim {
	s := &shim{prefix: prefix}
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

func (s *shim) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.rp.ServeHTTP(w, r) }

// request adds the prefix to the names in one JSON-RPC request from the
// suite; anything else (a batch, a response, bad JSON) passes unchanged.
func (s *shim) request(b []byte) []byte {
	var msg map[string]any
	if json.Unmarshal(b, &msg) != nil {
		return b
	}
	params, _ := msg["params"].(map[string]any)
	var named map[string]any
	switch msg["method"] {
	case "tools/call", "prompts/get":
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
	named["name"] = s.prefix + name
	out, err := json.Marshal(msg)
	if err != nil {
		return b
	}
	return out
}

// nameHeader adds the prefix to a 2026-07-28 request's Mcp-Name header
// where the body's name gets it (the header must match the body,
// docs/design.md §24); a name with no prefix in the body keeps its own.
func (s *shim) nameHeader(h http.Header) {
	name := h.Get("Mcp-Name")
	if m := h.Get("Mcp-Method"); name == "" || (m != "tools/call" && m != "prompts/get") {
		return
	}
	h.Set("Mcp-Name", s.prefix+strings.TrimSpace(name))
}

// response strips the prefix from the tools and prompts of one JSON-RPC
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
			if name, ok := item["name"].(string); ok && strings.HasPrefix(name, s.prefix) {
				item["name"] = strings.TrimPrefix(name, s.prefix)
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
