package config

import (
	"fmt"
	"log/slog"

	"github.com/mcpkeep/mcpkeep/oauth"
	"github.com/mcpkeep/mcpkeep/transport"
)

// Opener returns the transport of s: a transport.Stdio that spawns the
// command in its own process group, or a transport.HTTP for a url (signed
// in with the token in oauth.DefaultStore when s has "oauth"). logger
// receives the transport's debug output (a child's stderr lines, the
// teardown steps); nil discards.
func (s Server) Opener(logger *slog.Logger) (transport.Opener, error) {
	switch s.Transport {
	case TransportStdio:
		return &transport.Stdio{
			Command:    s.Command,
			Args:       append([]string(nil), s.Args...),
			Env:        cloneMap(s.Env),
			InheritEnv: s.InheritEnv,
			Dir:        s.Dir,
			Logger:     logger,
			Server:     s.Name,
		}, nil
	case TransportHTTP:
		h := &transport.HTTP{
			URL:     s.URL,
			Headers: cloneMap(s.Headers),
			Logger:  logger,
			Server:  s.Name,
			// Zero is the transport's default.
			ProbeInterval: s.Probe.Interval,
			ProbeTimeout:  s.Probe.Timeout,
			ProbeFailures: s.Probe.Failures,
		}
		if t, ok := s.Target(); ok {
			store, err := oauth.DefaultStore()
			if err != nil {
				return nil, fmt.Errorf("mcpkeep: server %q: %w", s.Name, err)
			}
			h.OAuth = oauth.NewHandler(oauth.HandlerOptions{Target: t, Store: store})
		}
		return h, nil
	}
	return nil, fmt.Errorf("mcpkeep: server %q: unknown transport %q", s.Name, s.Transport)
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
