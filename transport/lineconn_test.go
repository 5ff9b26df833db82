package transport_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpkeep/mcpkeep/transport"
)

// readAll reads every message t's connection yields from input, and the
// error that ended it.
func readAll(t *testing.T, tr mcp.Transport) ([]jsonrpc.Message, error) {
	t.Helper()
	conn, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var out []jsonrpc.Message
	for {
		m, err := conn.Read(context.Background())
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// Lines reads what the SDK's IOTransport reads, message for message
// (docs/design.md §8): requests, notifications, results, errors, string
// and number ids, blank lines, a message over several lines, a batch.
func TestLinesReadsWhatIOTransportReads(t *testing.T) {
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"héllo\n"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
		`{"jsonrpc":"2.0","id":"abc","result":{"content":[{"type":"text","text":"x"}],"isError":false}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad","data":{"why":1}}}`,
		`{`,
		`  "jsonrpc": "2.0",`,
		`  "id": 8,`,
		`  "result": {}`,
		`}`,
		`[{"jsonrpc":"2.0","method":"notifications/a"},{"jsonrpc":"2.0","id":9,"method":"ping"}]`,
	}, "\n") + "\n"
	got, gotErr := readAll(t, &transport.Lines{Reader: io.NopCloser(strings.NewReader(input)), Writer: nopWriteCloser{io.Discard}})
	want, wantErr := readAll(t, &mcp.IOTransport{Reader: io.NopCloser(strings.NewReader(input)), Writer: nopWriteCloser{io.Discard}})
	if len(want) != 7 {
		t.Fatalf("IOTransport read %d messages (%v), want 7", len(want), wantErr)
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b jsonrpc.ID) bool { return a == b }),
		cmp.Comparer(func(a, b error) bool { return (a == nil) == (b == nil) && (a == nil || a.Error() == b.Error()) })); diff != "" {
		t.Errorf("Lines read differently (-IOTransport +Lines):\n%s", diff)
	}
	if !errors.Is(gotErr, io.EOF) {
		t.Errorf("Lines ended with %v, want io.EOF", gotErr)
	}
	// Lines is lenient where the SDK is strict: blank lines and spaces
	// around a message (the SDK takes them for trailing data and ends the
	// connection) are skipped.
	padded := "\n  " + strings.ReplaceAll(input, "\n", "  \n\n")
	got, gotErr = readAll(t, &transport.Lines{Reader: io.NopCloser(strings.NewReader(padded)), Writer: nopWriteCloser{io.Discard}})
	if len(got) != len(want) || !errors.Is(gotErr, io.EOF) {
		t.Errorf("padded input: %d messages, %v; want %d and io.EOF", len(got), gotErr, len(want))
	}
}

