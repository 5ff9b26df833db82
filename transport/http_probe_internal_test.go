package transport

import (
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 7, 28, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"0", 0}, {"7", 7 * time.Second}, {" 30 ", 30 * time.Second},
		{"-5", 0}, {"soon", 0}, {"3600", MaxRetryAfter}, {"99999999999999999999", 0},
		{"Tue, 28 Jul 2026 12:01:00 GMT", time.Minute},
		{"Tue, 28 Jul 2026 11:00:00 GMT", 0},
		{"Wed, 29 Jul 2026 12:00:00 GMT", MaxRetryAfter},
	} {
		if got := parseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %v; want %v", tc.in, got, tc.want)
		}
	}
}

func TestSSECursor(t *testing.T) {
	for _, tc := range []struct {
		in       string
		boundary bool
		lastID   string
	}{
		{"", true, ""},
		{": keepalive\n", true, ""},
		{"data: x\n", false, ""},
		{"data: x\n\n", true, ""},
		{"id: 7\ndata: x\n\n", true, "7"},
		{"id: 7\ndata: x\n\nid: 8\ndata: y", false, "7"},
		{"id:9\r\ndata: x\r\n\r\n", true, "9"},
		{"id: 1\rdata: x\r\r", true, "1"},
		{"event: message\ndata: {\"a\":1}\n\n: ping\n", true, ""},
	} {
		var c sseCursor
		// Byte by byte, as a stream may split anywhere.
		for i := range len(tc.in) {
			c.feed([]byte{tc.in[i]})
		}
		if c.atBoundary() != tc.boundary || c.lastID != tc.lastID {
			t.Errorf("%q: boundary %v lastID %q; want %v %q", tc.in, c.atBoundary(), c.lastID, tc.boundary, tc.lastID)
		}
	}
}
