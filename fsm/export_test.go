package fsm

// LooplabState is the underlying looplab FSM's view of the current state,
// so tests can check it never drifts from Machine.State.
func LooplabState(m *Machine) string { return m.lf.Current() }