// A peer that writes an endless line costs at most MaxLine, then its
// connection ends with ErrLineTooLong; garbage and a message cut by the
// stream's end are errors, as they are to the SDK.
func TestLinesBadInput(t *testing.T) {
	endless := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","method":"x","params":"`),
		&repeatReader{b: 'a', n: transport.MaxLine + 1})
	for _, c := range []struct {
		name  string
		input io.Reader
		want  error
	}{
		{"endless line", endless, transport.ErrLineTooLong},
		{"cut by the end", strings.NewReader(`{"jsonrpc":"2.0","id":1,`), io.ErrUnexpectedEOF},
		{"garbage", strings.NewReader("not json\n"), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			msgs, err := readAll(t, &transport.Lines{Reader: io.NopCloser(c.input), Writer: nopWriteCloser{io.Discard}})
			if len(msgs) != 0 || err == nil || (c.want == nil && errors.Is(err, io.EOF)) || (c.want != nil && !errors.Is(err, c.want)) {
				t.Errorf("read %d messages, err %v; want an error (%v)", len(msgs), err, c.want)
			}
		})
	}
}

type repeatReader struct {
	b byte
	n int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.n)
	for i := range n {
		p[i] = r.b
	}
	r.n -= n
	return n, nil
}

// Each message is written in one Write, its newline included (a failed
// write then delivered no whole message, docs/design.md §8), and reads
// back as itself.
func TestLinesWritesOneMessagePerWrite(t *testing.T) {
	var w writeLog
	conn, err := (&transport.Lines{Reader: io.NopCloser(strings.NewReader("")), Writer: &w}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	id, _ := jsonrpc.MakeID(float64(3))
	msgs := []jsonrpc.Message{
		&jsonrpc.Request{ID: id, Method: "tools/call", Params: []byte(`{"name":"x"}`)},
		&jsonrpc.Request{Method: "notifications/initialized"},
		&jsonrpc.Response{ID: id, Result: []byte(`{"content":[]}`)},
	}
	for _, m := range msgs {
		if err := conn.Write(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	if len(w.writes) != len(msgs) {
		t.Fatalf("%d writes for %d messages", len(w.writes), len(msgs))
	}
	for i, b := range w.writes {
		if !strings.HasSuffix(b, "\n") || strings.Count(b, "\n") != 1 {
			t.Errorf("write %d: %q, want one line", i, b)
		}
	}
	back, _ := readAll(t, &transport.Lines{Reader: io.NopCloser(strings.NewReader(strings.Join(w.writes, ""))), Writer: nopWriteCloser{io.Discard}})
	if len(back) != len(msgs) {
		t.Errorf("read back %d of %d messages", len(back), len(msgs))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := conn.Write(ctx, msgs[0]); !errors.Is(err, context.Canceled) {
		t.Errorf("write on a done context: %v", err)
	}
}

type writeLog struct {
	mu     sync.Mutex
	writes []string
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func (w *writeLog) Close() error { return nil }

// A large message costs no more to read than through the SDK's own
// IOTransport (measured side by side). append grows a large slice by a
// quarter at a time, each step leaving the last as garbage: before Lines
// doubled its buffer itself, an 8 MiB message cost 88 MiB, and the proxy's
// GC setting let that pile up past the hostile suite's RSS bound.
func TestLinesLargeMessageAllocations(t *testing.T) {
	const size = 8 << 20
	line := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` +
		strings.Repeat("x", size) + `"}}` + "\n"
	cost := func(tr mcp.Transport) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		msgs, _ := readAll(t, tr)
		runtime.ReadMemStats(&after)
		if len(msgs) != 1 {
			t.Fatalf("%T read %d messages", tr, len(msgs))
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	lines := cost(&transport.Lines{Reader: io.NopCloser(strings.NewReader(line)), Writer: nopWriteCloser{io.Discard}})
	sdk := cost(&mcp.IOTransport{Reader: io.NopCloser(strings.NewReader(line)), Writer: nopWriteCloser{io.Discard}})
	t.Logf("an %d MiB message: Lines allocated %d MiB, IOTransport %d MiB", size>>20, lines>>20, sdk>>20)
	if float64(lines) > 1.05*float64(sdk) {
		t.Errorf("Lines allocated %d MiB for an %d MiB message, the SDK's IOTransport %d MiB", lines>>20, size>>20, sdk>>20)
	}
}

// A pretty-printed message (a peer that indents, against the spec) is
// scanned once, not parsed again from its start at each of its lines:
// reading a 171 KiB message of 12000 lines costs about what reading it
// on one line costs (0.7 MiB against 0.3 MiB allocated). Before, each
// line re-ran a decoder over the whole message so far: quadratic (3.1 GiB
// allocated and 27 s here; a 97 KiB indented message took 2.25 s).
func TestLinesPrettyPrintedMessageIsLinear(t *testing.T) {
	data := map[string]any{}
	for i := range 3000 {
		data[fmt.Sprintf("key%05d", i)] = []any{i, "value"}
	}
	msg := map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": data}}
	compact, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	pretty, err := json.MarshalIndent(msg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	cost := func(input []byte) (uint64, jsonrpc.Message) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		msgs, err := readAll(t, &transport.Lines{Reader: io.NopCloser(bytes.NewReader(append(input, '\n'))), Writer: nopWriteCloser{io.Discard}})
		runtime.ReadMemStats(&after)
		if len(msgs) != 1 || !errors.Is(err, io.EOF) {
			t.Fatalf("read %d messages, %v", len(msgs), err)
		}
		return after.TotalAlloc - before.TotalAlloc, msgs[0]
	}
	one, want := cost(compact)
	many, got := cost(pretty)
	t.Logf("a %d KiB message: %d bytes allocated on one line, %d on %d lines", len(pretty)>>10, one, many, bytes.Count(pretty, []byte("\n"))+1)
	if many > 3*one+(256<<10) {
		t.Errorf("the pretty-printed message cost %d bytes, the one-line %d", many, one)
	}
	var gotParams, wantParams any
	json.Unmarshal(got.(*jsonrpc.Request).Params, &gotParams)
	json.Unmarshal(want.(*jsonrpc.Request).Params, &wantParams)
	if diff := cmp.Diff(wantParams, gotParams); diff != "" {
		t.Errorf("the pretty-printed message read differently:\n%s", diff)
	}
}
