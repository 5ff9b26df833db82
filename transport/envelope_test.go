package transport_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"pgregory.net/rapid"

	"github.com/mcpkeep/mcpkeep/transport"
)

// envelopeSeeds are messages where a decoder could part from the SDK's:
// keys in another case, a null or escaped method, ids of every kind,
// trailing bytes, deep nesting, broken versions.
var envelopeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi there"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
	`{"jsonrpc":"2.0","id":"abc","result":{"content":[{"type":"text","text":"a\nb"}]}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no such method","data":{"x":[1,2]}}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"m"},"result":{}}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"m"}`,
	`{"jsonrpc":"2.0","id":-3,"method":""}`,
	`{"jsonrpc":"2.0","id":null,"method":"m"}`,
	`{"jsonrpc":"2.0","id":null,"result":1}`,
	`{"jsonrpc":"2.0","result":1}`,
	`{"jsonrpc":"2.0","id":true,"method":"m"}`,
	`{"jsonrpc":"2.0","id":{"a":1},"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"a\"b\\c\u00e9\t"}`,
	`{"jsonrpc":"2.0","id":1,"method":"héllo"}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`,
	`{"JSONRPC":"2.0","id":1,"method":"m"}`,
	`{"jsonrpc":"2.0","ID":1,"Method":"m","Params":{}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}} trailing`,
	`{"jsonrpc":"2.0","id":1,"method":"m"}{"jsonrpc":"2.0","id":2,"method":"n"}`,
	`{"jsonrpc":"1.0","id":1,"method":"m"}`,
	`{"id":1,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2,3]}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":null}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":  { "a" : [ 1 , 2 ] } }`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"]]]]"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","extra":{"deep":[[[[]]]]}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m",}`,
	`{"jsonrpc":"2.0","id":1,"method":"m"`,
	`[]`,
	`"just a string"`,
	`null`,
	``,
	`{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}`,
	`{"jsonrpc":"2.0","id":1,"error":null,"result":null}`,
	`{"jsonrpc":"2.0","id":1e3,"method":"m"}`,
	`{"jsonrpc":"2.0","id":99999999999999999999,"method":"m"}`,
	`{"jsonrpc":"2.0","id":"\ud800","method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":"\u0000<>&"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","method":"n"}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\xff\"}",
	`{"jsonrpc":"2.0","id":1,"method":"m","params":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
	`{"jsonrpc":"2.0","id":1,"method":"m","params":"` + strings.Repeat("[", 1001) + `"}`,
}

// sameDecode fails t when DecodeEnvelope and the SDK's DecodeMessage part
// on data: both fail, or both give the same message.
func sameDecode(t interface {
	Helper()
	Fatalf(string, ...any)
}, data []byte) {
	t.Helper()
	want, wantErr := jsonrpc.DecodeMessage(data)
	got, err := transport.DecodeEnvelope(data)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("decode %q: error %v, the SDK's %v", data, err, wantErr)
	}
	if err != nil {
		return
	}
	if diff := cmp.Diff(describeMessage(want), describeMessage(got)); diff != "" {
		t.Fatalf("decode %q: differs from the SDK's (-sdk +ours):\n%s", data, diff)
	}
}

// describeMessage is a comparable form of a message.
func describeMessage(m jsonrpc.Message) map[string]any {
	switch m := m.(type) {
	case *jsonrpc.Request:
		return map[string]any{"kind": "request", "id": fmt.Sprintf("%T %v", m.ID.Raw(), m.ID.Raw()), "method": m.Method, "params": string(m.Params)}
	case *jsonrpc.Response:
		out := map[string]any{"kind": "response", "id": fmt.Sprintf("%T %v", m.ID.Raw(), m.ID.Raw()), "result": string(m.Result)}
		if m.Error != nil {
			out["error"] = fmt.Sprintf("%T %+v", m.Error, m.Error)
		}
		return out
	}
	return map[string]any{"kind": fmt.Sprintf("%T", m)}
}

func TestDecodeEnvelopeMatchesSDK(t *testing.T) {
	for _, s := range envelopeSeeds {
		sameDecode(t, []byte(s))
	}
}

// TestDecodeEnvelopeKeepsNothingOfItsInput: the message's params and
// result are copies, so a reader may reuse its buffer.
func TestDecodeEnvelopeKeepsNothingOfItsInput(t *testing.T) {
	data := []byte(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}`)
	m, err := transport.DecodeEnvelope(data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		data[i] = 'x'
	}
	if got := string(m.(*jsonrpc.Request).Params); got != `{"a":1}` {
		t.Fatalf("params after the buffer was reused: %s", got)
	}
}

// jsonValue generates JSON values with the text that parts decoders:
// escapes, spaces, nesting, numbers of every form.
func jsonValue(depth int) *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		kinds := 5
		if depth > 0 {
			kinds = 7
		}
		switch rapid.IntRange(0, kinds-1).Draw(t, "kind") {
		case 0:
			return rapid.SampledFrom([]string{"null", "true", "false"}).Draw(t, "lit")
		case 1:
			return rapid.SampledFrom([]string{"0", "-1", "1.5", "1e3", "42", "9007199254740993"}).Draw(t, "num")
		case 2, 3:
			s := rapid.StringMatching(`[a-zA-Z \t<>&"\\é\x{2028}/]{0,12}`).Draw(t, "str")
			b, _ := json.Marshal(s)
			return string(b)
		case 4:
			return rapid.SampledFrom([]string{`"a\nb"`, `"\u00e9\"\\"`, `""`, `"\ud83d\ude00"`}).Draw(t, "esc")
		case 5:
			items := rapid.SliceOfN(jsonValue(depth-1), 0, 3).Draw(t, "items")
			sep := rapid.SampledFrom([]string{",", " , ", ",\n"}).Draw(t, "sep")
			return "[" + strings.Join(items, sep) + "]"
		default:
			keys := rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "_meta", "progressToken", "jsonrpc", "id"}), 0, 3).Draw(t, "keys")
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%q:%s", k, jsonValue(depth-1).Draw(t, "v")))
			}
			return "{" + strings.Join(parts, ",") + "}"
		}
	})
}

