package replica

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpkeep/mcpkeep/store"
)

// Kinds of handle: a tag made for one kind does not pass for another.
const (
	KindSession = "session"
	KindTask    = "task"
)

// sep separates a handle's parts; a replica id never holds it
// (store.ValidID) and neither does a tag (hex).
const sep = "~"

// tagLen is a tag's length in bytes (hex doubles it): 96 bits.
const tagLen = 12

// Errors of Parse, for errors.Is.
var (
	// ErrNotHandle: the string is not in the handle form at all (a
	// handle of a process that is not a replica, say).
	ErrNotHandle = errors.New("replica: not an owner-named handle")
	// ErrForged: the form is right but the tag is not this key's.
	ErrForged = errors.New("replica: handle tag does not verify")
)

// Names mints and checks this replica's handles.
type Names struct {
	id  string
	key []byte
}

// NewNames returns the Names of replica id, tagging with a key derived
// from stateKey (nil: a random key, for a process alone: its handles
// then verify nowhere else).
func NewNames(id string, stateKey *[32]byte) (*Names, error) {
	if err := store.ValidID(id); err != nil {
		return nil, err
	}
	var k [32]byte
	if stateKey != nil {
		k = *stateKey
	} else {
		_, _ = rand.Read(k[:])
	}
	// A key of its own for the tags, so that no tag is ever computed
	// with the key that seals request state.
	m := hmac.New(sha256.New, k[:])
	m.Write([]byte("mcpkeep handle tag key"))
	return &Names{id: id, key: m.Sum(nil)}, nil
}

// ID is this replica's id.
func (n *Names) ID() string { return n.id }

func (n *Names) tag(kind, owner, inner string) string {
	m := hmac.New(sha256.New, n.key)
	for _, s := range []string{kind, owner, inner} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil)[:tagLen])
}

// Name is inner as a handle of kind owned by this replica.
func (n *Names) Name(kind, inner string) string {
	return n.id + sep + n.tag(kind, n.id, inner) + sep + inner
}

// NewSessionID is a fresh legacy session id owned by this replica (for
// the SDK's ServerOptions.GetSessionID): visible ASCII only, as the
// transport requires.
func (n *Names) NewSessionID() string { return n.Name(KindSession, rand.Text()) }

// Parse returns the owner and inner part of handle h of kind: an error
// wrapping ErrNotHandle when h is not in the form, ErrForged when its
// tag does not verify (another key, or altered).
func (n *Names) Parse(kind, h string) (owner, inner string, err error) {
	owner, rest, ok := strings.Cut(h, sep)
	if !ok || store.ValidID(owner) != nil {
		return "", "", ErrNotHandle
	}
	tag, inner, ok := strings.Cut(rest, sep)
	if !ok || len(tag) != 2*tagLen {
		return "", "", ErrNotHandle
	}
	if !hmac.Equal([]byte(tag), []byte(n.tag(kind, owner, inner))) {
		return "", "", fmt.Errorf("%w: %s handle naming %q", ErrForged, kind, owner)
	}
	return owner, inner, nil
}
