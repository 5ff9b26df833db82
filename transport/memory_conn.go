package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrScripted is wrapped by scripted connect failures.
var ErrScripted = errors.New("scripted fault")

type memTransport struct{ g *MemGen }

func (t memTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	g := t.g
	if g.fault.ConnectErr != nil {
		g.Kill()
		g.markClosed()
		return nil, fmt.Errorf("memory: connect gen %d: %w", g.gen, g.fault.ConnectErr)
	}
	if g.fault.Gate != nil {
		select {
		case <-g.fault.Gate:
		case <-ctx.Done():
			g.Kill()
			g.markClosed()
			return nil, ctx.Err()
		}
	}
	g.mu.Lock()
	terminated := g.closed
	g.mu.Unlock()
	if terminated {
		return nil, fmt.Errorf("memory: connect gen %d: terminated", g.gen)
	}
	inner, err := g.client.Connect(ctx)
	if err != nil {
		g.markClosed()
		return nil, err
	}
	c := &memConn{g: g, inner: inner, reads: make(chan readResult), done: make(chan struct{})}
	// The pump is counted before c is published: Terminate may Close c
	// (and wait for the pump) as soon as it can see it.
	c.pump.Add(1)
	go c.readPump()
	g.mu.Lock()
	g.conn = c
	g.mu.Unlock()
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

// memConn wraps the client side so notifications can be injected and the
// close is observed (the in-memory close barrier).
type memConn struct {
	g     *MemGen
	inner mcp.Connection
	reads chan readResult
	done  chan struct{}
	pump  sync.WaitGroup
	once  sync.Once
}

func (c *memConn) readPump() {
	defer c.pump.Done()
	for {
		msg, err := c.inner.Read(context.Background())
		if err == nil && c.g.fault.Rewrite != nil {
			msg = c.g.fault.Rewrite(msg)
		}
		select {
		case c.reads <- readResult{msg, err}:
		case <-c.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *memConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.g.inject:
		return m, nil
	case r := <-c.reads:
		return r.msg, r.err
	case <-c.done:
		return nil, errors.New("memory: connection closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *memConn) Write(ctx context.Context, m jsonrpc.Message) error {
	return c.inner.Write(ctx, m)
}

func (c *memConn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.done)
		err = c.inner.Close()
		c.pump.Wait()
		c.g.Kill()
		c.g.markClosed()
	})
	return err
}

func (c *memConn) SessionID() string { return "" }

// serverSide records the server's connection (unwrapped: the SDK relies on
// its optional interfaces) so Kill can close it under the session.
type serverSide struct {
	inner mcp.Transport
	g     *MemGen
}

func (t serverSide) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err == nil {
		t.g.mu.Lock()
		t.g.serverConn = c
		t.g.mu.Unlock()
	}
	return c, err
}
