package replica

import (
	"errors"
	"strings"
	"testing"
)

func mustNames(t *testing.T, id string, key *[32]byte) *Names {
	t.Helper()
	n, err := NewNames(id, key)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNamesRoundTrip(t *testing.T) {
	key := &[32]byte{1}
	a, b := mustNames(t, "r-a.example", key), mustNames(t, "r-b", key)
	sid := a.NewSessionID()
	for _, c := range sid {
		if c < 0x21 || c > 0x7e {
			t.Fatalf("session id %q has %q: not visible ASCII", sid, c)
		}
	}
	// Any replica with the key reads the owner.
	owner, _, err := b.Parse(KindSession, sid)
	if err != nil || owner != "r-a.example" {
		t.Fatalf("Parse: %q %v", owner, err)
	}
	task := a.Name(KindTask, "files+t~1") // the inner part may hold the separator
	owner, inner, err := b.Parse(KindTask, task)
	if err != nil || owner != "r-a.example" || inner != "files+t~1" {
		t.Fatalf("Parse task: %q %q %v", owner, inner, err)
	}
}

func TestNamesRefuseForgeries(t *testing.T) {
	a := mustNames(t, "ra", &[32]byte{1})
	other := mustNames(t, "ra", &[32]byte{2})
	sid := a.NewSessionID()
	_, tag, _ := strings.Cut(sid, sep)
	for name, h := range map[string]string{
		"another key":       other.NewSessionID(),
		"owner swapped":     "rb" + sep + tag,
		"inner altered":     sid + "x",
		"a task as session": a.Name(KindTask, "x"),
	} {
		if _, _, err := a.Parse(KindSession, h); !errors.Is(err, ErrForged) {
			t.Errorf("%s: %v, want ErrForged", name, err)
		}
	}
	for _, h := range []string{"", "plain-sdk-session-id", "ra~short~x", "bad id~" + strings.Repeat("0", 24) + "~x", "~" + strings.Repeat("0", 24) + "~x"} {
		if _, _, err := a.Parse(KindSession, h); !errors.Is(err, ErrNotHandle) {
			t.Errorf("%q: %v, want ErrNotHandle", h, err)
		}
	}
	if _, err := NewNames("a~b", nil); err == nil {
		t.Error("a replica id holding the separator was taken")
	}
}
