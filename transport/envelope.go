package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/mcpkeep/mcpkeep/internal/jsonscan"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	segjson "github.com/segmentio/encoding/json"
)

// The JSON-RPC envelope, decoded and encoded as the go-sdk's
// jsonrpc.DecodeMessage and EncodeMessage do, at a fraction of their cost
// (docs/design.md §8): the SDK decodes each message through a fresh
// json.Decoder that allocates a 32 KiB buffer and copies the message into
// it, and encodes through a fresh buffer. Both are the relay's churn. The
// decode here is the same parser (segmentio's, which the SDK uses) on the
// bytes in place, with the SDK's rules: keys match case-sensitively, the
// nesting is bounded at 1000, "jsonrpc" must be "2.0", an id is a number
// or a string, a message with a "method" key (even "") is a request and
// one without is a response that must carry an id. Params and results stay
// raw, as the SDK keeps them.

// maxDepth is the SDK's bound on a message's nesting.
const maxDepth = 1000

var errMaxDepth = fmt.Errorf("json: exceeded maximum nesting depth of %d", maxDepth)

// envelope is the wire form of any message, for decoding.
type envelope struct {
	Version string          `json:"jsonrpc"`
	ID      any             `json:"id,omitempty"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// errInvalidResponse is the SDK's answer to a message with neither a
// method nor an id (jsonrpc2.ErrInvalidRequest; errors.Is matches by code).
var errInvalidResponse = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request"}

// DecodeEnvelope decodes one JSON-RPC message, as jsonrpc.DecodeMessage
// would: what follows the first JSON value is ignored, as there. data may
// be reused once it returns (what the message keeps is copied).
func DecodeEnvelope(data []byte) (jsonrpc.Message, error) {
	if err := checkDepth(data); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	var e envelope
	if _, err := segjson.Parse(data, &e, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if e.Version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", e.Version, "2.0")
	}
	id, err := jsonrpc.MakeID(e.ID)
	if err != nil {
		return nil, err
	}
	if len(e.Method) > 0 {
		method, err := methodName(e.Method)
		if err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: e.Params}, nil
	}
	if !id.IsValid() {
		return nil, errInvalidResponse
	}
	resp := &jsonrpc.Response{ID: id, Result: e.Result}
	if e.Error != nil {
		resp.Error = e.Error
	}
	return resp, nil
}

// methodName is the string a raw "method" value holds: without escapes,
// the bytes between its quotes; otherwise decoded (null is "", as in the
// SDK's decode into a string).
func methodName(raw json.RawMessage) (string, error) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' &&
		bytes.IndexByte(raw[1:n-1], '\\') < 0 && bytes.IndexByte(raw[1:n-1], '"') < 0 && utf8.Valid(raw[1:n-1]) {
		for _, b := range raw[1 : n-1] {
			if b < 0x20 {
				goto slow
			}
		}
		return string(raw[1 : n-1]), nil
	}
slow:
	var s string
	if _, err := segjson.Parse(raw, &s, segjson.DontMatchCaseInsensitiveStructFields); err != nil {
		return "", err
	}
	return s, nil
}

// checkDepth fails data that nests objects and arrays deeper than
// maxDepth, counted as the SDK counts them.
func checkDepth(data []byte) error {
	if d, _ := jsonscan.Scan(data); d > maxDepth {
		return errMaxDepth
	}
	return nil
}

// AppendEnvelope appends msg's wire form to dst, as jsonrpc.EncodeMessage
// would write it: the same keys in the same order, params, results and
// error data compacted (a raw value with a newline would break the stdio
// framing), HTML characters not escaped.
func AppendEnvelope(dst []byte, msg jsonrpc.Message) ([]byte, error) {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		dst = append(dst, `{"jsonrpc":"2.0"`...)
		var err error
		if dst, err = appendID(dst, m.ID); err != nil {
			return nil, err
		}
		if m.Method != "" {
			dst = append(dst, `,"method":`...)
			dst = appendString(dst, m.Method)
		}
		if len(m.Params) > 0 {
			dst = append(dst, `,"params":`...)
			if dst, err = appendRaw(dst, m.Params); err != nil {
				return nil, fmt.Errorf("marshaling jsonrpc message: %w", err)
			}
		}
		return append(dst, '}'), nil
	case *jsonrpc.Response:
		wire, ok := m.Error.(*jsonrpc.Error)
		if m.Error != nil && (!ok || wire == nil) {
			// An error of another kind: the SDK's own conversion.
			data, err := jsonrpc.EncodeMessage(m)
			return append(dst, data...), err
		}
		dst = append(dst, `{"jsonrpc":"2.0"`...)
		var err error
		if dst, err = appendID(dst, m.ID); err != nil {
			return nil, err
		}
		if len(m.Result) > 0 {
			dst = append(dst, `,"result":`...)
			if dst, err = appendRaw(dst, m.Result); err != nil {
				return nil, fmt.Errorf("marshaling jsonrpc message: %w", err)
			}
		}
		if wire != nil {
			dst = append(dst, `,"error":{"code":`...)
			dst = strconv.AppendInt(dst, wire.Code, 10)
			dst = append(dst, `,"message":`...)
			dst = appendString(dst, wire.Message)
			if len(wire.Data) > 0 {
				dst = append(dst, `,"data":`...)
				if dst, err = appendRaw(dst, wire.Data); err != nil {
					return nil, fmt.Errorf("marshaling jsonrpc message: %w", err)
				}
			}
			dst = append(dst, '}')
		}
		return append(dst, '}'), nil
	}
	data, err := jsonrpc.EncodeMessage(msg)
	return append(dst, data...), err
}

func appendID(dst []byte, id jsonrpc.ID) ([]byte, error) {
	switch v := id.Raw().(type) {
	case nil:
		return dst, nil
	case int64:
		dst = append(dst, `,"id":`...)
		return strconv.AppendInt(dst, v, 10), nil
	case string:
		dst = append(dst, `,"id":`...)
		return appendString(dst, v), nil
	default:
		return nil, fmt.Errorf("marshaling jsonrpc message: id of type %T", v)
	}
}

// appendString appends s as a JSON string, escaped as encoding/json does
// with HTML escaping off.
func appendString(dst []byte, s string) []byte {
	simple := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			simple = false
			break
		}
	}
	if simple {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(dst, bytes.TrimRight(buf.Bytes(), "\n")...)
}

// appendRaw appends a raw JSON value: as it is when it is valid and has no
// space to remove, compacted otherwise (encoding/json compacts a
// RawMessage and fails an invalid one).
func appendRaw(dst []byte, raw json.RawMessage) ([]byte, error) {
	if _, spaced := jsonscan.Scan(raw); !spaced && segjson.Valid(raw) {
		return append(dst, raw...), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	return append(dst, buf.Bytes()...), nil
}
