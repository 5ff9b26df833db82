package transport

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A body of exactly the bound is whole; one byte more fails, once noted.
func TestCappedBodyBound(t *testing.T) {
	for _, tc := range []struct {
		size    int
		wantErr bool
	}{{1000, false}, {1001, true}, {5000, true}, {0, false}} {
		noted := 0
		c := &cappedBody{rc: io.NopCloser(strings.NewReader(strings.Repeat("x", tc.size))), left: 1000,
			err:  &BodyTooLargeError{Method: "GET", URL: "http://h/mcp", Status: "200 OK", Limit: 1000},
			over: func(*BodyTooLargeError) { noted++ }}
		b, err := io.ReadAll(c)
		if tc.wantErr {
			if !errors.Is(err, ErrBodyTooLarge) || len(b) != 1000 || noted != 1 {
				t.Errorf("size %d: read %d bytes, err %v, noted %d; want 1000, ErrBodyTooLarge, 1", tc.size, len(b), err, noted)
			}
			if _, err := c.Read(make([]byte, 10)); !errors.Is(err, ErrBodyTooLarge) || noted != 1 {
				t.Errorf("size %d: a later read: %v, noted %d", tc.size, err, noted)
			}
			continue
		}
		if err != nil || len(b) != tc.size || noted != 0 {
			t.Errorf("size %d: read %d bytes, err %v, noted %d", tc.size, len(b), err, noted)
		}
	}
	if s := (&BodyTooLargeError{Limit: 64 << 10}).Error(); !strings.Contains(s, "64 KiB") {
		t.Errorf("%q does not name 64 KiB", s)
	}
}

// readUpTo stops one byte past the bound, whatever the size hint says.
func TestReadUpTo(t *testing.T) {
	for _, tc := range []struct{ body, hint int64 }{{0, 0}, {0, -1}, {999, -1}, {1000, 1000}, {1001, -1}, {300000, -1}, {5, 2}} {
		b, err := readUpTo(strings.NewReader(strings.Repeat("x", int(tc.body))), 1001, tc.hint)
		want := min(tc.body, 1001)
		if err != nil || int64(len(b)) != want || int64(cap(b)) > 1001 {
			t.Errorf("body %d hint %d: read %d (cap %d), %v; want %d", tc.body, tc.hint, len(b), cap(b), err, want)
		}
	}
}

func TestExpectsAnswer(t *testing.T) {
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}`:    true,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`:      false,
		`{"jsonrpc":"2.0","method":"notifications/cancelled"}`:                    false,
		`{"jsonrpc":"2.0","id":"a","result":{}}`:                                  false,
		`{"jsonrpc":"2.0","id":4,"error":{"code":1,"message":"no"}}`:              false,
		`{"params":{"big":[1,2,3]},"method":"tools/list","id":5,"jsonrpc":"2.0"}`: true,
		`{"params":{"big":[1,2,3]},"method":"notifications/x","jsonrpc":"2.0"}`:   false,
		`not json`: true,
	} {
		req, err := http.NewRequest(http.MethodPost, "http://h/mcp", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		if got := expectsAnswer(req); got != want {
			t.Errorf("expectsAnswer(%s) = %v; want %v", body, got, want)
		}
	}
}
