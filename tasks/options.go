package tasks

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/benbjohnson/clock"
)

// Options configure an Engine. Zero fields take the defaults below.
type Options struct {
	// Clock drives TTLs and timestamps (tests inject a mock).
	Clock clock.Clock
	// Store keeps finished tasks (default: NewMemStore()).
	Store Store
	// MaxPerOwner bounds the tasks one host has, working and kept.
	MaxPerOwner int
	// MaxTotal bounds every task of the engine, working and kept.
	MaxTotal int
	// MaxResultBytes bounds one task's result; a larger one fails the
	// task with ReasonTooLarge.
	MaxResultBytes int
	// MaxKeptBytes bounds the result bytes of finished tasks this engine
	// keeps: while over it, a new task is refused.
	MaxKeptBytes int64
	// DefaultTTL is a task's TTL when the host names none; MaxTTL caps
	// what it names.
	DefaultTTL, MaxTTL time.Duration
	// PollInterval is the hint given to hosts.
	PollInterval time.Duration
	// SweepEvery is how often, at most, the Store is swept.
	SweepEvery time.Duration
	// IsLost tells a call lost with its server connection (the proxy
	// passes errors.Is(err, mcpkeep.ErrConnectionLost)). Default: ErrLost.
	IsLost func(error) bool
	// RPCError turns a call's error into the task's error. Default: code
	// -32603 with the error's text.
	RPCError func(error) *RPCError
	// OnChange, when set, hears every change of a task's status (status
	// notifications, metrics), outside the engine's lock.
	OnChange func(Record)
	// NewID makes task ids (default: 128 random bits in hex).
	NewID  func() string
	Logger *slog.Logger
}

// Defaults (docs/design.md §25).
const (
	DefaultMaxPerOwner    = 64
	DefaultMaxTotal       = 1024
	DefaultMaxResultBytes = 4 << 20
	DefaultMaxKeptBytes   = 256 << 20
	DefaultTTL            = 10 * time.Minute
	DefaultMaxTTL         = 24 * time.Hour
	DefaultPollInterval   = time.Second
	DefaultSweepEvery     = time.Minute
)

// ErrLost is the default mark of a lost call (Options.IsLost).
var ErrLost = errors.New("call lost with its server connection")

// ErrInvalidOptions is wrapped by every Options error.
var ErrInvalidOptions = errors.New("invalid task engine options")

func (o Options) withDefaults() (Options, error) {
	for _, f := range []struct {
		name string
		v    int64
	}{{"MaxPerOwner", int64(o.MaxPerOwner)}, {"MaxTotal", int64(o.MaxTotal)}, {"MaxResultBytes", int64(o.MaxResultBytes)},
		{"MaxKeptBytes", o.MaxKeptBytes}, {"DefaultTTL", int64(o.DefaultTTL)}, {"MaxTTL", int64(o.MaxTTL)},
		{"PollInterval", int64(o.PollInterval)}, {"SweepEvery", int64(o.SweepEvery)}} {
		if f.v < 0 {
			return o, fmt.Errorf("tasks: Options.%s: %d is negative: %w", f.name, f.v, ErrInvalidOptions)
		}
	}
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	if o.Store == nil {
		o.Store = NewMemStore()
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.MaxPerOwner, DefaultMaxPerOwner)
	def(&o.MaxTotal, DefaultMaxTotal)
	def(&o.MaxResultBytes, DefaultMaxResultBytes)
	if o.MaxKeptBytes == 0 {
		o.MaxKeptBytes = DefaultMaxKeptBytes
	}
	dur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	dur(&o.DefaultTTL, DefaultTTL)
	dur(&o.MaxTTL, DefaultMaxTTL)
	dur(&o.PollInterval, DefaultPollInterval)
	dur(&o.SweepEvery, DefaultSweepEvery)
	if o.DefaultTTL > o.MaxTTL {
		return o, fmt.Errorf("tasks: Options.DefaultTTL %v is over MaxTTL %v: %w", o.DefaultTTL, o.MaxTTL, ErrInvalidOptions)
	}
	if o.IsLost == nil {
		o.IsLost = func(err error) bool { return errors.Is(err, ErrLost) }
	}
	if o.RPCError == nil {
		o.RPCError = func(err error) *RPCError { return &RPCError{Code: -32603, Message: err.Error()} }
	}
	if o.NewID == nil {
		o.NewID = randomID
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
