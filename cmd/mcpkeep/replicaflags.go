package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpkeep/mcpkeep/metrics"
	"github.com/mcpkeep/mcpkeep/proxy"
	"github.com/mcpkeep/mcpkeep/replica"
	"github.com/mcpkeep/mcpkeep/store"
	"github.com/spf13/pflag"
)

// storePasswordEnv holds the store's password (never the URL: it shows
// in process listings). It is unset once read: servers inherit
// mcpkeep's environment.
const storePasswordEnv = "MCPKEEP_STORE_PASSWORD"

// replicaOpts are the flags of replicas (docs/design.md §26).
type replicaOpts struct {
	store     string // --store redis://HOST:PORT/DB
	id        string // --replica-id
	advertise string // --advertise host:port
	keyFile   string // --state-key-file
	caFile    string // --store-ca-file
	noForward bool   // --replica-no-forward (hidden: the replicas test's control run)

	key      *[32]byte // read from keyFile by check
	password string
	roots    *x509.CertPool // read from caFile by check
}

func (o *replicaOpts) register(f *pflag.FlagSet) {
	f.StringVar(&o.store, "store", "", "with --listen, run as one of several replicas sharing the store `URL` (redis://HOST:PORT/DB, rediss:// for TLS; password in $"+storePasswordEnv+")")
	f.StringVar(&o.id, "replica-id", "", "with --store, this replica's `ID` in the handles it issues (default: the host name)")
	f.StringVar(&o.advertise, "advertise", "", "with --store, the `HOST:PORT` other replicas forward this one's requests to (default: --listen's address when it names a host and port)")
	f.StringVar(&o.keyFile, "state-key-file", "", "the `FILE` with the key (32 bytes: raw, hex or base64) sealing request state and tagging handles; replicas share it (required with --store)")
	f.StringVar(&o.caFile, "store-ca-file", "", "with a rediss:// --store, the PEM `FILE` of the CA that signed the store's certificate (default: the system's roots)")
	f.BoolVar(&o.noForward, "replica-no-forward", false, "with --store, forward nothing to other replicas (for comparison)")
	_ = f.MarkHidden("replica-no-forward")
}

// check validates the replica flags against listen's address and reads
// the key; each error names its flag.
func (o *replicaOpts) check(listen string) error {
	var errs []error
	if o.keyFile != "" {
		key, err := readStateKey(o.keyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("--state-key-file: %w", err))
		}
		o.key = key
	}
	if o.store == "" {
		for flag, set := range map[string]bool{"--replica-id": o.id != "", "--advertise": o.advertise != "", "--replica-no-forward": o.noForward, "--store-ca-file": o.caFile != ""} {
			if set {
				errs = append(errs, fmt.Errorf("%s: only with --store", flag))
			}
		}
		return errors.Join(errs...)
	}
	if listen == "" {
		errs = append(errs, errors.New("--store: only with --listen (replicas serve over HTTP)"))
	}
	if o.keyFile == "" {
		errs = append(errs, errors.New("--store: give --state-key-file too (the replicas must share the key that seals request state and tags handles)"))
	}
	if o.id == "" {
		h, err := os.Hostname()
		if err != nil {
			errs = append(errs, fmt.Errorf("--replica-id: not given, and no host name: %v", err))
		}
		o.id = h
	}
	if err := store.ValidID(o.id); err != nil {
		errs = append(errs, fmt.Errorf("--replica-id: %w", err))
	}
	if o.advertise == "" && listen != "" {
		host, port, err := net.SplitHostPort(listen)
		if err == nil && (port == "0" || host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified()) {
			errs = append(errs, fmt.Errorf("--advertise: required with --store when --listen %q names no host or port the other replicas can reach", listen))
		}
		o.advertise = listen
	}
	if err := store.ValidAddr(o.advertise); err != nil {
		errs = append(errs, fmt.Errorf("--advertise: %w", err))
	}
	if o.caFile != "" {
		pem, err := os.ReadFile(o.caFile)
		o.roots = x509.NewCertPool()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("--store-ca-file: %w", err))
		case !strings.HasPrefix(o.store, "rediss://"):
			errs = append(errs, errors.New("--store-ca-file: only with a rediss:// --store"))
		case !o.roots.AppendCertsFromPEM(pem):
			errs = append(errs, fmt.Errorf("--store-ca-file: %s holds no PEM certificate", o.caFile))
		}
	}
	o.password = os.Getenv(storePasswordEnv)
	_ = os.Unsetenv(storePasswordEnv)
	return errors.Join(errs...)
}

