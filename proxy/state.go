package proxy

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A bridge's requestState (docs/design.md §24) is handed to a 2026-07-28
// host and comes back with its answers. It is sealed (AES-256-GCM, the
// key Options.StateKey or one drawn per Server) and names what the
// continuation must match: the owner (this Server), the bridge, the
// server and tool called, the round it answers, a digest of the round-1
// answer (the input requests first sent), and an expiry. Only the host
// session that opened the bridge may continue it (bridges.resume); Host
// is for the host's identity where auth gives one (an HTTP front that
// serves 2026-07-28 statelessly has no session to bind to: today's
// single shared token names no host, so it stays empty).
// Tampered, replayed, expired or foreign state is refused with the
// spec's error for bad params (-32602), saying why.

// stateVersion starts every sealed state's plaintext (its format).
const stateVersion = 1

// sealedState is what a requestState carries.
type sealedState struct {
	V      int    `json:"v"`
	Owner  string `json:"o"`
	Bridge string `json:"b"`
	Server string `json:"s"`
	Tool   string `json:"t"`
	Round  uint64 `json:"r"`
	Digest string `json:"d"`
	Expiry int64  `json:"e"` // Unix milliseconds
	Host   string `json:"h"`
	// Task, when set, makes the state a task's pointer: round 1 of a
	// 2026-07-28 host's call whose task asked for input within the grace
	// period (tasks_rounds.go, docs/design.md §25); Bridge is then empty.
	Task string `json:"k,omitempty"`
}

// stateSealer seals and opens sealed states.
type stateSealer struct {
	aead  cipher.AEAD
	owner string
	now   func() time.Time
}

// newStateSealer seals with key, or a random key when key is nil.
func newStateSealer(key *[32]byte) *stateSealer {
	var k [32]byte
	if key != nil {
		k = *key
	} else {
		_, _ = rand.Read(k[:]) // never fails (crypto/rand)
	}
	block, err := aes.NewCipher(k[:])
	if err != nil {
		panic(err) // not reached: a 32-byte key is AES-256's
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err) // not reached: GCM takes AES
	}
	var owner [8]byte
	_, _ = rand.Read(owner[:])
	return &stateSealer{aead: aead, owner: hex.EncodeToString(owner[:]), now: time.Now}
}

// stateAD binds a sealed state to its use.
var stateAD = []byte("mcpkeep requestState")

// seal is st sealed: nonce and ciphertext, base64 (URL alphabet).
func (s *stateSealer) seal(st sealedState) string {
	st.V, st.Owner = stateVersion, s.owner
	plain, _ := json.Marshal(st) // strings and numbers only: never fails
	out := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	_, _ = rand.Read(out)
	out = s.aead.Seal(out, out, plain, stateAD)
	return base64.RawURLEncoding.EncodeToString(out)
}

// open returns the state raw seals, or why it is refused.
func (s *stateSealer) open(raw string) (sealedState, *jsonrpc.Error) {
	st, werr := s.unseal(raw)
	if werr != nil {
		return st, werr
	}
	if st.Owner != s.owner {
		return st, badState("it belongs to another mcpkeep process (owner " + st.Owner + ")")
	}
	if s.now().UnixMilli() > st.Expiry {
		return st, badState("it expired")
	}
	return st, nil
}

// unseal returns what raw seals, whoever owns it (the replicas'
// dispatcher reads the owner there, docs/design.md §26).
func (s *stateSealer) unseal(raw string) (sealedState, *jsonrpc.Error) {
	var st sealedState
	data, err := base64.RawURLEncoding.DecodeString(raw)
	n := s.aead.NonceSize()
	if err != nil || len(data) < n {
		return st, badState("it is not a state this proxy issued")
	}
	plain, err := s.aead.Open(nil, data[:n], data[n:], stateAD)
	if err != nil {
		return st, badState("it was altered, or sealed with another key")
	}
	if err := json.Unmarshal(plain, &st); err != nil || st.V != stateVersion {
		return st, badState("its format is unknown")
	}
	return st, nil
}

// badState is the host's error for a refused requestState: the spec's
// for bad params (-32602), with the reason.
func badState(why string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "mcpkeep: invalid requestState: " + why}
}

// digest is the digest of a round's answer (its input requests).
func digest(v any) string {
	data, _ := json.Marshal(v)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// expiryAfter is the expiry of a state issued now for d.
func (s *stateSealer) expiryAfter(d time.Duration) int64 { return s.now().Add(d).UnixMilli() }
