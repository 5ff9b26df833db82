package config

// Era modes of a stdio server (docs/design.md §24): with hosts of both
// protocol eras, 2026-07-28 hosts are served by a twin process of the
// server that speaks their era, or share the one legacy-era process.
const (
	ErasTwin   = "twin"   // a second process for 2026-07-28 hosts, started on their first call (the default)
	ErasShared = "shared" // one process; a 2026-07-28 host's calls take the bridge
)

// decodeEras reads "eras": "twin" or "shared"; shared reports the latter.
func decodeEras(m member) (shared bool, err error) {
	s, err := decodeString(m)
	if err != nil {
		return false, err
	}
	switch s {
	case ErasTwin:
		return false, nil
	case ErasShared:
		return true, nil
	}
	return false, ruleError(m.path, "must be %q or %q, got %q", ErasTwin, ErasShared, s)
}
