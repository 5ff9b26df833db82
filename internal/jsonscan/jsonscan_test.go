package jsonscan

import (
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestScan(t *testing.T) {
	for _, c := range []struct {
		in     string
		depth  int
		spaced bool
	}{
		{``, 0, false},
		{`1`, 0, false},
		{`{"a":[1,{"b":[]}]}`, 4, false},
		{`{"a": 1}`, 1, true},
		{`"[[[ {{ "`, 0, false},
		{`{"s":"a \"[\\ ]"}`, 1, false},
		{`]]}}[`, 1, false},
		{"[\n]", 1, true},
		{strings.Repeat("[", 1001) + strings.Repeat("]", 1001), 1001, false},
		{`{"x":"tab	in string"}`, 1, false},
	} {
		d, sp := Scan([]byte(c.in))
		if d != c.depth || sp != c.spaced {
			t.Errorf("Scan(%q) = %d, %v; want %d, %v", c.in, d, sp, c.depth, c.spaced)
		}
	}
}
