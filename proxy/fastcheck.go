package proxy

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
)

// The fast path's verdict is the typed path's (docs/design.md §19, §24).
// The typed path decodes a server's result into the SDK's types: a
// result it cannot decode (a wrong type, content of no known kind, bad
// base64, a number past float64) becomes the call's error, and invalid
// UTF-8 is replaced; the SDK's server then encodes what it decoded. The
// fast path relays the server's bytes, so it may do that only for a
// result the SDK's decode certainly takes and its encoding certainly
// gives the host back as the same values. plainResult recognizes such a
// result without decoding it into the SDK's types (which costs about as
// much as the whole relay): text, image and audio content, the fields of a
// CallToolResult with the types the SDK gives them, numbers a float64
// holds, valid UTF-8. Anything else is not wrong, only not known to be
// right: it goes the typed way (handOff), which gives the typed path's
// verdict because it is the typed path's decode.

// plainTop is every field of a tools/call result the SDK decodes
// (mcp.CallToolResult); any other key makes a result not plain.
type plainTop struct {
	Content           json.RawMessage `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           json.RawMessage `json:"isError"`
	ResultType        json.RawMessage `json:"resultType"`
	InputRequests     json.RawMessage `json:"inputRequests"`
	RequestState      json.RawMessage `json:"requestState"`
	Meta              json.RawMessage `json:"_meta"`
}

// plainBlock is a text, image or audio content block; any other key
// (annotations, a field of another kind) makes it not plain.
type plainBlock struct {
	Type     json.RawMessage `json:"type"`
	Text     json.RawMessage `json:"text"`
	Data     json.RawMessage `json:"data"`
	MIMEType json.RawMessage `json:"mimeType"`
	Meta     json.RawMessage `json:"_meta"`
}

// plainFlags are the SDK's decoding rules (keys match case-sensitively),
// unknown keys refused, the bytes not copied.
const plainFlags = segjson.DontMatchCaseInsensitiveStructFields | segjson.DisallowUnknownFields | segjson.DontCopyRawMessage

// plainResult reports whether raw is a result the SDK's server would
// send as it is, decoded by the host as the typed path's: plain (see
// above), with its content, asking for nothing, and on 2026-07-28
// naming its result type and its server (the SDK adds both).
func plainResult(raw json.RawMessage, modern bool) bool {
	if !utf8.Valid(raw) || !numbersFit(raw) {
		return false
	}
	var top plainTop
	if _, err := segjson.Parse(raw, &top, plainFlags); err != nil {
		return false
	}
	if len(top.InputRequests) > 0 || len(top.RequestState) > 0 || !plainContent(top.Content) {
		return false
	}
	switch string(top.IsError) {
	case "", "true", "false":
	default:
		return false
	}
	if modern {
		if string(top.ResultType) != `"complete"` || !plainMeta(top.Meta, true) {
			return false
		}
	} else if len(top.ResultType) > 0 || !plainMeta(top.Meta, false) {
		return false
	}
	return true
}

// plainContent: an array of blocks, each text (its text a string) or
// image or audio (its data base64 as the SDK decodes it, its MIME type a
// string), with no more than a _meta object beside.
func plainContent(raw json.RawMessage) bool {
	if first(raw) != '[' {
		return false
	}
	var blocks []plainBlock
	if _, err := segjson.Parse(raw, &blocks, plainFlags); err != nil {
		return false
	}
	for _, b := range blocks {
		if len(b.Meta) > 0 && first(b.Meta) != '{' {
			return false
		}
		switch string(b.Type) {
		case `"text"`:
			if first(b.Text) != '"' || len(b.Data) > 0 || len(b.MIMEType) > 0 {
				return false
			}
		case `"image"`, `"audio"`:
			if len(b.Text) > 0 || first(b.MIMEType) != '"' || !plainBase64(b.Data) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// plainBase64 reports whether raw is a JSON string, without escapes, of
// padded standard base64, not empty: what the SDK's decode into []byte
// certainly takes (it decodes with base64.StdEncoding).
func plainBase64(raw json.RawMessage) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	b := raw[1 : len(raw)-1]
	if len(b) == 0 || len(b)%4 != 0 {
		return false
	}
	pad := 0
	for i, c := range b {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/':
			if pad > 0 {
				return false
			}
		case c == '=' && i >= len(b)-2:
			pad++
		default:
			return false
		}
	}
	return true
}

// plainMeta: a result's _meta, an object when present; on 2026-07-28
// it must name the server.
func plainMeta(raw json.RawMessage, needServer bool) bool {
	if len(raw) == 0 {
		return !needServer
	}
	if first(raw) != '{' {
		return false
	}
	if !needServer {
		return true
	}
	var m struct {
		ServerInfo json.RawMessage `json:"io.modelcontextprotocol/serverInfo"`
	}
	if _, err := segjson.Parse(raw, &m, segjson.DontMatchCaseInsensitiveStructFields|segjson.DontCopyRawMessage); err != nil {
		return false
	}
	return first(m.ServerInfo) == '{'
}

// first is the first byte of a JSON value (the parser leaves no space
// before a raw value), 0 for none.
func first(raw json.RawMessage) byte {
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// numbersFit reports whether every number in data (JSON text) is one a
// float64 holds, as the SDK's decode into `any` needs: only a number
// with an exponent or of many digits can fail to.
func numbersFit(data []byte) bool {
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case c == '-' || (c >= '0' && c <= '9'):
			j := i
			long := false
			for ; j < len(data) && isNumberByte(data[j]); j++ {
				if data[j] == 'e' || data[j] == 'E' {
					long = true
				}
			}
			if long || j-i > 300 {
				if _, err := strconv.ParseFloat(string(data[i:j]), 64); err != nil {
					return false
				}
			}
			i = j - 1
		}
	}
	return true
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
