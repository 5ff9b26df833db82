package transport_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkeep/mcpkeep/transport"
)

// divertingHost is ourHost whose connection's reader offers every
// message to take (transport.Diverter).
func divertingHost(take func(jsonrpc.Message) func()) func(io.ReadCloser, io.WriteCloser) mcp.Transport {
	return func(r io.ReadCloser, w io.WriteCloser) mcp.Transport {
		return divertOnConnect{ourHost(r, w), take}
	}
}

type divertOnConnect struct {
	mcp.Transport
	take func(jsonrpc.Message) func()
}

func (d divertOnConnect) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := d.Transport.Connect(ctx)
	if err == nil {
		c.(transport.Diverter).Divert(d.take)
	}
	return c, err
}

// TestHostStdioDeclinedDivertReadsAsBefore: a taker that takes nothing
// leaves every stream read as the SDK's IOTransport reads it.
func TestHostStdioDeclinedDivertReadsAsBefore(t *testing.T) {
	offered := 0
	decline := func(jsonrpc.Message) func() { offered++; return nil }
	for name, input := range hostStreams {
		t.Run(name, func(t *testing.T) {
			want, wantOut := readHost(t, sdkHost, input, "2025-03-26")
			got, gotOut := readHost(t, divertingHost(decline), input, "2025-03-26")
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("reads differ (-IOTransport +HostStdio diverting):\n%s", diff)
			}
			if wantOut != gotOut {
				t.Fatalf("writes differ:\nIOTransport %q\nHostStdio   %q", wantOut, gotOut)
			}
		})
	}
	if offered == 0 {
		t.Fatal("the taker was offered nothing")
	}
}

// TestHostStdioDivertRunsOnTheReader: a taken message never reaches Read,
// its run runs while the stream reads on (another goroutine took over the
// reading), and the rest reads in order.
func TestHostStdioDivertRunsOnTheReader(t *testing.T) {
	hr, hw := io.Pipe()
	release := make(chan struct{})
	started := make(chan string, 4)
	take := func(m jsonrpc.Message) func() {
		r, ok := m.(*jsonrpc.Request)
		if !ok || r.Method != "fast" {
			return nil
		}
		return func() {
			started <- fmt.Sprint(r.ID.Raw())
			<-release
		}
	}
	conn, err := divertingHost(take)(hr, nopWriteCloser{io.Discard}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for _, line := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"fast"}`,
			`{"jsonrpc":"2.0","id":2,"method":"a"}`,
			`{"jsonrpc":"2.0","id":3,"method":"fast"}`,
			`{"jsonrpc":"2.0","method":"n"}`,
		} {
			if _, err := io.WriteString(hw, line+"\n"); err != nil {
				return
			}
		}
	}()
	read := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		m, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		return fmt.Sprint(describeMessage(m))
	}
	wait := func() string {
		select {
		case id := <-started:
			return id
		case <-time.After(10 * time.Second):
			t.Fatal("a taken message's run never started")
			return ""
		}
	}
	// Each run holds its goroutine: the reading goes on past it.
	got := []string{wait(), read(), wait(), read()}
	close(release)
	want := []string{"1", fmt.Sprint(describeMessage(&jsonrpc.Request{ID: mustID(float64(2)), Method: "a"})), "3",
		fmt.Sprint(describeMessage(&jsonrpc.Request{Method: "n"}))}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	hw.Close()
	if err := conn.Close(); err != nil && !strings.Contains(err.Error(), "closed") {
		t.Fatal(err)
	}
}

func mustID(v any) jsonrpc.ID {
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		panic(err)
	}
	return id
}
