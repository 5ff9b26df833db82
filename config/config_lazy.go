package config

// Start modes of a server (docs/design.md §20).
const (
	StartEager = "eager" // started with the proxy (the default)
	StartLazy  = "lazy"  // started by the first request that needs it, when its catalog is cached
)

// decodeStart reads "start": "eager" or "lazy"; lazy reports the latter.
func decodeStart(m member) (lazy bool, err error) {
	s, err := decodeString(m)
	if err != nil {
		return false, err
	}
	switch s {
	case StartEager:
		return false, nil
	case StartLazy:
		return true, nil
	}
	return false, ruleError(m.path, "must be %q or %q, got %q", StartEager, StartLazy, s)
}

// StartMode is the server's start mode as a config file writes it.
func (s Server) StartMode() string {
	if s.Lazy {
		return StartLazy
	}
	return StartEager
}