// readStateKey reads a 32-byte key: raw, 64 hex digits or base64.
func readStateKey(path string) (*[32]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var k [32]byte
	if len(data) == 32 {
		copy(k[:], data)
		return &k, nil
	}
	text := string(bytes.TrimSpace(data))
	for _, dec := range []func(string) ([]byte, error){hex.DecodeString, base64.StdEncoding.DecodeString, base64.RawURLEncoding.DecodeString} {
		if b, err := dec(text); err == nil && len(b) == 32 {
			copy(k[:], b)
			return &k, nil
		}
	}
	return nil, fmt.Errorf("%s holds no 32-byte key (raw, 64 hex digits or base64; e.g. openssl rand -hex 32)", path)
}

// replicaRun is one run's replica wiring: the store, the names, the
// membership once the listener serves.
type replicaRun struct {
	st     store.Store
	rep    *proxy.Replicas
	member atomic.Pointer[replica.Member]
}

// Addr implements proxy.Replicas.Peers: nobody before Join.
func (r *replicaRun) Addr(id string) (string, bool) {
	if m := r.member.Load(); m != nil {
		return m.Addr(id)
	}
	return "", false
}

// start opens the store (a store that cannot be reached is an error
// naming --store) and returns the run's replica wiring; nil without
// --store.
func (o *replicaOpts) start(ctx context.Context) (*replicaRun, error) {
	if o.store == "" {
		return nil, nil
	}
	st, err := store.OpenRedis(ctx, o.store, store.RedisOptions{Password: o.password, RootCAs: o.roots})
	if err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	names, err := replica.NewNames(o.id, o.key)
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("--replica-id: %w", err)
	}
	r := &replicaRun{st: st}
	r.rep = &proxy.Replicas{Names: names, Peers: r, NoForward: o.noForward}
	return r, nil
}

// join registers this replica once its listener serves.
func (r *replicaRun) join(ctx context.Context, o *replicaOpts, log *slog.Logger, m *metrics.Registry) error {
	mem, err := replica.Join(ctx, r.st, o.id, o.advertise, replica.MemberOptions{Logger: log})
	if err != nil {
		return fmt.Errorf("--store: %w", err)
	}
	r.member.Store(mem)
	c := r.rep.Counts()
	m.CountReplicas(metrics.ReplicaFuncs{Forwarded: c.Forwarded.Load, OwnerGone: c.OwnerGone.Load,
		LoopRefused: c.LoopRefused.Load, StoreLost: mem.Degraded, StoreLosses: mem.Losses, Members: mem.Count})
	log.Info("replica joined", slog.String("id", o.id), slog.String("advertise", o.advertise),
		slog.String("store", store.Redact(o.store)), slog.Int("members", mem.Count()))
	return nil
}

// leave takes this replica out of the membership set (SIGTERM: the
// others stop forwarding here). The store stays open for the shutdown
// (close).
func (r *replicaRun) leave(log *slog.Logger) {
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if m := r.member.Load(); m != nil {
		if err := m.Close(ctx); err != nil {
			log.Warn("could not leave the membership set (it expires with its TTL)", slog.Any("err", err))
		}
	}
}

// close closes the store, after the shutdown.
func (r *replicaRun) close() {
	if r != nil {
		_ = r.st.Close()
	}
}
