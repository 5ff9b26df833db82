package transport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkeep/mcpkeep/transport"
)

// hostStreams are inputs on which a host-facing connection could part
// from the SDK's: framing, batches, broken and oversized frames.
var hostStreams = map[string]string{
	"one":           `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}` + "\n",
	"several":       `{"jsonrpc":"2.0","id":1,"method":"a"}` + "\n" + `{"jsonrpc":"2.0","method":"n","params":{}}` + "\r\n" + `{"jsonrpc":"2.0","id":"x","result":{"k":[1,2]}}` + "\n",
	"no newline":    `{"jsonrpc":"2.0","id":1,"method":"a"}`,
	"spread":        "{\"jsonrpc\":\"2.0\",\n \"id\":1,\n \"method\":\"a\"}\n",
	"blank lines":   "\n\n" + `{"jsonrpc":"2.0","id":1,"method":"a"}` + "\n\n" + `{"jsonrpc":"2.0","id":2,"method":"b"}` + "\n",
	"two on a line": `{"jsonrpc":"2.0","id":1,"method":"a"} {"jsonrpc":"2.0","id":2,"method":"b"}` + "\n",
	"batch":         `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":2,"method":"b"}]` + "\n",
	"empty batch":   "[]\n",
	"dup batch":     `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":1,"method":"b"}]` + "\n",
	"batch of junk": "[1,2]\n",
	"bad version":   `{"jsonrpc":"1.0","id":1,"method":"a"}` + "\n",
	"not json":      "hello\n",
	"cut":           `{"jsonrpc":"2.0","id":1,"me`,
	"case":          `{"jsonrpc":"2.0","ID":1,"Method":"a"}` + "\n",
	"deep":          `{"jsonrpc":"2.0","id":1,"method":"a","params":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + "}\n",
	"deep batch":    "[" + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + "]\n",
	"huge":          `{"jsonrpc":"2.0","id":1,"method":"a","params":"` + strings.Repeat("x", 3000) + `"}` + "\n",
}

// readHost reads every message a host-facing transport's connection
// yields from input (with a frame bound of 2 KiB), answering an
// initialize with protocol answerVersion, until an error.
func readHost(t *testing.T, tr func(io.ReadCloser, io.WriteCloser) mcp.Transport, input, answerVersion string) (got []string, out string) {
	t.Helper()
	var w bytes.Buffer
	conn, err := tr(io.NopCloser(strings.NewReader(input)), nopWriteCloser{&w}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		m, err := conn.Read(ctx)
		cancel()
		if err != nil {
			// The decoder's error names the type decoded into.
			msg := strings.NewReplacer("jsonrpc2.wireDecode", "<envelope>", "transport.envelope", "<envelope>").Replace(err.Error())
			got = append(got, "error: "+msg)
			break
		}
		got = append(got, fmt.Sprintf("%T %s", m, describeMessage(m)))
		if r, ok := m.(*jsonrpc.Request); ok && r.Method == "initialize" {
			res, _ := json.Marshal(map[string]any{"protocolVersion": answerVersion})
			if err := conn.Write(context.Background(), &jsonrpc.Response{ID: r.ID, Result: res}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return got, w.String()
}

func sdkHost(r io.ReadCloser, w io.WriteCloser) mcp.Transport {
	return &mcp.IOTransport{Reader: r, Writer: w, MaxLineLength: 2048}
}

func ourHost(r io.ReadCloser, w io.WriteCloser) mcp.Transport {
	return &transport.HostStdio{Reader: r, Writer: w, MaxLineLength: 2048}
}

// TestHostStdioReadsWhatIOTransportReads: every stream reads the same
// messages and ends with the same error.
func TestHostStdioReadsWhatIOTransportReads(t *testing.T) {
	for name, input := range hostStreams {
		t.Run(name, func(t *testing.T) {
			want, wantOut := readHost(t, sdkHost, input, "2025-03-26")
			got, gotOut := readHost(t, ourHost, input, "2025-03-26")
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("reads differ (-IOTransport +HostStdio):\n%s", diff)
			}
			if wantOut != gotOut {
				t.Fatalf("writes differ:\nIOTransport %q\nHostStdio   %q", wantOut, gotOut)
			}
		})
	}
}

// TestHostStdioAnswersABatchAsTheSDK: the answers to a batch's calls go
// out as one array, in the batch's order, once the last is written.
func TestHostStdioAnswersABatchAsTheSDK(t *testing.T) {
	input := `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":"two","method":"b"}]` + "\n"
	want, got := answerBatch(t, sdkHost, input, 2), answerBatch(t, ourHost, input, 2)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("writes differ (-IOTransport +HostStdio):\n%s", diff)
	}
	if want[0] != "" || !strings.HasPrefix(want[1], "[") {
		t.Fatalf("the premise: the SDK held the first answer and sent an array: %q", want)
	}
}