// TestDecodeEnvelopeMatchesSDKOnGenerated: envelopes of every shape, keys
// in either case, present or absent, in any order.
func TestDecodeEnvelopeMatchesSDKOnGenerated(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fields := map[string]string{}
		if rapid.Bool().Draw(t, "version") {
			fields["jsonrpc"] = rapid.SampledFrom([]string{`"2.0"`, `"1.0"`, `2`}).Draw(t, "v")
		}
		for _, k := range []string{"id", "method", "params", "result", "error"} {
			if rapid.Bool().Draw(t, "has "+k) {
				var v string
				switch k {
				case "id":
					v = rapid.SampledFrom([]string{"1", "0", "-2", "3.7", `"x"`, `""`, "null", "true", "[]"}).Draw(t, "id")
				case "method":
					v = rapid.SampledFrom([]string{`"tools/call"`, `""`, "null", `"a\u0041"`, "1"}).Draw(t, "method")
				case "error":
					v = rapid.SampledFrom([]string{`{"code":-1,"message":"m"}`, `{"code":1,"message":"m","data":[1, 2]}`, "null", `"e"`}).Draw(t, "error")
				default:
					v = jsonValue(3).Draw(t, k)
				}
				name := k
				if rapid.IntRange(0, 9).Draw(t, "case") == 0 {
					name = strings.ToUpper(k[:1]) + k[1:]
				}
				fields[name] = v
			}
		}
		order := rapid.Permutation(keysOf(fields)).Draw(t, "order")
		var parts []string
		for _, k := range order {
			parts = append(parts, fmt.Sprintf("%q:%s", k, fields[k]))
		}
		sameDecode(t, []byte("{"+strings.Join(parts, ",")+"}"))
	})
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	// a fixed start for Permutation
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameDecode(t, data) })
}

