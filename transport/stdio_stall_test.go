//go:build unix

package transport_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkeep/mcpkeep/transport"
)

// TestStdioStalledWriteEndsTheGeneration (docs/design.md §19): a child that
// never reads its stdin, and a message larger than the pipe's buffer
// (64 KiB): the write fails with ErrStalled once the bound passed with
// nothing taken (and as not sent: its end never went out), the reader ends (the session's end, naming the stall),
// and a later write fails at once as never sent. Before the watchdog the
// write blocked for as long as the child lived.
func TestStdioStalledWriteEndsTheGeneration(t *testing.T) {
	const bound = 300 * time.Millisecond
	s := fixtureStdio(t, "deaf")
	// deaf takes no notice of its stdin's end: SIGTERM ends it, and a
	// loaded machine may take longer than the short test graces.
	s.TermGrace, s.KillGrace = 2*time.Second, 2*time.Second
	g, _ := open(t, s)
	g.(transport.WriteBounder).BoundWrites(bound)
	conn, err := g.Transport().Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	id, err := jsonrpc.MakeID(float64(1))
	if err != nil {
		t.Fatal(err)
	}
	params := `{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 256<<10) + `"}}`
	msg := &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(params)}

	start := time.Now()
	wrote := make(chan error, 1)
	go func() { wrote <- conn.Write(context.Background(), msg) }()
	select {
	case err = <-wrote:
	case <-time.After(stdioTimeout):
		t.Fatalf("the write still blocks after %v: no watchdog", stdioTimeout)
	}
	took := time.Since(start)
	// The message is four times the pipe's buffer: most of it, and its
	// last byte, never went out. No server can have acted on it: it is
	// not sent (issue 33 item 24; docs/design.md §19).
	if !errors.Is(err, transport.ErrStalled) || !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Fatalf("write = %v; want ErrStalled and ErrConnectionClosed (its last byte never reached the pipe: not sent)", err)
	}
	if took < bound {
		t.Errorf("the write failed after %v, before the bound %v", took, bound)
	}
	if !strings.Contains(err.Error(), `server "fixture" gen 1`) {
		t.Errorf("write = %v; want it to name the server and generation", err)
	}

	read := make(chan error, 1)
	go func() {
		_, err := conn.Read(context.Background())
		read <- err
	}()
	select {
	case err = <-read:
	case <-time.After(stdioTimeout):
		t.Fatal("the reader did not end after the stall")
	}
	if !errors.Is(err, transport.ErrStalled) || !errors.Is(err, io.EOF) {
		t.Errorf("read = %v; want ErrStalled and io.EOF (calls in flight are lost)", err)
	}

	start = time.Now()
	err = conn.Write(context.Background(), msg)
	if !errors.Is(err, transport.ErrStalled) || !errors.Is(err, mcp.ErrConnectionClosed) {
		t.Errorf("a later write = %v; want ErrStalled and ErrConnectionClosed (never sent)", err)
	}
	if d := time.Since(start); d > bound/2 {
		t.Errorf("a later write took %v; want at once", d)
	}
}

// TestStdioBrokenStdinIsNotSent (docs/design.md §8): a write to a child
// whose stdin is gone fails as never sent (mcp.ErrConnectionClosed, so the
// call takes the outage path) instead of "write |1: broken pipe", and a
// child that closed its stdin but lives on has its generation ended (the
// reader ends) rather than swallowing requests for as long as it lives.
func TestStdioBrokenStdinIsNotSent(t *testing.T) {
	s := &transport.Stdio{Command: "sh", Args: []string{"-c", "exec 0<&-; sleep 30"}, Server: "closer",
		StdinGrace: testStdinGrace, TermGrace: testTermGrace, KillGrace: testKillGrace}
	g, _ := open(t, s)
	conn, err := g.Transport().Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	id, err := jsonrpc.MakeID(float64(1))
	if err != nil {
		t.Fatal(err)
	}
	msg := &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(`{"name":"echo"}`)}
	// sh closes its stdin at once; until then a write lands in the pipe.
	deadline := time.Now().Add(stdioTimeout)
	for err = conn.Write(context.Background(), msg); err == nil && time.Now().Before(deadline); err = conn.Write(context.Background(), msg) {
		time.Sleep(10 * time.Millisecond)
	}
	if !errors.Is(err, mcp.ErrConnectionClosed) || !strings.Contains(err.Error(), `server "closer" gen 1`) {
		t.Fatalf("write = %v; want mcp.ErrConnectionClosed naming the server (not sent)", err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := conn.Read(context.Background())
		read <- err
	}()
	select {
	case err = <-read:
	case <-time.After(stdioTimeout):
		t.Fatal("the reader did not end: the generation of a child with no stdin lives on")
	}
	if err == nil {
		t.Error("read returned a message")
	}
}
