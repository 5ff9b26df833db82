package config

// inheritEnvKey is the server key that gives a stdio child all of
// mcpkeep's environment (docs/design.md §8): without it the child gets the
// base variables transport.BaseEnv keeps, plus its own "env".
const inheritEnvKey = "inheritEnv"

// decodeInheritEnv reads "inheritEnv": true | false.
func decodeInheritEnv(m member) (setting[bool], error) {
	v, err := decodeBool(m)
	return setting[bool]{v: v, path: m.path}, err
}

// checkInheritEnv rejects "inheritEnv" on a url server: only a spawned
// child has an environment to inherit.
func (p *parser) checkInheritEnv(s setting[bool], transport string) {
	if s.set() && transport == TransportHTTP {
		p.fail(ruleError(s.path, "only for stdio servers (with command)"))
	}
}