// TestAppendEnvelopeMatchesSDK: every message encodes to the SDK's bytes.
func TestAppendEnvelopeMatchesSDK(t *testing.T) {
	id := func(v any) jsonrpc.ID {
		id, err := jsonrpc.MakeID(v)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	msgs := []jsonrpc.Message{
		&jsonrpc.Request{ID: id(float64(3)), Method: "tools/call", Params: json.RawMessage(`{"name":"echo","arguments":{"text":"a b <&>"}}`)},
		&jsonrpc.Request{Method: "notifications/initialized"},
		&jsonrpc.Request{ID: id("s\"1"), Method: "m\u2028é", Params: json.RawMessage("{\n  \"a\" : [1, 2]\n}")},
		&jsonrpc.Request{ID: id(float64(1)), Method: ""},
		&jsonrpc.Response{ID: id(float64(9)), Result: json.RawMessage(`{"content":[{"type":"text","text":"x\ny"}]}`)},
		&jsonrpc.Response{ID: id("r"), Error: &jsonrpc.Error{Code: -32602, Message: "bad <params>", Data: json.RawMessage(`{ "field" : "x" }`)}},
		&jsonrpc.Response{ID: id(float64(2)), Error: &jsonrpc.Error{Code: 5, Message: ""}},
		&jsonrpc.Response{ID: id(float64(2)), Error: fmt.Errorf("plain error")},
		&jsonrpc.Response{ID: id(float64(2))},
	}
	for _, m := range msgs {
		want, wantErr := jsonrpc.EncodeMessage(m)
		got, err := transport.AppendEnvelope([]byte("prefix:"), m)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("encode %+v: error %v, the SDK's %v", m, err, wantErr)
		}
		if string(got) != "prefix:"+string(want) {
			t.Fatalf("encode %+v:\n got %s\nwant prefix:%s", m, got, want)
		}
	}
	// An invalid raw value fails, as in the SDK.
	bad := &jsonrpc.Request{ID: id(float64(1)), Method: "m", Params: json.RawMessage(`{"a":`)}
	if _, err := transport.AppendEnvelope(nil, bad); err == nil {
		t.Fatal("an invalid params value encoded")
	}
	if _, err := jsonrpc.EncodeMessage(bad); err == nil {
		t.Fatal("the SDK encoded an invalid params value: the test's premise is wrong")
	}
}

// TestAppendEnvelopeMatchesSDKOnGenerated: generated params and results
// encode to the SDK's bytes, spaces and escapes included.
func TestAppendEnvelopeMatchesSDKOnGenerated(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		raw := json.RawMessage(jsonValue(3).Draw(t, "raw"))
		method := rapid.StringMatching(`[a-z/<&>"\\é\x{2028}\t]{0,10}`).Draw(t, "method")
		var m jsonrpc.Message
		if rapid.Bool().Draw(t, "request") {
			m = &jsonrpc.Request{Method: method, Params: raw}
		} else {
			id, _ := jsonrpc.MakeID(method)
			m = &jsonrpc.Response{ID: id, Result: raw}
		}
		want, wantErr := jsonrpc.EncodeMessage(m)
		got, err := transport.AppendEnvelope(nil, m)
		if (err == nil) != (wantErr == nil) || string(got) != string(want) {
			t.Fatalf("encode: got %s (%v), want %s (%v)", got, err, want, wantErr)
		}
	})
}

// BenchmarkEnvelope: the decode and encode of a relayed call's request,
// ours beside the SDK's, in one run.
func BenchmarkEnvelope(b *testing.B) {
	data := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("hello ", 40) + `"},"_meta":{"progressToken":"p1"}}}`)
	msg, _ := jsonrpc.DecodeMessage(data)
	b.Run("decode/sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = jsonrpc.DecodeMessage(data)
		}
	})
	b.Run("decode/ours", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = transport.DecodeEnvelope(data)
		}
	})
	b.Run("encode/sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = jsonrpc.EncodeMessage(msg)
		}
	})
	b.Run("encode/ours", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = transport.AppendEnvelope(buf[:0], msg)
		}
	})
}