// TestHostStdioAnswersABatchWithANotification: a notification in a batch
// is answered by nobody (JSON-RPC), so the batch's answer goes out once
// its calls are answered. go-sdk v1.8.0's connection waits for an answer
// to the notification too, and so never answers such a batch.
func TestHostStdioAnswersABatchWithANotification(t *testing.T) {
	input := `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"two","method":"b"}]` + "\n"
	got := answerBatch(t, ourHost, input, 3)
	want := `[{"jsonrpc":"2.0","id":1,"result":{"x":"a\u0026b"}},{"jsonrpc":"2.0","id":"two","error":{"code":-32601,"message":"no \u003cb\u003e"}}]` + "\n"
	if got[0] != "" || got[1] != want {
		t.Fatalf("writes %q, want nothing, then %q", got, want)
	}
	if sdk := answerBatch(t, sdkHost, input, 3); sdk[1] != "" {
		t.Logf("go-sdk now answers a batch with a notification: %q", sdk[1])
	}
}

// answerBatch reads n messages of a batch from input and answers its two
// calls out of order (the second with an error), then sends a
// notification, returning what was written after each step.
func answerBatch(t *testing.T, tr func(io.ReadCloser, io.WriteCloser) mcp.Transport, input string, n int) []string {
	t.Helper()
	run := func(tr func(io.ReadCloser, io.WriteCloser) mcp.Transport) []string {
		var w bytes.Buffer
		conn, err := tr(io.NopCloser(strings.NewReader(input)), nopWriteCloser{&w}).Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var ids []jsonrpc.ID
		for range n {
			m, err := conn.Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if r := m.(*jsonrpc.Request); r.IsCall() {
				ids = append(ids, r.ID)
			}
		}
		var outs []string
		// Answered out of order; the second answer is an error.
		if err := conn.Write(context.Background(), &jsonrpc.Response{ID: ids[1], Error: &jsonrpc.Error{Code: -32601, Message: "no <b>"}}); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, w.String())
		if err := conn.Write(context.Background(), &jsonrpc.Response{ID: ids[0], Result: json.RawMessage(`{ "x" : "a&b" }`)}); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, w.String())
		// A notification afterwards goes out alone.
		if err := conn.Write(context.Background(), &jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(`{"level":"info"}`)}); err != nil {
			t.Fatal(err)
		}
		return append(outs, w.String())
	}
	return run(tr)
}

// TestHostStdioRefusesABatchFrom20250618: once the host's session
// negotiated 2025-06-18 or later, a batch ends the session, as over the
// SDK's connection (which its session tells the version); before, it is
// served.
func TestHostStdioRefusesABatchFrom20250618(t *testing.T) {
	for _, version := range []string{"2025-03-26", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			input := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}` + "\n" +
				`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
				`[{"jsonrpc":"2.0","id":2,"method":"ping"}]` + "\n"
			want, got := serveInput(t, sdkHost, input), serveInput(t, ourHost, input)
			if want != got {
				t.Fatalf("a server wrote\nover IOTransport %q\nover HostStdio   %q", want, got)
			}
			if answered := strings.Contains(want, `"id":2`); answered != (version < "2025-06-18") {
				t.Fatalf("the premise: the batch answered %v on %s: %q", answered, version, want)
			}
		})
	}
}

// serveInput runs an SDK server on tr over input until the session ends,
// and returns what it wrote.
func serveInput(t *testing.T, tr func(io.ReadCloser, io.WriteCloser) mcp.Transport, input string) string {
	t.Helper()
	pr, pw := io.Pipe()
	var w syncBuffer
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	ss, err := srv.Connect(context.Background(), tr(pr, nopWriteCloser{&w}), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.SplitAfter(input, "\n") {
		if _, err := pw.Write([]byte(line)); err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond) // each request answered before the next: the order of the output is fixed
	}
	pw.Close()
	done := make(chan struct{})
	go func() { ss.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		ss.Close()
		<-done
	}
	return w.String()
}

// syncBuffer is a bytes.Buffer safe for the server's writer and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestHostStdioCloseEndsRead: Close wakes a Read waiting on a reader that
// never returns.
func TestHostStdioCloseEndsRead(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	conn, err := (&transport.HostStdio{Reader: pr, Writer: nopWriteCloser{io.Discard}}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := conn.Read(context.Background())
		done <- err
	}()
	time.Sleep(10 * time.Millisecond) // let Read block (the test passes either way)
	conn.Close()
	select {
	case err := <-done:
		if err != io.EOF && !strings.Contains(fmt.Sprint(err), "closed") {
			t.Fatalf("Read after Close = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake Read")
	}
}

// A negative MaxLineLength (the SDK's IOTransport reads it as no bound,
// and the proxy passes a host's IOTransport's on) is the default bound:
// messages are read, and a frame past mcp.DefaultMaxLineLength still
// ends the connection (issue 33 item 16: every read failed).
func TestHostStdioNegativeMaxLineLengthIsTheDefault(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"
	conn, err := (&transport.HostStdio{Reader: io.NopCloser(strings.NewReader(msg)), Writer: nopWriteCloser{io.Discard}, MaxLineLength: -1}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m, err := conn.Read(context.Background())
	conn.Close()
	if r, ok := m.(*jsonrpc.Request); err != nil || !ok || r.Method != "ping" {
		t.Fatalf("read %v, %v", m, err)
	}

	huge := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","method":"x","params":"`),
		&repeatReader{b: 'a', n: mcp.DefaultMaxLineLength + 1})
	conn, err = (&transport.HostStdio{Reader: io.NopCloser(huge), Writer: nopWriteCloser{io.Discard}, MaxLineLength: -1}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if m, err := conn.Read(context.Background()); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("a frame past the default bound: %v, %v", m, err)
	}
}
