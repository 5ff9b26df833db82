// Package faultsuite holds the transport fault suite (docs/design.md §8,
// §19): end-to-end tests, through the public API of mcpkeep and its
// transports, of what networks and processes do to a server's connection
// in real deployments. Each test stands up the fault for real (a reverse
// proxy that cuts streams, a gateway that redirects to another origin, a
// server whose body never ends, a rate-limiting server, a server whose
// lists carry a TTL, a stdio server that stops reading, mcpkeep as PID 1
// with wrapper servers, a server reading /dev/tty under a pty), checks the
// outcome docs/design.md promises, and that nothing leaks: goleak checks
// every test of the package, and the tests check for processes and file
// descriptors where the fault concerns them.
//
// The package has no code of its own; it runs in make test.
package faultsuite
