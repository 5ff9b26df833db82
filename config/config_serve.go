package config

import "time"

// ServeWaitForReady is waitForReadyMs for `mcpkeep proxy` and `mcpkeep
// run` when the config does not write it (docs/design.md §6): a host's
// call made while its server restarts waits for it, bounded, instead of
// failing. A model that receives "not connected; try again shortly" often
// gives up on the tool; a person would rather wait a second. The library's
// own default stays fail-fast (the parser leaves WaitForReady 0): a
// program using Pool decides for itself.
const ServeWaitForReady = 10 * time.Second

// ForServing applies the serving commands' defaults to c: each server
// whose waitForReadyMs is not written (per server or at the top level)
// waits up to ServeWaitForReady; a written value, 0 (fail fast) included,
// stays. It returns c.
func (c *Config) ForServing() *Config {
	for i := range c.Servers {
		if s := &c.Servers[i]; !s.WaitForReadySet {
			s.WaitForReady = ServeWaitForReady
		}
	}
	return c
}
