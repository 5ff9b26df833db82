package transport

import (
	"bufio"
	"io"
	"strings"
)

// Bounds of the stderr a stdio generation keeps and forwards.
const (
	stderrTailLines = 20
	stderrTailBytes = 4096
	// stderrMaxLine truncates longer lines (the rest up to the newline is
	// dropped), so a child writing without newlines cannot grow memory.
	stderrMaxLine = 4096
)

// stderrTail keeps the last lines of a child's stderr: at most
// stderrTailLines lines and stderrTailBytes bytes, except that the newest
// line is always kept. Not safe for concurrent use; its owner locks.
type stderrTail struct {
	lines []string
	size  int // sum of len(line)+1
}

func (t *stderrTail) add(line string) {
	t.lines = append(t.lines, line)
	t.size += len(line) + 1
	for len(t.lines) > 1 && (len(t.lines) > stderrTailLines || t.size > stderrTailBytes) {
		t.size -= len(t.lines[0]) + 1
		t.lines[0] = ""
		t.lines = t.lines[1:]
	}
}

func (t *stderrTail) String() string { return strings.Join(t.lines, "\n") }

// readLines calls line for each line of r (without its newline, truncated
// to stderrMaxLine bytes) until r fails or ends; a last line without a
// newline counts.
func readLines(r io.Reader, line func(string)) {
	br := bufio.NewReaderSize(r, stderrMaxLine)
	truncated := false // dropping the rest of an over-long line
	for {
		b, isPrefix, err := br.ReadLine()
		if err != nil {
			return
		}
		if !truncated {
			line(strings.TrimSuffix(string(b), "\r"))
		}
		truncated = isPrefix
	}
}
