package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"time"
)

// Store is membership plus a key-value with TTLs (docs/design.md §26).
// Its methods are safe for concurrent use.
type Store interface {
	Membership
	KV
	// Close releases the store's connections.
	Close() error
}

// Membership is the set of live replicas.
type Membership interface {
	// Register announces replica id at addr (host:port) for ttl; a
	// replica calls it again well within ttl while it lives.
	Register(ctx context.Context, id, addr string, ttl time.Duration) error
	// Members lists the live replicas: id → address. Entries that fail
	// validation are left out.
	Members(ctx context.Context) (map[string]string, error)
	// Leave removes replica id at once (SIGTERM).
	Leave(ctx context.Context, id string) error
}

// KV keeps bounded values for a TTL.
type KV interface {
	// Put stores val under key for ttl (0 < ttl <= MaxTTL); a value
	// longer than the store's bound is ErrTooLarge.
	Put(ctx context.Context, key string, val []byte, ttl time.Duration) error
	// Get returns key's value: ErrNotFound when there is none (or it
	// expired), ErrTooLarge when what is stored exceeds the bound.
	Get(ctx context.Context, key string) ([]byte, error)
	// Delete removes key; a missing key is no error.
	Delete(ctx context.Context, key string) error
}

// Errors of a Store, for errors.Is.
var (
	ErrNotFound    = errors.New("store: not found")
	ErrTooLarge    = errors.New("store: value too large")
	ErrInvalid     = errors.New("store: invalid argument")
	ErrUnreachable = errors.New("store: unreachable")
)

// Bounds.
const (
	// DefaultMaxValue bounds a value (a finished task's result).
	DefaultMaxValue = 4 << 20
	// MaxTTL bounds any TTL: nothing is kept longer.
	MaxTTL = 7 * 24 * time.Hour
	// MaxMembers bounds how many members a listing returns.
	MaxMembers = 256
	// maxKey bounds a key's length.
	maxKey = 512
	// maxAddr bounds a member's address.
	maxAddr = 261
)

// idPattern is a replica id: a DNS label's characters and dots (a host
// name), no separator the handles use (docs/design.md §26).
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,62}$`)

// ValidID reports why id is not a replica id, or nil.
func ValidID(id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("%w: replica id %q: want 1-63 of letters, digits, '.' and '-', starting with a letter or digit", ErrInvalid, id)
	}
	return nil
}

// ValidAddr reports why addr is not a forwarding address (host:port
// with a numeric port), or nil.
func ValidAddr(addr string) error {
	if len(addr) > maxAddr {
		return fmt.Errorf("%w: address of %d bytes", ErrInvalid, len(addr))
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: address %q: %v", ErrInvalid, addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%w: address %q: port is not 1-65535", ErrInvalid, addr)
	}
	if host == "" {
		return fmt.Errorf("%w: address %q: no host", ErrInvalid, addr)
	}
	return nil
}

func checkTTL(ttl time.Duration) error {
	if ttl <= 0 || ttl > MaxTTL {
		return fmt.Errorf("%w: ttl %v: want (0, %v]", ErrInvalid, ttl, MaxTTL)
	}
	return nil
}

func checkKey(key string) error {
	if key == "" || len(key) > maxKey {
		return fmt.Errorf("%w: key of %d bytes: want 1-%d", ErrInvalid, len(key), maxKey)
	}
	return nil
}

func checkMember(id, addr string) error {
	if err := ValidID(id); err != nil {
		return err
	}
	return ValidAddr(addr)
}
