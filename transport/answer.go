package transport

import (
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A server's answer is never taken for a transport failure
// (docs/design.md §19). A response with neither a result nor an error
// (`{"jsonrpc":"2.0","id":3}`), or with a result that is no JSON object
// (every MCP result is one), is no answer the SDK can decode: its client
// would read an empty result as io.EOF, which reads as the connection's
// end (the call held and replayed although the tool ran), and a raw
// relay would hand the host a nil result. So the answer is judged where
// it is first seen, on the connection: it becomes that request's error,
// the server's fault, and the request counts as sent.

// ErrMalformedAnswer: a server answered a request with a response that
// carries no result the request could have (none, or not a JSON object).
// The request was sent and the server may have acted on it. Errors that
// match it are *MalformedAnswerError.
var ErrMalformedAnswer = errors.New("the server's answer is malformed")

// MalformedAnswerError is a server's answer that is no answer.
type MalformedAnswerError struct {
	ID     jsonrpc.ID // the request's id, as sent
	Reason string     // what is wrong with it
}

func (e *MalformedAnswerError) Error() string {
	// The id stays out of the text: the relay's raw request and the SDK's
	// have ids of their own, and a host gets the same words either way.
	return fmt.Sprintf("the server's answer is malformed: %s (the request was sent and may have taken effect)", e.Reason)
}

// Is makes errors.Is(err, ErrMalformedAnswer) hold.
func (e *MalformedAnswerError) Is(target error) bool { return target == ErrMalformedAnswer }

// CheckAnswer returns a *MalformedAnswerError for a response that has no
// error and no JSON object for a result; nil for any other.
func CheckAnswer(r *jsonrpc.Response) error {
	if r.Error != nil {
		return nil
	}
	reason := ""
	switch first := firstByte(r.Result); {
	case first == 0:
		reason = "it has neither a result nor an error"
	case first != '{':
		reason = "its result is not a JSON object"
	default:
		return nil
	}
	return &MalformedAnswerError{ID: r.ID, Reason: reason}
}

// firstByte is the first byte of data past JSON white space, 0 if none.
func firstByte(data []byte) byte {
	for _, b := range data {
		switch b {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return b
	}
	return 0
}
