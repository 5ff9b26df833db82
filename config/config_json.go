package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// The config decoder walks JSON objects key by key (json.Decoder tokens)
// instead of unmarshalling into structs: it must know every key to reject
// unknown ones by name, report each error at its JSON path, keep the
// file's order for stable messages, and catch duplicate keys, which
// encoding/json silently resolves to the last one.

// jsonPath locates a value in the config file: "mcpServers.files.args[2]".
type jsonPath string

// key extends p by an object key; keys that are not plain identifiers are
// quoted so the path stays unambiguous ("mcpServers[\"my server\"]").
func (p jsonPath) key(k string) jsonPath {
	if plainKey(k) {
		if p == "" {
			return jsonPath(k)
		}
		return p + "." + jsonPath(k)
	}
	return p + jsonPath("["+strconv.Quote(k)+"]")
}

func (p jsonPath) index(i int) jsonPath { return p + jsonPath("["+strconv.Itoa(i)+"]") }

func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '$') {
			return false
		}
	}
	return true
}

// member is one key of a JSON object with its raw value.
type member struct {
	key  string
	path jsonPath
	raw  json.RawMessage
}

// null reports whether the member's value is JSON null; the decoder takes
// null as "omitted", as hosts that write `"env": null` mean.
func (m member) null() bool { return kindOf(m.raw) == "null" }

// objectMembers returns the members of the JSON object raw at p, in file
// order, rejecting a non-object and a duplicate key.
func objectMembers(p jsonPath, raw json.RawMessage) ([]member, error) {
	if k := kindOf(raw); k != "object" {
		return nil, ruleError(p, "must be an object, got %s", k)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, &Error{Path: string(p), Rule: "invalid JSON", Err: err}
	}
	var out []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, &Error{Path: string(p), Rule: "invalid JSON", Err: err}
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, &Error{Path: string(p.key(k)), Rule: "invalid JSON", Err: err}
		}
		if seen[k] {
			return nil, ruleError(p.key(k), "duplicate key")
		}
		seen[k] = true
		out = append(out, member{key: k, path: p.key(k), raw: v})
	}
	return out, nil
}

// kindOf names the JSON type of raw (which encoding/json has validated).
func kindOf(raw json.RawMessage) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func decodeString(m member) (string, error) {
	var s string
	if kindOf(m.raw) != "string" || json.Unmarshal(m.raw, &s) != nil {
		return "", ruleError(m.path, "must be a string, got %s", kindOf(m.raw))
	}
	return s, nil
}

func decodeBool(m member) (bool, error) {
	var b bool
	if kindOf(m.raw) != "boolean" || json.Unmarshal(m.raw, &b) != nil {
		return false, ruleError(m.path, "must be true or false, got %s", kindOf(m.raw))
	}
	return b, nil
}

// decodeInt reads an integer within [lo, hi]; 1.5 and 1e400 are errors,
// not silently truncated or saturated values.
func decodeInt(m member, lo, hi int64) (int64, error) {
	if kindOf(m.raw) != "number" {
		return 0, ruleError(m.path, "must be an integer, got %s", kindOf(m.raw))
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(m.raw)), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(string(bytes.TrimSpace(m.raw)), 64)
		if ferr != nil || f != math.Trunc(f) || f < math.MinInt64 || f > math.MaxInt64 {
			return 0, ruleError(m.path, "must be an integer, got %s", bytes.TrimSpace(m.raw))
		}
		n = int64(f) // 1e3 is an integer written as a float
	}
	switch {
	case n < lo:
		return 0, ruleError(m.path, "must be >= %d, got %d", lo, n)
	case n > hi:
		return 0, ruleError(m.path, "must be <= %d, got %d", hi, n)
	}
	return n, nil
}

// maxMs is the longest duration a config may name: the policy's own cap
// (backoff.MaxMaxDelay), which also keeps ms→ns far from overflow.
const maxMs = int64(24 * time.Hour / time.Millisecond)

// decodeMs reads a duration in milliseconds. Zero is allowed only where it
// means something (waitForReadyMs: fail fast).
func decodeMs(m member, allowZero bool) (time.Duration, error) {
	lo := int64(1)
	if allowZero {
		lo = 0
	}
	if kindOf(m.raw) == "number" {
		if n, err := strconv.ParseFloat(string(bytes.TrimSpace(m.raw)), 64); err == nil && n < float64(lo) {
			if allowZero {
				return 0, ruleError(m.path, "must be >= 0 milliseconds (0 fails fast), got %s", bytes.TrimSpace(m.raw))
			}
			return 0, ruleError(m.path, "must be > 0 milliseconds, got %s", bytes.TrimSpace(m.raw))
		}
	}
	n, err := decodeInt(m, lo, maxMs)
	if err != nil {
		return 0, err
	}
	return time.Duration(n) * time.Millisecond, nil
}

func decodeFloat(m member) (float64, error) {
	var f float64
	if kindOf(m.raw) != "number" || json.Unmarshal(m.raw, &f) != nil {
		return 0, ruleError(m.path, "must be a number, got %s", kindOf(m.raw))
	}
	return f, nil
}

func decodeStrings(m member) ([]string, error) {
	if k := kindOf(m.raw); k != "array" {
		return nil, ruleError(m.path, "must be an array of strings, got %s", k)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(m.raw, &raws); err != nil {
		return nil, &Error{Path: string(m.path), Rule: "invalid JSON", Err: err}
	}
	out := make([]string, 0, len(raws))
	for i, r := range raws {
		s, err := decodeString(member{path: m.path.index(i), raw: r})
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// decodeStringMap reads an object of strings (env, headers), keeping the
// members so callers can report per key.
func decodeStringMap(m member) ([]member, map[string]string, error) {
	ms, err := objectMembers(m.path, m.raw)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]string, len(ms))
	for _, e := range ms {
		s, err := decodeString(e)
		if err != nil {
			return nil, nil, err
		}
		out[e.key] = s
	}
	return ms, out, nil
}

// syntaxError locates a JSON syntax error by line and column.
func syntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	off := int64(-1)
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return &Error{Rule: "invalid JSON", Err: err}
	}
	line, col := 1, 1
	for _, c := range data[:min(int(off), len(data))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &Error{Rule: fmt.Sprintf("invalid JSON at line %d, column %d", line, col), Err: err}
}
