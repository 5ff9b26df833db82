package config

// Era modes of a stdio server (docs/design.md §24): with hosts of both
// protocol eras, 2026-07-28 hosts are served by a twin process of the
// server that speaks their era, or share the one legacy-era process.
const (
	ErasTwin   = "twin"   // a second process for 2026-07-28 hosts, started on their first call
	ErasShared = "shared" // one process; a 2026-07-28 host's calls take the bridge (the default)
)

// decodeEras reads "eras": "twin" or "shared"; twin reports the former.
func decodeEras(m member) (twin bool, err error) {
	s, err := decodeString(m)
	if err != nil {
		return false, err
	}
	switch s {
	case ErasTwin:
		return true, nil
	case ErasShared:
		return false, nil
	}
	return false, ruleError(m.path, "must be %q or %q, got %q", ErasTwin, ErasShared, s)
}
