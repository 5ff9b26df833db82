package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxLine bounds one line of a trace.
const MaxLine = 1 << 20

// LineError is a problem at one line of a trace. Its Error is
// "line N: reason"; the CLI prints "FILE:N: reason".
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Reasons a trace is rejected; a *LineError wraps one of them (or a
// decoding error).
var (
	ErrNoHeader      = errors.New("missing header: the first line must be {\"mcpkeep_trace\":1,...}")
	ErrVersion       = errors.New("unsupported trace version")
	ErrBadHeader     = errors.New("bad header")
	ErrBadEvent      = errors.New("bad event")
	ErrUnknownEvent  = errors.New("unknown event")
	ErrUnknownState  = errors.New("unknown state")
	ErrIllegal       = errors.New("illegal transition")
	ErrTimeBackwards = errors.New("time goes backwards")
	ErrAfterDisposed = errors.New("event after disposed")
	ErrInvariant     = errors.New("invariant violated")
	ErrWrongServer   = errors.New("event for another server")
	ErrEarly         = errors.New("timer fired early")
)

// Reader reads a trace line by line.
type Reader struct {
	sc      *bufio.Scanner
	line    int
	header  Header
	herr    error
	hasRead bool
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), MaxLine)
	return &Reader{sc: sc}
}

// Line is the number of the last line read (1-based).
func (r *Reader) Line() int { return r.line }

// next returns the next non-blank line.
func (r *Reader) next() ([]byte, error) {
	for r.sc.Scan() {
		r.line++
		if b := bytes.TrimSpace(r.sc.Bytes()); len(b) > 0 {
			return b, nil
		}
	}
	if err := r.sc.Err(); err != nil {
		return nil, &LineError{Line: r.line + 1, Err: err}
	}
	return nil, io.EOF
}

// Header reads and validates the header (once).
func (r *Reader) Header() (Header, error) {
	if r.hasRead {
		return r.header, r.herr
	}
	r.hasRead = true
	b, err := r.next()
	if err == io.EOF {
		r.herr = &LineError{Line: max(r.line, 1), Err: fmt.Errorf("%w (the trace is empty)", ErrNoHeader)}
		return r.header, r.herr
	}
	if err != nil {
		r.herr = err
		return r.header, err
	}
	r.header, err = parseHeader(b)
	if err != nil {
		r.herr = &LineError{Line: r.line, Err: err}
	}
	return r.header, r.herr
}

func parseHeader(b []byte) (Header, error) {
	var h Header
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return h, fmt.Errorf("%w (not a JSON object: %v)", ErrNoHeader, err)
	}
	v, ok := keys["mcpkeep_trace"]
	if !ok {
		return h, ErrNoHeader
	}
	var version int
	if err := json.Unmarshal(v, &version); err != nil || version != Version {
		return h, fmt.Errorf("%w %s (this mcpkeep reads version %d)", ErrVersion, v, Version)
	}
	if err := strictUnmarshal(b, &h); err != nil {
		return h, fmt.Errorf("%w: %v", ErrBadHeader, err)
	}
	if _, ok := keys["started"]; !ok {
		return h, fmt.Errorf("%w: \"started\" is missing", ErrBadHeader)
	}
	switch h.Clock {
	case "", ClockReal, ClockMock:
	default:
		return h, fmt.Errorf("%w: clock %q is neither %q nor %q", ErrBadHeader, h.Clock, ClockReal, ClockMock)
	}
	if h.Server == "" && len(h.Servers) == 0 {
		return h, fmt.Errorf("%w: neither \"server\" nor \"servers\" is set", ErrBadHeader)
	}
	// A multi-server header's inline config is optional: absent, or zero
	// as the Writer writes it when none was set (mcpkeep.TraceHeader of
	// several supervisors); the round trip must read back (FuzzRead).
	if h.Server != "" || len(h.Servers) == 0 || (keys["policy"] != nil && h.Config != (Config{})) {
		if err := h.Config.validate(); err != nil {
			return h, fmt.Errorf("%w: %v", ErrBadHeader, err)
		}
	}
	for name, c := range h.Servers {
		if err := c.validate(); err != nil {
			return h, fmt.Errorf("%w: servers[%q]: %v", ErrBadHeader, name, err)
		}
	}
	return h, nil
}

func (c Config) validate() error {
	if _, err := c.Policy.Backoff().Resolve(); err != nil {
		return fmt.Errorf("policy: %v", err)
	}
	if c.ConnectTimeoutMs <= 0 {
		return fmt.Errorf("connectTimeoutMs must be > 0, got %s", c.ConnectTimeoutMs)
	}
	if c.TerminationWindowMs <= 0 {
		return fmt.Errorf("terminationWindowMs must be > 0, got %s", c.TerminationWindowMs)
	}
	return nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

var required = []string{"t", "server", "gen", "event", "from", "to", "attempt"}

// Next returns the next event, io.EOF at the end, or a *LineError. It
// reads the header first if Header was not called.
func (r *Reader) Next() (Event, error) {
	if _, err := r.Header(); err != nil {
		return Event{}, err
	}
	b, err := r.next()
	if err != nil {
		return Event{}, err
	}
	e, err := parseEvent(b)
	if err != nil {
		return Event{}, &LineError{Line: r.line, Err: err}
	}
	if r.header.Server != "" && e.Server != r.header.Server {
		return Event{}, &LineError{Line: r.line, Err: fmt.Errorf("%w: %q in a trace of %q", ErrWrongServer, e.Server, r.header.Server)}
	}
	return e, nil
}

func parseEvent(b []byte) (Event, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return Event{}, fmt.Errorf("%w: not a JSON object: %v", ErrBadEvent, err)
	}
	if _, ok := keys["mcpkeep_trace"]; ok {
		return Event{}, fmt.Errorf("%w: a second header", ErrBadEvent)
	}
	var missing []string
	for _, k := range required {
		if _, ok := keys[k]; !ok {
			missing = append(missing, `"`+k+`"`)
		}
	}
	if len(missing) > 0 {
		return Event{}, fmt.Errorf("%w: missing %s", ErrBadEvent, strings.Join(missing, ", "))
	}
	var w wireEvent
	if err := strictUnmarshal(b, &w); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrBadEvent, err)
	}
	if w.T < 0 {
		return Event{}, fmt.Errorf("%w: negative offset %s ms", ErrTimeBackwards, w.T)
	}
	if w.Server == "" {
		return Event{}, fmt.Errorf("%w: empty server", ErrBadEvent)
	}
	if w.NextRetry != nil && *w.NextRetry < 0 {
		return Event{}, fmt.Errorf("%w: negative next_retry_ms", ErrBadEvent)
	}
	return w.event()
}

// Read reads a whole trace without checking it against the lifecycle.
func Read(r io.Reader) (Header, []Event, error) {
	tr := NewReader(r)
	h, err := tr.Header()
	if err != nil {
		return h, nil, err
	}
	var evs []Event
	for {
		e, err := tr.Next()
		if err == io.EOF {
			return h, evs, nil
		}
		if err != nil {
			return h, evs, err
		}
		evs = append(evs, e)
	}
}
