package store

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a Store in a Redis (or compatible) server, shared by the
// replicas (docs/design.md §26). Keys are "<prefix>:member:<id>" (the
// address, expiring with the member's TTL) and "<prefix>:kv:<key>" (a
// value, expiring with its TTL).
type Redis struct {
	c        *redis.Client
	prefix   string
	maxValue int
}

// RedisOptions configure OpenRedis.
type RedisOptions struct {
	// Password authenticates to the server (never in the URL: a URL
	// shows in process listings and logs).
	Password string
	// MaxValue bounds a value; 0 is DefaultMaxValue.
	MaxValue int
	// Prefix starts every key; "" is "mcpkeep".
	Prefix string
	// Timeout bounds the dial and each command; 0 is 3 s.
	Timeout time.Duration
	// RootCAs verify a rediss:// server's certificate; nil is the
	// system's roots.
	RootCAs *x509.CertPool
}

// valueMark starts every stored value: a value read without it was not
// written by a Store (or is missing: GETRANGE answers "" for both).
const valueMark = 'v'

// OpenRedis connects to rawURL (redis://HOST:PORT/DB, or rediss:// for
// TLS) and checks that the server answers: a server that cannot be
// reached is an error wrapping ErrUnreachable, a bad URL one wrapping
// ErrInvalid.
func OpenRedis(ctx context.Context, rawURL string, o RedisOptions) (*Redis, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: store URL: %v", ErrInvalid, err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("%w: store URL %q: scheme must be redis:// or rediss://", ErrInvalid, Redact(rawURL))
	}
	if _, has := u.User.Password(); has {
		return nil, fmt.Errorf("%w: store URL %q carries a password: give it in the environment instead", ErrInvalid, Redact(rawURL))
	}
	if len(u.Query()) > 0 {
		return nil, fmt.Errorf("%w: store URL %q: no query parameters are taken", ErrInvalid, Redact(rawURL))
	}
	quietOnce.Do(func() { redis.SetLogger(quiet{}) })
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: store URL %q: %v", ErrInvalid, Redact(rawURL), err)
	}
	if u.Scheme == "rediss" {
		opts.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: u.Hostname(), RootCAs: o.RootCAs}
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	opts.Password = o.Password
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = timeout, timeout, timeout
	opts.MaxRetries = 1
	opts.PoolSize = 16
	opts.DisableIdentity = true // no CLIENT SETINFO: older servers refuse it
	r := &Redis{c: redis.NewClient(opts), prefix: o.Prefix, maxValue: o.MaxValue}
	if r.prefix == "" {
		r.prefix = "mcpkeep"
	}
	if r.maxValue <= 0 {
		r.maxValue = DefaultMaxValue
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := r.c.Ping(pctx).Err(); err != nil {
		_ = r.c.Close()
		return nil, fmt.Errorf("store %s: %w: %v", Redact(rawURL), ErrUnreachable, err)
	}
	return r, nil
}

// quiet drops go-redis's own log lines (printed to stderr, outside the
// process's log format): every failure reaches the caller as an error
// value, and the membership logs the store's loss once.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

var quietOnce sync.Once

// Redact is rawURL without its user information.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	return u.String()
}

func (r *Redis) memberKey(id string) string { return r.prefix + ":member:" + id }
func (r *Redis) valueKey(key string) string { return r.prefix + ":kv:" + key }

// wrap marks an error that is not the server's answer (a connection
// lost, a timeout) as ErrUnreachable.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return fmt.Errorf("store: %s: %w: %w", op, ErrUnreachable, err)
}

// Register implements Membership.
func (r *Redis) Register(ctx context.Context, id, addr string, ttl time.Duration) error {
	if err := checkMember(id, addr); err != nil {
		return err
	}
	if err := checkTTL(ttl); err != nil {
		return err
	}
	return wrap("register", r.c.Set(ctx, r.memberKey(id), addr, ttl).Err())
}

// Members implements Membership: at most MaxMembers, each id and
// address validated and each address read bounded.
func (r *Redis) Members(ctx context.Context) (map[string]string, error) {
	prefix := r.memberKey("")
	var keys []string
	var cursor uint64
	for scans := 0; len(keys) < MaxMembers && scans < 64; scans++ {
		batch, next, err := r.c.Scan(ctx, cursor, prefix+"*", 128).Result()
		if err != nil {
			return nil, wrap("members", err)
		}
		for _, k := range batch {
			if len(keys) < MaxMembers && ValidID(strings.TrimPrefix(k, prefix)) == nil {
				keys = append(keys, k)
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	out := map[string]string{}
	if len(keys) == 0 {
		return out, nil
	}
	pipe := r.c.Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.GetRange(ctx, k, 0, maxAddr)
	}
	if _, err := pipe.Exec(ctx); err != nil && !isRedisErr(err) {
		return nil, wrap("members", err)
	}
	for i, k := range keys {
		addr, err := cmds[i].Result()
		if err != nil || ValidAddr(addr) != nil {
			continue // another type at the key, or not an address
		}
		out[strings.TrimPrefix(k, prefix)] = addr
	}
	return out, nil
}

func isRedisErr(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr)
}

// Leave implements Membership.
func (r *Redis) Leave(ctx context.Context, id string) error {
	if err := ValidID(id); err != nil {
		return err
	}
	return wrap("leave", r.c.Del(ctx, r.memberKey(id)).Err())
}

// Put implements KV.
func (r *Redis) Put(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := checkTTL(ttl); err != nil {
		return err
	}
	if len(val) > r.maxValue {
		return fmt.Errorf("%w: %d bytes, bound %d", ErrTooLarge, len(val), r.maxValue)
	}
	stored := make([]byte, 0, 1+len(val))
	stored = append(append(stored, valueMark), val...)
	return wrap("put", r.c.Set(ctx, r.valueKey(key), stored, ttl).Err())
}

// Get implements KV: it reads at most the bound (plus one byte, to tell
// a value over it), whatever the server holds.
func (r *Redis) Get(ctx context.Context, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	// GETRANGE's end is inclusive: the mark, maxValue bytes, one more.
	b, err := r.c.GetRange(ctx, r.valueKey(key), 0, int64(r.maxValue)+1).Bytes()
	switch {
	case err != nil:
		return nil, wrap("get", err)
	case len(b) == 0:
		return nil, ErrNotFound
	case b[0] != valueMark:
		return nil, fmt.Errorf("%w: the value at %q was not written by mcpkeep", ErrInvalid, key)
	case len(b)-1 > r.maxValue:
		return nil, fmt.Errorf("%w: the value at %q exceeds %d bytes", ErrTooLarge, key, r.maxValue)
	}
	return b[1:], nil
}

// Delete implements KV.
func (r *Redis) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return wrap("delete", r.c.Del(ctx, r.valueKey(key)).Err())
}

// Close implements Store.
func (r *Redis) Close() error { return r.c.Close() }
